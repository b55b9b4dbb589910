"""The decision table: one request of an instance in, allow (200) or deny (401/403/503) out.

In the order a request meets them; the first that applies decides, and any error denies:

| # | Condition                                                             | Answer | Reason                      |
|---|-----------------------------------------------------------------------|--------|-----------------------------|
| 1 | path not `/instances/<namespace>/<instance>[/...]`                    | 403    | not-an-instance-path        |
| 2 | no grant file for the instance                                        | 403    | unknown-instance            |
| 3 | grant unreadable or malformed                                         | 403    | malformed-grant             |
| 4 | `authentication: none`                                                | 200    | unauthenticated-allowed     |
| 5 | no token header, an empty one, or more than one                       | 401    | missing-token               |
| 6 | the token is neither cached nor verifiable with the fresh key set,    | 503    | overloaded                  |
|   | and `--verify-queue` such tokens already wait for the pool            |        |                             |
| 7 | token malformed, unsigned, foreign algorithm, unknown key, bad        | 401    | the token's rejection       |
|   | signature, expired, not yet valid, foreign issuer, wrong audience,    |        | (tokens.Rejection)          |
|   | no `exp`; no key set younger than the cache lifetime                  |        |                             |
| 8 | the subject claim is missing or not a non-empty string                | 401    | missing-subject             |
| 9 | roles or groups claim present but not a list of strings               | 403    | malformed-identity          |
|10 | the subject or a group cannot travel in a header as it is (below)     | 403    | unrepresentable-identity    |
|11 | no held role at or above `minimumRole` (admin>operator>user>viewer)   | 403    | insufficient-role           |
|12 | sharing `selected` and neither the subject is a listed user nor one   | 403    | not-shared                  |
|   | of the token's groups a listed group (an empty selection: nobody)     |        |                             |
|13 | otherwise                                                             | 200    | allowed                     |

Row 10 is the rule of services.oidc.claims.unrepresentable: a name is refused rather than
altered when it cannot travel in a header as it is.

A verified-token cache (services.oidc.verification) may answer row 7 for a token seen
before; rows 8 to 13 are decided afresh on every request, from the grant as it is now.

An allow for SSO carries `X-Magicstick-User` (the subject), `X-Magicstick-Role` (the highest
role held) and `X-Magicstick-Groups` (the token's groups, comma-joined, possibly empty);
an allow for `authentication: none` carries the same three headers, empty: Envoy overwrites
the request's headers only with those the guard sends, so empty ones keep a client from
claiming an identity upstream of an instance without sign-in.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.access_guard.grants import Grant, GrantStore, MalformedGrant, UnknownInstance
from services.oidc.claims import ROLES, claim, string_list, unrepresentable
from services.oidc.tokens import TokenRejected
from services.oidc.verification import CachingVerifier, Overloaded

PATH_PREFIX = "/instances/"
USER_HEADER = "X-Magicstick-User"
ROLE_HEADER = "X-Magicstick-Role"
GROUPS_HEADER = "X-Magicstick-Groups"

ANONYMOUS_HEADERS: tuple[tuple[str, str], ...] = ((USER_HEADER, ""), (ROLE_HEADER, ""), (GROUPS_HEADER, ""))


class Reason(enum.StrEnum):
    """Why the guard decided as it did; token rejections add tokens.Rejection's values."""

    ALLOWED = "allowed"
    UNAUTHENTICATED_ALLOWED = "unauthenticated-allowed"
    NOT_AN_INSTANCE_PATH = "not-an-instance-path"
    UNKNOWN_INSTANCE = "unknown-instance"
    MALFORMED_GRANT = "malformed-grant"
    MISSING_TOKEN = "missing-token"
    MISSING_SUBJECT = "missing-subject"
    MALFORMED_IDENTITY = "malformed-identity"
    INSUFFICIENT_ROLE = "insufficient-role"
    NOT_SHARED = "not-shared"
    UNREPRESENTABLE_IDENTITY = "unrepresentable-identity"
    OVERLOADED = "overloaded"


