"""Who may reach an SSO instance: the role ladder and the sharing selection."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.services.access_guard.checks import GROUPS_HEADER, ROLE_HEADER, USER_HEADER, bearer, check_path
from tests.services.access_guard.issuer import IssuerKeys
from tests.services.access_guard.volume import ConfigMapVolume, grant

REACHES = {
    "admin": {"admin", "operator", "user", "viewer"},
    "operator": {"operator", "user", "viewer"},
    "user": {"user", "viewer"},
    "viewer": {"viewer"},
}
"""Held role -> every minimum role it satisfies: a higher role inherits each lower one."""
ROLES = tuple(REACHES)


@pytest.mark.parametrize("minimum", ROLES)
@pytest.mark.parametrize("held", ROLES)
def test_a_held_role_reaches_exactly_the_minimum_roles_at_or_below_it(
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
    held: str,
    minimum: str,
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance, minimum_role=minimum))
    answer = client.get(check_path(instance), headers=bearer(keys.token(roles=[held])))
    assert answer.status_code == (200 if minimum in REACHES[held] else 403)


@pytest.mark.parametrize(
    ("roles", "status", "role_header"),
    [
        (["viewer", "operator"], 200, "operator"),
        (["user", "admin", "viewer"], 200, "admin"),
        (["user", "superuser"], 200, "user"),
        ([], 403, None),
        (["superuser", "root"], 403, None),
        ("admin", 403, None),
        ([["admin"]], 403, None),
    ],
    ids=[
        "two-roles",
        "three-roles",
        "with-an-unknown-role",
        "none",
        "only-unknown-roles",
        "a-string-not-a-list",
        "a-nested-list",
    ],
)
def test_the_role_header_names_the_highest_role_held_and_an_unusable_roles_claim_denies(
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
    roles: object,
    status: int,
    role_header: str | None,
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance, minimum_role="viewer"))
    answer = client.get(check_path(instance), headers=bearer(keys.token(roles=roles)))
    assert answer.status_code == status
    assert answer.headers.get(ROLE_HEADER) == role_header


def test_a_token_without_a_roles_claim_is_denied(
    client: httpx.Client, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance, minimum_role="viewer"))
    assert client.get(check_path(instance), headers=bearer(keys.token(drop=("roles",)))).status_code == 403


def _selected(users: list[str], groups: list[str]) -> dict[str, object]:
    return {"mode": "selected", "users": users, "groups": groups}


@pytest.mark.parametrize(
    ("sharing", "subject", "groups", "roles", "status"),
    [
        ({"mode": "all"}, "bob", [], ["user"], 200),
        (_selected(["alice"], []), "alice", [], ["user"], 200),
        (_selected(["alice"], []), "bob", [], ["user"], 403),
        (_selected([], ["team-a"]), "bob", ["team-b", "team-a"], ["user"], 200),
        (_selected([], ["team-a"]), "bob", ["team-b"], ["user"], 403),
        (_selected([], ["team-a"]), "bob", [], ["user"], 403),
        (_selected(["alice"], ["team-a"]), "bob", ["team-a"], ["user"], 200),
        (_selected(["alice"], ["team-a"]), "carol", ["team-c"], ["user"], 403),
        (_selected([], []), "alice", ["team-a"], ["admin"], 403),
        ({"mode": "selected"}, "alice", ["team-a"], ["admin"], 403),
        (_selected(["alice"], ["team-a"]), "alice", ["team-a"], ["viewer"], 403),
    ],
    ids=[
        "all-shares-with-everyone",
        "a-selected-user",
        "a-user-not-selected",
        "a-member-of-a-selected-group",
        "a-member-of-another-group",
        "a-member-of-no-group",
        "a-group-member-beside-selected-users",
        "neither-selected-nor-in-a-selected-group",
        "an-empty-selection-denies-even-an-admin",
        "a-selection-without-lists-denies-everyone",
        "a-selected-user-still-needs-the-role",
    ],
)
def test_sharing_admits_selected_users_and_members_of_selected_groups_only(
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
    sharing: dict[str, object],
    subject: str,
    groups: list[str],
    roles: list[str],
    status: int,
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance, minimum_role="user", sharing=sharing))
    answer = client.get(check_path(instance), headers=bearer(keys.token(sub=subject, groups=groups, roles=roles)))
    assert answer.status_code == status


def test_an_allow_carries_the_subject_the_highest_role_and_the_groups(
    client: httpx.Client, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance, minimum_role="user", sharing=_selected([], ["team-b"])))
    token = keys.token(sub="9b1c0c1e-user-bob", roles=["user", "operator"], groups=["/team-a", "team-b"])
    answer = client.get(check_path(instance), headers=bearer(token))
    assert answer.status_code == 200
    assert (answer.headers[USER_HEADER], answer.headers[ROLE_HEADER], answer.headers[GROUPS_HEADER]) == (
        "9b1c0c1e-user-bob",
        "operator",
        "/team-a,team-b",
    )


def test_an_allow_without_groups_sends_an_empty_groups_header(
    client: httpx.Client, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance))
    answer = client.get(check_path(instance), headers=bearer(keys.token(drop=("groups",))))
    assert answer.status_code == 200
    assert answer.headers[GROUPS_HEADER] == ""


@pytest.mark.parametrize(
    ("claims", "status"),
    [
        ({"sub": "alice\r\nX-Magicstick-Role: admin"}, 403),
        ({"groups": ["team-a,admins"]}, 403),
        ({"groups": ["team-a", 7]}, 403),
        ({"groups": "team-a"}, 403),
        ({"sub": ""}, 401),
        ({"sub": 42}, 401),
    ],
    ids=[
        "a-subject-with-a-line-break",
        "a-group-with-a-comma",
        "a-group-that-is-no-string",
        "groups-not-a-list",
        "an-empty-subject",
        "a-numeric-subject",
    ],
)
def test_an_identity_that_cannot_travel_safely_in_a_header_is_denied(
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
    claims: dict[str, object],
    status: int,
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance))
    answer = client.get(check_path(instance), headers=bearer(keys.token(**claims)))
    assert answer.status_code == status
    assert USER_HEADER not in answer.headers


def test_claims_are_read_from_the_names_the_grant_gives_including_nested_ones(
    client: httpx.Client, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    document = grant(instance, minimum_role="operator")
    document["claims"] = {"subject": "preferred_username", "roles": "realm_access.roles", "groups": "memberships"}
    volume.put(instance, document)
    token = keys.token(
        preferred_username="alice@example.com",
        realm_access={"roles": ["operator"]},
        memberships=["team-a"],
        roles=["viewer"],
    )
    answer = client.get(check_path(instance), headers=bearer(token))
    assert answer.status_code == 200
    assert (answer.headers[USER_HEADER], answer.headers[ROLE_HEADER], answer.headers[GROUPS_HEADER]) == (
        "alice@example.com",
        "operator",
        "team-a",
    )
