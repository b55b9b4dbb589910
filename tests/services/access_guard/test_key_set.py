"""The key set's cache policy with the clock passed in: a fresh set serves without a fetch, an
expired one is refetched, a failed fetch is retried only after RETRY_AFTER_FAILURE_SECONDS, an
unknown key ID refreshes at most every UNKNOWN_KEY_REFRESH_SECONDS. The issuer is the real
JWKS double over loopback HTTP; only time is played."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.oidc.keys import (
    RETRY_AFTER_FAILURE_SECONDS,
    UNKNOWN_KEY_REFRESH_SECONDS,
    KeySet,
    KeysUnavailable,
    UnknownKey,
)
from tests.services.access_guard.issuer import RSA_KID, IssuerKeys, JwksServer, serving

LIFETIME = 60.0


class Clock:
    """Monotonic seconds the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def own_jwks(keys: IssuerKeys) -> Iterator[JwksServer]:
    yield from serving(keys)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def key_set(own_jwks: JwksServer, clock: Clock) -> KeySet:
    return KeySet(uri=own_jwks.uri, lifetime=LIFETIME, timeout=2.0, clock=clock)


def test_a_fresh_set_serves_every_key_from_one_fetch(key_set: KeySet, own_jwks: JwksServer, clock: Clock):
    for _ in range(5):
        assert key_set.signing_key(RSA_KID).key_id == RSA_KID
        clock.advance(LIFETIME / 10)
    assert own_jwks.fetches == 1


def test_an_expired_set_is_refetched(key_set: KeySet, own_jwks: JwksServer, clock: Clock):
    key_set.signing_key(RSA_KID)
    clock.advance(LIFETIME + 1)
    key_set.signing_key(RSA_KID)
    assert own_jwks.fetches == 2


def test_an_expired_set_is_unavailable_while_the_issuer_is_down(key_set: KeySet, own_jwks: JwksServer, clock: Clock):
    key_set.signing_key(RSA_KID)
    own_jwks.stop()
    clock.advance(LIFETIME + 1)
    with pytest.raises(KeysUnavailable):
        key_set.signing_key(RSA_KID)
    assert key_set.last_error


def test_a_failed_fetch_is_retried_only_after_the_retry_delay(key_set: KeySet, own_jwks: JwksServer, clock: Clock):
    own_jwks.stop()
    with pytest.raises(KeysUnavailable):
        key_set.signing_key(RSA_KID)
    own_jwks.start()
    clock.advance(RETRY_AFTER_FAILURE_SECONDS / 2)
    with pytest.raises(KeysUnavailable):
        key_set.signing_key(RSA_KID)
    assert own_jwks.fetches == 0
    clock.advance(RETRY_AFTER_FAILURE_SECONDS)
    assert key_set.signing_key(RSA_KID).key_id == RSA_KID
    assert own_jwks.fetches == 1


def test_an_unknown_key_id_refreshes_the_set_at_most_once_per_refresh_interval(
    key_set: KeySet, own_jwks: JwksServer, clock: Clock
):
    key_set.signing_key(RSA_KID)
    clock.advance(UNKNOWN_KEY_REFRESH_SECONDS)
    for serial in range(5):
        with pytest.raises(UnknownKey):
            key_set.signing_key(f"rotated-{serial}")
    assert own_jwks.fetches == 2
    clock.advance(UNKNOWN_KEY_REFRESH_SECONDS)
    with pytest.raises(UnknownKey):
        key_set.signing_key("rotated-again")
    assert own_jwks.fetches == 3
