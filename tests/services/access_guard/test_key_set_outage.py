"""The issuer's key set going away, seen through a real guard process: a warm cached set keeps
verifying, and a guard with no set denies. How the cache expires and when a failed fetch is
retried depends on time passing: test_key_set.py plays that with the clock passed in.

Each test runs its own key set server (to stop it) and its own guard (for its cache lifetime).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.access_guard.checks import bearer, check_path, logged_reasons
from tests.services.access_guard.issuer import IssuerKeys, JwksServer, serving
from tests.services.access_guard.process import GuardProcess, start_guard
from tests.services.access_guard.volume import ConfigMapVolume, grant

INSTANCE = "outage-app"


@pytest.fixture
def own_jwks(keys: IssuerKeys) -> Iterator[JwksServer]:
    yield from serving(keys)


@pytest.fixture
def own_volume(tmp_path: Path) -> ConfigMapVolume:
    (tmp_path / "grants").mkdir()
    volume = ConfigMapVolume(tmp_path / "grants")
    volume.put(INSTANCE, grant(INSTANCE))
    return volume


def _guard(volume: ConfigMapVolume, jwks: JwksServer, tmp_path: Path, cache_seconds: float) -> Iterator[GuardProcess]:
    guard = start_guard(
        grants_dir=volume.root, jwks_uri=jwks.uri, log=tmp_path / "guard.log", cache_seconds=cache_seconds
    )
    yield guard
    guard.stop()


@pytest.fixture
def long_cache_guard(own_volume: ConfigMapVolume, own_jwks: JwksServer, tmp_path: Path) -> Iterator[GuardProcess]:
    yield from _guard(own_volume, own_jwks, tmp_path, cache_seconds=300)


def test_a_warm_key_set_keeps_verifying_while_the_issuer_is_down(
    long_cache_guard: GuardProcess, own_jwks: JwksServer, keys: IssuerKeys
) -> None:
    with long_cache_guard.client() as client:
        assert client.get(check_path(INSTANCE), headers=bearer(keys.token())).status_code == 200
        own_jwks.stop()
        for algorithm in ("RS256", "ES256", "RS256"):
            assert client.get(check_path(INSTANCE), headers=bearer(keys.token(algorithm=algorithm))).status_code == 200


def test_the_key_set_is_fetched_once_for_many_verifications(
    long_cache_guard: GuardProcess, own_jwks: JwksServer, keys: IssuerKeys
) -> None:
    with long_cache_guard.client() as client:
        for _ in range(20):
            assert client.get(check_path(INSTANCE), headers=bearer(keys.token())).status_code == 200
    assert own_jwks.fetches == 1


def test_an_unknown_key_id_refreshes_the_key_set_at_most_once_in_a_while(
    long_cache_guard: GuardProcess, own_jwks: JwksServer, keys: IssuerKeys
) -> None:
    with long_cache_guard.client() as client:
        for serial in range(10):
            assert (
                client.get(
                    check_path(INSTANCE), headers=bearer(keys.token(key=keys.rogue, kid=f"rotated-{serial}"))
                ).status_code
                == 401
            )
    assert own_jwks.fetches <= 2


def test_a_guard_started_during_an_outage_denies_with_keys_unavailable(
    own_volume: ConfigMapVolume, keys: IssuerKeys, tmp_path: Path
) -> None:
    jwks = JwksServer(keys)
    jwks.start()
    jwks.stop()
    guard = start_guard(grants_dir=own_volume.root, jwks_uri=jwks.uri, log=tmp_path / "guard.log")
    try:
        with guard.client() as client:
            assert client.get(check_path(INSTANCE), headers=bearer(keys.token())).status_code == 401
    finally:
        guard.stop()
    assert logged_reasons(guard, INSTANCE)[-1] == "keys-unavailable"
