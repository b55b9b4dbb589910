"""Which ID tokens the guard accepts for an SSO instance: 401 for every token it cannot trust."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from tests.services.access_guard.checks import IDENTITY_HEADERS, TOKEN_HEADER, bearer, check_path, logged_reasons
from tests.services.access_guard.issuer import AUDIENCE, EC_KID, ISSUER, ROGUE_KID, RSA_KID, IssuerKeys
from tests.services.access_guard.process import GuardProcess
from tests.services.access_guard.volume import ConfigMapVolume, grant

Mint = Callable[[IssuerKeys], str]
NOW = int(time.time())
"""Token times are relative to the session start; tokens live 300 s, far beyond a test run."""

ACCEPTED: list[tuple[str, Mint]] = [
    ("rs256", lambda keys: keys.token(algorithm="RS256")),
    ("es256", lambda keys: keys.token(algorithm="ES256")),
    ("expired-within-the-leeway", lambda keys: keys.token(exp=int(time.time()) - 10)),
    ("not-before-within-the-leeway", lambda keys: keys.token(nbf=int(time.time()) + 10)),
    ("an-audience-list-holding-the-client", lambda keys: keys.token(aud=["another-client", AUDIENCE])),
    ("without-iat", lambda keys: keys.token(drop=("iat",))),
]

REJECTED: list[tuple[str, str, Mint]] = [
    # (case, the reason the guard logs, the token)
    ("expired", "expired", lambda keys: keys.token(exp=int(time.time()) - 120)),
    ("not-yet-valid", "not-yet-valid", lambda keys: keys.token(nbf=int(time.time()) + 120)),
    ("issued-in-the-future", "not-yet-valid", lambda keys: keys.token(iat=int(time.time()) + 120)),
    ("without-exp", "missing-claim", lambda keys: keys.token(drop=("exp",))),
    ("a-foreign-issuer", "wrong-issuer", lambda keys: keys.token(iss="https://other.example.com/realms/magicstick")),
    ("an-issuer-with-a-trailing-slash", "wrong-issuer", lambda keys: keys.token(iss=ISSUER + "/")),
    ("without-issuer", "missing-claim", lambda keys: keys.token(drop=("iss",))),
    ("a-wrong-audience", "wrong-audience", lambda keys: keys.token(aud="another-client")),
    ("without-audience", "missing-claim", lambda keys: keys.token(drop=("aud",))),
    ("unsigned-alg-none", "unsupported-algorithm", lambda keys: keys.unsigned_token()),
    ("hs256-keyed-with-the-public-key", "unsupported-algorithm", lambda keys: keys.hmac_with_public_key_token()),
    ("rs384", "unsupported-algorithm", lambda keys: keys.token(algorithm="RS384", kid=RSA_KID)),
    ("signed-by-a-key-the-jwks-lacks", "unknown-key", lambda keys: keys.token(key=keys.rogue, kid=ROGUE_KID)),
    (
        "signed-by-another-key-under-a-published-key-id",
        "bad-signature",
        lambda keys: keys.token(key=keys.rogue, kid=RSA_KID),
    ),
    ("an-ec-key-id-on-an-rsa-token", "unsupported-algorithm", lambda keys: keys.token(algorithm="RS256", kid=EC_KID)),
    ("without-a-key-id", "malformed-token", lambda keys: keys.token(kid=None)),
    ("a-tampered-payload", "bad-signature", lambda keys: _tampered(keys.token(roles=["user"]))),
    ("not-a-jwt", "malformed-token", lambda keys: "not-a-jwt"),
    ("three-garbage-segments", "malformed-token", lambda keys: "abc.def.ghi"),
    ("a-bearer-prefix", "malformed-token", lambda keys: "Bearer " + keys.token()),
    ("oversized", "malformed-token", lambda keys: keys.token(padding="x" * 20_000)),
]


def _tampered(token: str) -> str:
    header, payload, signature = token.split(".")
    return ".".join((header, payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1], signature))


@pytest.fixture
def sso_instance(volume: ConfigMapVolume, new_instance: Callable[[], str]) -> str:
    instance = new_instance()
    volume.put(instance, grant(instance, minimum_role="viewer"))
    return instance


@pytest.mark.parametrize("mint", [mint for _, mint in ACCEPTED], ids=[name for name, _ in ACCEPTED])
def test_a_valid_token_of_the_issuer_is_accepted(
    client: httpx.Client, keys: IssuerKeys, sso_instance: str, mint: Mint
) -> None:
    assert client.get(check_path(sso_instance), headers=bearer(mint(keys))).status_code == 200


@pytest.mark.parametrize(
    ("reason", "mint"), [(reason, mint) for _, reason, mint in REJECTED], ids=[name for name, _, _ in REJECTED]
)
def test_a_token_that_cannot_be_trusted_is_unauthenticated_for_its_own_reason(
    guard: GuardProcess, client: httpx.Client, keys: IssuerKeys, sso_instance: str, reason: str, mint: Mint
) -> None:
    answer = client.get(check_path(sso_instance), headers=bearer(mint(keys)))
    assert answer.status_code == 401
    assert not set(IDENTITY_HEADERS) & set(answer.headers)
    assert logged_reasons(guard, sso_instance) == [reason]


@pytest.mark.parametrize(
    "headers",
    [[], [(TOKEN_HEADER, "")], [("Authorization", "Bearer x")], "twice"],
    ids=["no-header", "an-empty-header", "only-an-authorization-header", "the-header-twice"],
)
def test_a_request_without_exactly_one_token_header_is_unauthenticated(
    client: httpx.Client, keys: IssuerKeys, sso_instance: str, headers: list[tuple[str, str]] | str
) -> None:
    if headers == "twice":
        headers = [(TOKEN_HEADER, keys.token()), (TOKEN_HEADER, keys.token())]
    assert client.get(check_path(sso_instance), headers=headers).status_code == 401


def test_the_token_header_name_is_case_insensitive(client: httpx.Client, keys: IssuerKeys, sso_instance: str) -> None:
    assert client.get(check_path(sso_instance), headers={TOKEN_HEADER.lower(): keys.token()}).status_code == 200


def test_a_denial_is_logged_at_info_without_the_token(
    guard: GuardProcess, client: httpx.Client, keys: IssuerKeys, sso_instance: str
) -> None:
    token = keys.token(sub="logged-subject", roles=[])
    assert client.get(check_path(sso_instance), headers=bearer(token)).status_code == 403
    expired = keys.token(exp=NOW - 600)
    assert client.get(check_path(sso_instance), headers=bearer(expired)).status_code == 401
    log = guard.log_text()
    assert f"deny status=403 reason=insufficient-role instance=ai-system/{sso_instance} subject=logged-subject" in log
    assert f"deny status=401 reason=expired instance=ai-system/{sso_instance}" in log
    assert token not in log and expired not in log
    assert token.split(".")[2] not in log and expired.split(".")[1] not in log
