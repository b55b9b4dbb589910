"""Which identities can travel to the instance in X-Magicstick-User and X-Magicstick-Groups
(row 10 of the decision table): printable ASCII without surrounding spaces, groups non-empty
and without a comma. Pure tests of `authorize`, then the same refusal through the guard.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from services.access_guard.decision import GROUPS_HEADER, USER_HEADER, Reason, authorize
from services.access_guard.grants import ClaimNames, Grant
from tests.services.access_guard.checks import IDENTITY_HEADERS, bearer, check_path, logged_reasons
from tests.services.access_guard.issuer import IssuerKeys
from tests.services.access_guard.process import GuardProcess
from tests.services.access_guard.volume import ConfigMapVolume, grant

SSO = Grant(
    instance="ai-system/identity-app",
    authentication="sso",
    minimum_role="user",
    sharing_mode="all",
    claims=ClaimNames(subject="sub", roles="roles", groups="groups"),
)


def _claims(**overrides: Any) -> dict[str, Any]:
    return {"sub": "user-a", "roles": ["user"], "groups": ["team-a"]} | overrides


REFUSED_SUBJECTS = [
    ("a-leading-space", " user-a"),
    ("a-trailing-space", "user-a "),
    ("only-a-space", " "),
    ("a-leading-tab", "\tuser-a"),
    ("a-tab-inside", "user\ta"),
    ("a-line-break", "user-a\r\nX-Magicstick-Role: admin"),
    ("a-nul", "user\x00a"),
    ("a-delete", "user-a\x7f"),
    ("a-non-ascii-letter", "usér-a"),
    ("a-non-breaking-space", "user\u00a0a"),
]

REFUSED_GROUPS = [
    ("an-empty-group", ["team-a", ""]),
    ("a-leading-space", [" team-a"]),
    ("a-trailing-space", ["team-a "]),
    ("only-a-space", [" "]),
    ("a-comma", ["team-a,admins"]),
    ("a-line-break", ["team-a\nadmins"]),
    ("a-non-ascii-letter", ["équipe"]),
]

ALLOWED = [
    ("a-space-inside-the-subject", {"sub": "user a"}, "user a", "team-a"),
    ("every-printable-edge-character", {"sub": "!user~"}, "!user~", "team-a"),
    ("one-character", {"sub": "u", "groups": ["t"]}, "u", "t"),
    ("a-space-inside-a-group", {"groups": ["team a", "/team-b"]}, "user-a", "team a,/team-b"),
    ("no-groups", {"groups": []}, "user-a", ""),
]


@pytest.mark.parametrize(
    "subject", [subject for _, subject in REFUSED_SUBJECTS], ids=[name for name, _ in REFUSED_SUBJECTS]
)
def test_a_subject_that_cannot_travel_unchanged_in_a_header_is_refused(subject: str) -> None:
    decision = authorize(SSO, _claims(sub=subject))
    assert (decision.status, decision.reason, decision.headers) == (403, Reason.UNREPRESENTABLE_IDENTITY, ())


@pytest.mark.parametrize("groups", [groups for _, groups in REFUSED_GROUPS], ids=[name for name, _ in REFUSED_GROUPS])
def test_a_group_that_cannot_travel_unchanged_in_a_header_is_refused(groups: list[str]) -> None:
    decision = authorize(SSO, _claims(groups=groups))
    assert (decision.status, decision.reason, decision.headers) == (403, Reason.UNREPRESENTABLE_IDENTITY, ())


@pytest.mark.parametrize(
    ("claims", "user", "groups"),
    [(claims, user, groups) for _, claims, user, groups in ALLOWED],
    ids=[name for name, *_ in ALLOWED],
)
def test_an_identity_of_printable_ascii_without_surrounding_spaces_is_sent_as_it_is(
    claims: dict[str, Any], user: str, groups: str
) -> None:
    decision = authorize(SSO, _claims(**claims))
    assert decision.status == 200
    assert dict(decision.headers)[USER_HEADER] == user
    assert dict(decision.headers)[GROUPS_HEADER] == groups


def test_an_empty_subject_is_a_missing_subject_not_an_anonymous_user() -> None:
    decision = authorize(SSO, _claims(sub=""))
    assert (decision.status, decision.reason) == (401, Reason.MISSING_SUBJECT)


def test_an_unrepresentable_subject_is_refused_before_its_role_or_sharing_is_looked_at() -> None:
    selected = Grant(
        instance=SSO.instance,
        authentication="sso",
        minimum_role="admin",
        sharing_mode="selected",
        users=frozenset({" user-a"}),
        claims=SSO.claims,
    )
    decision = authorize(selected, _claims(sub=" user-a", roles=["admin"]))
    assert decision.reason == Reason.UNREPRESENTABLE_IDENTITY


@pytest.mark.parametrize(
    "claims",
    [{"sub": " user-a"}, {"sub": " "}, {"groups": ["team-a", ""]}, {"groups": ["team-a "]}],
    ids=["a-subject-with-a-leading-space", "a-subject-of-one-space", "an-empty-group", "a-group-with-a-trailing-space"],
)
def test_the_guard_refuses_an_unrepresentable_identity_with_its_reason_and_no_identity_headers(
    guard: GuardProcess,
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
    claims: dict[str, Any],
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance))
    answer = client.get(check_path(instance), headers=bearer(keys.token(**claims)))
    assert answer.status_code == 403
    assert not set(IDENTITY_HEADERS) & set(answer.headers)
    assert logged_reasons(guard, instance) == ["unrepresentable-identity"]