@dataclass(frozen=True)
class Decision:
    status: int
    """200 allow, 401 no valid identity, 403 not allowed, 503 overloaded (try again)."""
    reason: str
    """A Reason or a tokens.Rejection value."""
    detail: str = ""
    """For the log only: never sent, never holds the token."""
    instance: str | None = None
    subject: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def allowed(self) -> bool:
        return self.status == 200


def instance_of(path: str) -> tuple[str, str] | None:
    """(`namespace`, `instance`) of a check path `/instances/<ns>/<instance>[/...|?...]`, or None. Pure."""
    if not path.startswith(PATH_PREFIX):
        return None
    rest = path[len(PATH_PREFIX) :]
    namespace, separator, rest = rest.partition("/")
    if not separator:
        return None
    end = len(rest)
    for mark in "/?":
        index = rest.find(mark)
        if index != -1:
            end = min(end, index)
    instance = rest[:end]
    if not namespace or not instance:
        return None
    return namespace, instance


def authorize(grant: Grant, claims: Mapping[str, Any]) -> Decision:
    """Rows 8 to 13 of the table, for an SSO grant and verified claims. Pure."""
    instance = grant.instance
    if grant.claims is None or grant.minimum_role is None:
        return Decision(403, Reason.MALFORMED_GRANT, "an SSO grant without claims or minimum role", instance)
    subject = claim(claims, grant.claims.subject)
    if not isinstance(subject, str) or not subject:
        return Decision(
            401, Reason.MISSING_SUBJECT, f"claim {grant.claims.subject!r} is not a non-empty string", instance
        )
    roles = string_list(claim(claims, grant.claims.roles))
    groups = string_list(claim(claims, grant.claims.groups))
    if roles is None or groups is None:
        return Decision(
            403, Reason.MALFORMED_IDENTITY, "the roles or groups claim is not a list of strings", instance, subject
        )
    problem = unrepresentable(subject=subject, groups=groups)
    if problem is not None:
        return Decision(403, Reason.UNREPRESENTABLE_IDENTITY, problem, instance, subject)
    held = [role for role in ROLES if role in roles]
    if not held or ROLES.index(held[0]) > ROLES.index(grant.minimum_role):
        return Decision(
            403,
            Reason.INSUFFICIENT_ROLE,
            f"holds {held or 'no role'}, needs {grant.minimum_role} or above",
            instance,
            subject,
        )
    if grant.sharing_mode == "selected" and subject not in grant.users and grant.groups.isdisjoint(groups):
        return Decision(403, Reason.NOT_SHARED, "neither a selected user nor in a selected group", instance, subject)
    headers = ((USER_HEADER, subject), (ROLE_HEADER, held[0]), (GROUPS_HEADER, ",".join(groups)))
    return Decision(200, Reason.ALLOWED, f"role {held[0]}", instance, subject, headers)


class Guard:
    """The whole table over the grant store and the caching verifier. Event loop thread only."""

    def __init__(self, *, grants: GrantStore, verifier: CachingVerifier) -> None:
        self._grants = grants
        self._verifier = verifier

    async def decide(self, *, path: str, tokens: Sequence[str]) -> Decision:
        """The decision for one check request: its target (path and query) and every value of the token header."""
        location = instance_of(path)
        if location is None:
            return Decision(403, Reason.NOT_AN_INSTANCE_PATH, "the path is not under /instances/<namespace>/<instance>")
        instance = "/".join(location)
        try:
            grant = self._grants.lookup(*location)
        except UnknownInstance as error:
            return Decision(403, Reason.UNKNOWN_INSTANCE, str(error), instance)
        except MalformedGrant as error:
            return Decision(403, Reason.MALFORMED_GRANT, str(error), instance)
        if grant.authentication == "none":
            return Decision(
                200, Reason.UNAUTHENTICATED_ALLOWED, "authentication none", instance, headers=ANONYMOUS_HEADERS
            )
        if len(tokens) != 1 or not tokens[0]:
            return Decision(401, Reason.MISSING_TOKEN, f"{len(tokens)} token headers", instance)
        try:
            claims = await self._verifier.claims(tokens[0].strip())
        except Overloaded as error:
            return Decision(503, Reason.OVERLOADED, str(error), instance)
        except TokenRejected as rejected:
            return Decision(401, rejected.rejection, rejected.detail, instance)
        return authorize(grant, claims)
