"""Which instances the guard knows: grants, paths, `authentication: none`, and live updates."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from planning.access_settings import AccessSettings
from planning.instances.guard import grant_document
from tests.services.access_guard.checks import IDENTITY_HEADERS, bearer, check_path, logged_reasons, raw_status
from tests.services.access_guard.conftest import OwnGuard
from tests.services.access_guard.issuer import IssuerKeys
from tests.services.access_guard.process import GuardProcess
from tests.services.access_guard.volume import SYSTEM_NAMESPACE, ConfigMapVolume, file_name, grant


def _with(name: str, **changes: Any) -> dict[str, Any]:
    """The grant of `name` with keys changed (a None value removes the key)."""
    document = grant(name)
    for key, value in changes.items():
        if value is None:
            del document[key]
        else:
            document[key] = value
    return document


MALFORMED: list[tuple[str, Callable[[str], dict[str, Any] | str]]] = [
    ("not-json", lambda instance: "{not json"),
    ("a-json-array", lambda instance: "[]"),
    ("empty", lambda instance: ""),
    ("another-instance", lambda instance: _with(instance, instance="ai-system/someone-else")),
    ("another-namespace", lambda instance: _with(instance, instance=f"other-system/{instance}")),
    ("no-instance", lambda instance: _with(instance, instance=None)),
    ("an-unknown-key", lambda instance: _with(instance, allowedMethods=["GET"])),
    ("an-unknown-authentication", lambda instance: _with(instance, authentication="maybe")),
    ("no-authentication", lambda instance: _with(instance, authentication=None)),
    ("an-unknown-role", lambda instance: _with(instance, minimumRole="root")),
    ("no-minimum-role", lambda instance: _with(instance, minimumRole=None)),
    ("an-unknown-sharing-mode", lambda instance: _with(instance, sharing={"mode": "some"})),
    ("users-that-are-not-strings", lambda instance: _with(instance, sharing={"mode": "selected", "users": [1]})),
    ("users-with-mode-all", lambda instance: _with(instance, sharing={"mode": "all", "users": ["alice"]})),
    ("no-sharing", lambda instance: _with(instance, sharing=None)),
    ("no-claims", lambda instance: _with(instance, claims=None)),
    ("claims-missing-groups", lambda instance: _with(instance, claims={"subject": "sub", "roles": "roles"})),
    (
        "a-claim-name-not-a-string",
        lambda instance: _with(instance, claims={"subject": "sub", "roles": 3, "groups": "groups"}),
    ),
    (
        "none-with-a-selected-sharing",
        lambda instance: _with(instance, authentication="none", sharing={"mode": "selected", "users": ["alice"]}),
    ),
]


@pytest.mark.parametrize("document", [make for _, make in MALFORMED], ids=[name for name, _ in MALFORMED])
def test_a_malformed_grant_denies_every_request(
    guard: GuardProcess,
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
    document: Callable[[str], dict[str, Any] | str],
) -> None:
    instance = new_instance()
    volume.put(instance, document(instance))
    assert client.get(check_path(instance), headers=bearer(keys.token(roles=["admin"]))).status_code == 403
    assert logged_reasons(guard, instance) == ["malformed-grant"]


def test_an_unreadable_grant_file_denies(
    guard: GuardProcess,
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
) -> None:
    instance = new_instance()
    os.mkdir(volume.root / file_name(instance))
    assert client.get(check_path(instance), headers=bearer(keys.token(roles=["admin"]))).status_code == 403
    assert logged_reasons(guard, instance) == ["malformed-grant"]


def test_an_instance_without_a_grant_is_forbidden(
    guard: GuardProcess, client: httpx.Client, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    assert client.get(check_path(instance), headers=bearer(keys.token(roles=["admin"]))).status_code == 403
    assert logged_reasons(guard, instance) == ["unknown-instance"]


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/v1/chat/completions",
        "/instances",
        "/instances/",
        "/instances/ai-system",
        "/instances/ai-system/",
        "/instances//{instance}/",
        "/instance/ai-system/{instance}/",
        "/INSTANCES/ai-system/{instance}/",
        "/instances/AI-SYSTEM/{instance}/",
        "/instances/ai-system/{instance_upper}/",
        "/instances/ai-system/../ai-system/{instance}/",
        "/instances/ai-system/%2e%2e/{instance}/",
        "/instances/ai-system/{instance}%2F../",
        "/instances/ai.system/{instance}/",
        "/prefix/instances/ai-system/{instance}/",
        "*",
    ],
)
def test_a_path_that_names_no_instance_with_a_grant_is_forbidden(
    guard: GuardProcess,
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
    path: str,
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance, minimum_role="viewer"))
    headers = bearer(keys.token(roles=["admin"]))
    assert client.get(check_path(instance), headers=headers).status_code == 200
    target = path.format(instance=instance, instance_upper=instance.upper())
    assert raw_status(guard, target, headers) == 403


@pytest.mark.parametrize(
    "original",
    ["/", "", "?q=1", "/a/b?x=/instances/ai-system/other", "/%2e%2e/admin"],
    ids=["root", "none", "query", "nested", "encoded-dots"],
)
def test_every_original_path_of_a_granted_instance_is_decided_by_its_grant(
    guard: GuardProcess, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str], original: str
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance, minimum_role="operator"))
    for roles, status in ((["operator"], 200), (["user"], 403)):
        assert raw_status(guard, check_path(instance, original), bearer(keys.token(roles=roles))) == status


@pytest.mark.parametrize(
    "headers",
    [{}, {"X-Magicstick-Id-Token": "not-a-jwt"}],
    ids=["without-a-token", "with-an-invalid-token"],
)
def test_authentication_none_allows_with_empty_identity_headers_so_a_client_cannot_claim_one(
    client: httpx.Client, volume: ConfigMapVolume, new_instance: Callable[[], str], headers: dict[str, str]
) -> None:
    instance = new_instance()
    volume.put(instance, _with(instance, authentication="none"))
    answer = client.get(check_path(instance), headers={**headers, "X-Magicstick-User": "admin"})
    assert answer.status_code == 200
    assert {name: answer.headers.get(name) for name in IDENTITY_HEADERS} == {name: "" for name in IDENTITY_HEADERS}


def test_authentication_none_needs_no_role_sharing_or_claims(
    client: httpx.Client, volume: ConfigMapVolume, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    volume.put(instance, {"instance": f"ai-system/{instance}", "authentication": "none"})
    assert client.get(check_path(instance)).status_code == 200


def _dangle(volume: ConfigMapVolume, instance: str) -> None:
    link = volume.root / file_name(instance)
    volume.remove(instance)
    link.symlink_to(os.path.join("..data", file_name(instance)))


def _plain_file_removed(volume: ConfigMapVolume, instance: str) -> None:
    (volume.root / file_name(instance)).unlink()


REMOVALS: list[tuple[str, Callable[[ConfigMapVolume, str], None], bool]] = [
    ("removed-by-the-kubelet-swap", lambda volume, instance: volume.remove(instance), False),
    ("symlink-dangling-after-the-swap", _dangle, False),
    ("plain-file-removed", _plain_file_removed, True),
    ("corrupted", lambda volume, instance: volume.put(instance, "{"), False),
]


@pytest.mark.parametrize(
    ("change", "plain"), [(change, plain) for _, change, plain in REMOVALS], ids=[name for name, _, _ in REMOVALS]
)
def test_a_grant_removed_or_corrupted_while_running_denies_the_next_request(
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
    change: Callable[[ConfigMapVolume, str], None],
    plain: bool,
) -> None:
    instance = new_instance()
    if plain:
        (volume.root / file_name(instance)).write_text(json.dumps(grant(instance)), encoding="utf-8")
    else:
        volume.put(instance, grant(instance))
    headers = bearer(keys.token())
    assert client.get(check_path(instance), headers=headers).status_code == 200
    change(volume, instance)
    assert client.get(check_path(instance), headers=headers).status_code == 403


def test_a_grant_raised_from_user_to_admin_denies_a_user_on_the_next_request(
    client: httpx.Client, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance, minimum_role="user"))
    user, admin = bearer(keys.token(roles=["user"])), bearer(keys.token(roles=["admin"]))
    assert client.get(check_path(instance), headers=user).status_code == 200
    volume.put(instance, grant(instance, minimum_role="admin"))
    assert client.get(check_path(instance), headers=user).status_code == 403
    assert client.get(check_path(instance), headers=admin).status_code == 200


def test_a_plain_grant_file_replaced_atomically_takes_effect_on_the_next_request(
    client: httpx.Client, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    path = volume.root / file_name(instance)
    path.write_text(json.dumps(grant(instance, minimum_role="user")), encoding="utf-8")
    user = bearer(keys.token(roles=["user"]))
    assert client.get(check_path(instance), headers=user).status_code == 200
    replacement = volume.root / f".{file_name(instance)}.tmp"
    replacement.write_text(json.dumps(grant(instance, minimum_role="admin")), encoding="utf-8")
    os.replace(replacement, path)
    assert client.get(check_path(instance), headers=user).status_code == 403


def test_a_grant_added_while_running_allows_on_the_next_request(
    client: httpx.Client, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    headers = bearer(keys.token())
    assert client.get(check_path(instance), headers=headers).status_code == 403
    volume.put(instance, grant(instance))
    assert client.get(check_path(instance), headers=headers).status_code == 200


def _warnings_about(guard: GuardProcess, name: str) -> list[str]:
    return [line for line in guard.log_text().splitlines() if " WARNING " in line and f"grant file {name} " in line]


def test_a_malformed_grant_is_named_on_healthz_which_stays_200_until_it_is_fixed(
    own_guard: Callable[..., OwnGuard],
) -> None:
    guard = own_guard()
    guard.volume.put("good-app", grant("good-app"))
    guard.volume.put("bad-app", _with("bad-app", minimumRole="root"))
    with guard.process.client() as client:
        broken = client.get("/healthz")
        guard.volume.put("bad-app", grant("bad-app"))
        fixed = client.get("/healthz")
    assert broken.status_code == 200
    assert broken.text == (
        "ok\nunusable grant file ai-system.bad-app.json: minimumRole 'root' is not one of ['admin', 'operator', 'user', 'viewer']\n"
    )
    assert (fixed.status_code, fixed.text) == (200, "ok\n")


def test_healthz_names_a_stray_file_that_is_no_grant(own_guard: Callable[..., OwnGuard]) -> None:
    guard = own_guard()
    (guard.volume.root / "Not A Grant.json").write_text("{}", encoding="utf-8")
    with guard.process.client() as client:
        answer = client.get("/healthz")
    assert (answer.status_code, answer.text) == (
        200,
        "ok\nunusable grant file Not A Grant.json: not named <namespace>.<instance>.json\n",
    )


def test_a_malformed_grant_is_logged_once_per_change_naming_the_file_and_the_problem(
    guard: GuardProcess,
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
) -> None:
    instance = new_instance()
    name = file_name(instance)
    headers = bearer(keys.token())
    volume.put(instance, "{not json")
    assert [client.get(check_path(instance), headers=headers).status_code for _ in range(3)] == [403] * 3
    assert client.get("/healthz").status_code == 200
    first = _warnings_about(guard, name)
    volume.put(instance, _with(instance, sharing={"mode": "some"}))
    assert [client.get(check_path(instance), headers=headers).status_code for _ in range(2)] == [403] * 2
    second = _warnings_about(guard, name)
    volume.put(instance, grant(instance))
    assert client.get(check_path(instance), headers=headers).status_code == 200
    assert len(first) == 1
    assert first[0].endswith(
        f"grant file {name} is unusable, every request of its instance is denied until it is fixed: "
        "not UTF-8 JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    )
    assert len(second) == 2
    assert second[1].endswith(": sharing mode 'some' is neither 'all' nor 'selected'")
    assert f"grant file {name} is usable again" in guard.log_text()


GRANT_CASES = {
    "sso-user-shared-with-all": ({}, dict(authentication="sso", role="user", sharing_mode=None, users=(), groups=())),
    "no-authentication": (
        {"authentication": "none"},
        dict(authentication="none", role="user", sharing_mode=None, users=(), groups=()),
    ),
    "admin-only": (
        {"minimum_role": "admin"},
        dict(authentication="sso", role="admin", sharing_mode=None, users=(), groups=()),
    ),
    "a-selection": (
        {"sharing": {"mode": "selected", "users": ["user-a"], "groups": ["group-b"]}},
        dict(authentication="sso", role="user", sharing_mode="selected", users=("user-a",), groups=("group-b",)),
    ),
    "an-empty-selection": (
        {"sharing": {"mode": "selected", "users": [], "groups": []}},
        dict(authentication="sso", role="user", sharing_mode="selected", users=(), groups=()),
    ),
}


@pytest.mark.parametrize("case", sorted(GRANT_CASES))
def test_the_grants_these_tests_publish_are_the_documents_the_program_writes(case):
    options, program = GRANT_CASES[case]
    written = grant_document(
        system_namespace=SYSTEM_NAMESPACE, instance="openclaw-default", settings=AccessSettings(), **program
    )
    assert grant("openclaw-default", **options) == json.loads(written)
