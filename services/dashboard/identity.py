"""Who is signed in, and whom the dashboard impersonates for them.

Rules:

- The identity comes from the verified ID token alone (services.oidc): the subject claim must
  be a non-empty string (else 401), the roles and groups claims lists of strings when present
  (else 403), and the subject and groups must travel in a header as they are
  (services.oidc.claims.unrepresentable; else 403).
- The dashboard role is the highest of ROLES the token holds; a token with none is refused
  (403): the dashboard has nothing to show to someone without a role.
- Requests to the API server impersonate the user `<prefix><subject>` in the Kubernetes groups
  of the role held and of every role below it (ROLE_GROUPS). The token's own groups are not
  forwarded: the API server's RBAC decides on the role groups only, and the dashboard's
  ServiceAccount may impersonate those four groups and no other.
- The sign-in session is the token's `sid` claim when it holds a string (Keycloak's does):
  the pages' form tokens are bound to it (protection.py), never the API server's decisions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services.dashboard.settings import ClaimNames
from services.oidc.claims import ROLES, claim, string_list, unrepresentable

ROLE_GROUPS: Mapping[str, str] = {
    "admin": "magicstick:administrators",
    "operator": "magicstick:operators",
    "user": "magicstick:users",
    "viewer": "magicstick:viewers",
}
"""The Kubernetes group each dashboard role maps to (deploy/rbac-administrators.yaml binds them)."""
SESSION_CLAIM = "sid"


class IdentityRefused(Exception):
    def __init__(self, status: int, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.status = status
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Identity:
    subject: str
    role: str
    """The highest dashboard role held."""
    groups: tuple[str, ...]
    """The token's own groups (stable IDs), shown on the page and offered in sharing forms."""
    kubernetes_user: str
    kubernetes_groups: tuple[str, ...]
    session: str | None = field(default=None, compare=False)
    """The sign-in session (the `sid` claim), when the issuer names one."""

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def at_least(self, role: str) -> bool:
        return ROLES.index(self.role) <= ROLES.index(role)


def identity_of(claims: Mapping[str, Any], *, names: ClaimNames, user_prefix: str) -> Identity:
    """The identity of verified `claims`. Raises IdentityRefused. Pure."""
    subject = claim(claims, names.subject)
    if not isinstance(subject, str) or not subject:
        raise IdentityRefused(401, "missing-subject", f"claim {names.subject!r} is not a non-empty string")
    roles = string_list(claim(claims, names.roles))
    groups = string_list(claim(claims, names.groups))
    if roles is None or groups is None:
        raise IdentityRefused(
            403, "malformed-identity", f"claim {names.roles!r} or {names.groups!r} is not a list of strings"
        )
    problem = unrepresentable(subject=subject, groups=groups)
    if problem is not None:
        raise IdentityRefused(403, "unrepresentable-identity", problem)
    held = [role for role in ROLES if role in roles]
    if not held:
        raise IdentityRefused(
            403, "no-role", f"the token holds none of the roles {', '.join(ROLES)} in claim {names.roles!r}"
        )
    role = held[0]
    inherited = ROLES[ROLES.index(role) :]
    session = claims.get(SESSION_CLAIM)
    return Identity(
        subject=subject,
        role=role,
        groups=groups,
        kubernetes_user=user_prefix + subject,
        kubernetes_groups=tuple(ROLE_GROUPS[each] for each in inherited),
        session=session if isinstance(session, str) and session else None,
    )
