"""Who the dashboard acts as: the roles claim, the impersonated user and groups, the refusals."""

from __future__ import annotations

import pytest

from services.dashboard.identity import ROLE_GROUPS, IdentityRefused, identity_of
from services.dashboard.settings import ClaimNames
from services.oidc.claims import ROLES

NAMES = ClaimNames()


def test_every_role_has_its_kubernetes_group() -> None:
    assert set(ROLE_GROUPS) == set(ROLES)


def test_the_highest_role_wins_and_every_group_below_it_is_impersonated() -> None:
    identity = identity_of(
        {"sub": "alice", "roles": ["viewer", "operator"], "groups": ["team-a"]}, names=NAMES, user_prefix="oidc:"
    )
    assert identity.role == "operator"
    assert identity.kubernetes_user == "oidc:alice"
    assert identity.kubernetes_groups == ("magicstick:operators", "magicstick:users", "magicstick:viewers")
    assert identity.groups == ("team-a",)


def test_the_tokens_own_groups_are_never_impersonated() -> None:
    identity = identity_of(
        {"sub": "alice", "roles": ["viewer"], "groups": ["magicstick:administrators"]}, names=NAMES, user_prefix="oidc:"
    )
    assert identity.kubernetes_groups == ("magicstick:viewers",)


def test_a_nested_roles_claim_is_read_by_its_dotted_name() -> None:
    names = ClaimNames(roles="realm_access.roles")
    identity = identity_of({"sub": "alice", "realm_access": {"roles": ["admin"]}}, names=names, user_prefix="oidc:")
    assert identity.is_admin


@pytest.mark.parametrize(
    ("claims", "status", "reason"),
    [
        ({"roles": ["admin"]}, 401, "missing-subject"),
        ({"sub": "", "roles": ["admin"]}, 401, "missing-subject"),
        ({"sub": "alice", "roles": "admin"}, 403, "malformed-identity"),
        ({"sub": " alice", "roles": ["admin"]}, 403, "unrepresentable-identity"),
        ({"sub": "alice", "roles": ["admin"], "groups": ["a,b"]}, 403, "unrepresentable-identity"),
        ({"sub": "alice", "roles": ["superuser"]}, 403, "no-role"),
    ],
)
def test_an_identity_that_cannot_be_acted_as_is_refused(claims: dict[str, object], status: int, reason: str) -> None:
    with pytest.raises(IdentityRefused) as refused:
        identity_of(claims, names=NAMES, user_prefix="oidc:")
    assert (refused.value.status, refused.value.reason) == (status, reason)
