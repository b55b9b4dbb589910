"""The verified-token cache and the verification pool (services.oidc.verification).

The verifier is the real one, over the real key set fetched from the JWKS double on loopback;
time is passed in where it matters. A verification is observed by counting calls of the
verifier's public `verify`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import httpx
import pytest

from services.oidc.keys import KeySet
from services.oidc.tokens import LEEWAY_SECONDS, Rejection, TokenRejected, TokenVerifier, VerifiedToken
from services.oidc.verification import CachingVerifier, Overloaded, TokenCache, token_digest
from tests.services.access_guard.checks import bearer, check_path
from tests.services.access_guard.issuer import AUDIENCE, ISSUER, RSA_KID, IssuerKeys, JwksServer, serving
from tests.services.access_guard.volume import ConfigMapVolume, grant

T = TypeVar("T")
LIFETIME = 60.0


class Clock:
    """Seconds the test moves by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class CountingVerifier(TokenVerifier):
    """The real verifier, counting the verifications that reached a verdict (an attempt that
    would have waited for a key set fetch is none)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.verifications = 0

    def verify(self, token: str, *, may_wait: bool = True) -> VerifiedToken:
        try:
            verified = super().verify(token, may_wait=may_wait)
        except TokenRejected:
            self.verifications += 1
            raise
        self.verifications += 1
        return verified


class HeldPoolVerifier(CountingVerifier):
    """Holds each verification on the pool until `attempts` inline attempts were made: no key set
    fetch can finish while requests are still arriving, however the threads are scheduled."""

    def __init__(self, *, attempts: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._attempts = attempts
        self._inline = 0
        self._all_in = threading.Event()

    def verify(self, token: str, *, may_wait: bool = True) -> VerifiedToken:
        if may_wait:
            assert self._all_in.wait(timeout=30), f"only {self._inline} of {self._attempts} requests arrived"
        else:
            self._inline += 1
            if self._inline >= self._attempts:
                self._all_in.set()
        return super().verify(token, may_wait=may_wait)


@pytest.fixture
def own_jwks(keys: IssuerKeys) -> Iterator[JwksServer]:
    yield from serving(keys)


@pytest.fixture
def key_clock() -> Clock:
    return Clock(1000.0)


@pytest.fixture
def key_set(own_jwks: JwksServer, key_clock: Clock) -> KeySet:
    return KeySet(uri=own_jwks.uri, lifetime=LIFETIME, timeout=2.0, clock=key_clock)


@pytest.fixture
def verifier(key_set: KeySet) -> CountingVerifier:
    return CountingVerifier(keys=key_set, issuer=ISSUER, audience=AUDIENCE)


@pytest.fixture
def cache_clock() -> Clock:
    return Clock(time.time())


def _caching(
    verifier: TokenVerifier, clock: Clock, *, size: int = 16, workers: int = 2, queue: int = 16
) -> CachingVerifier:
    return CachingVerifier(verifier=verifier, cache_size=size, workers=workers, queue=queue, clock=clock)


def _run(work: Callable[[CachingVerifier], Coroutine[Any, Any, T]], caching: CachingVerifier) -> T:
    try:
        with asyncio.Runner(loop_factory=asyncio.new_event_loop) as runner:  # leaves the thread's current loop alone
            return runner.run(work(caching))
    finally:
        caching.close()


def test_a_token_verified_once_is_answered_from_the_cache_afterwards(
    verifier: CountingVerifier, cache_clock: Clock, keys: IssuerKeys
) -> None:
    token = keys.token()

    async def three_times(caching: CachingVerifier) -> list[str]:
        return [(await caching.claims(token))["sub"] for _ in range(3)]

    assert _run(three_times, _caching(verifier, cache_clock)) == ["alice"] * 3
    assert verifier.verifications == 1


def test_requests_carrying_one_new_token_at_once_share_one_verification_while_the_key_set_is_fetched(
    verifier: CountingVerifier, cache_clock: Clock, keys: IssuerKeys
) -> None:
    token = keys.token()

    async def fifty_at_once(caching: CachingVerifier) -> list[Any]:
        return await asyncio.gather(*(caching.claims(token) for _ in range(50)))

    assert len(_run(fifty_at_once, _caching(verifier, cache_clock))) == 50
    assert verifier.verifications == 1


class HeldVerifier(CountingVerifier):
    """Holds a verification on the pool after it has fetched the key set, until released."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fetched = threading.Event()
        self.release = threading.Event()

    def verify(self, token: str, *, may_wait: bool = True) -> VerifiedToken:
        verified = super().verify(token, may_wait=may_wait)
        if may_wait:
            self.fetched.set()
            self.release.wait(10)
        return verified


def test_a_request_arriving_after_the_pool_fetched_the_keys_joins_the_pending_verification(
    key_set: KeySet, cache_clock: Clock, keys: IssuerKeys
) -> None:
    held = HeldVerifier(keys=key_set, issuer=ISSUER, audience=AUDIENCE)
    token = keys.token()

    async def second_after_the_fetch(caching: CachingVerifier) -> list[Any]:
        first = asyncio.ensure_future(caching.claims(token))
        await asyncio.sleep(0)  # a turn of the loop: the first request hands its token to the pool
        assert await asyncio.to_thread(held.fetched.wait, 10)
        second = asyncio.ensure_future(caching.claims(token))
        await asyncio.sleep(0)
        held.release.set()
        return await asyncio.gather(first, second)

    assert len(_run(second_after_the_fetch, _caching(held, cache_clock))) == 2
    assert held.verifications == 1


def test_a_rejected_token_is_never_cached(verifier: CountingVerifier, cache_clock: Clock, keys: IssuerKeys) -> None:
    forged = keys.token(key=keys.rogue, kid=RSA_KID)

    async def twice(caching: CachingVerifier) -> list[Rejection]:
        rejections = []
        for _ in range(2):
            with pytest.raises(TokenRejected) as rejected:
                await caching.claims(forged)
            rejections.append(rejected.value.rejection)
        return rejections

    assert _run(twice, _caching(verifier, cache_clock)) == [Rejection.BAD_SIGNATURE] * 2
    assert verifier.verifications == 2


def test_a_cached_token_past_its_expiry_is_verified_again(
    verifier: CountingVerifier, cache_clock: Clock, keys: IssuerKeys
) -> None:
    expires = int(time.time()) + 300
    token = keys.token(exp=expires)

    async def before_and_after_expiry(caching: CachingVerifier) -> None:
        await caching.claims(token)
        cache_clock.now = expires + LEEWAY_SECONDS - 1
        await caching.claims(token)
        assert verifier.verifications == 1
        cache_clock.now = expires + LEEWAY_SECONDS
        await caching.claims(token)

    _run(before_and_after_expiry, _caching(verifier, cache_clock))
    assert verifier.verifications == 2


def test_still_trusted_follows_pyjwts_expiry_rule_with_its_leeway(verifier: CountingVerifier, keys: IssuerKeys) -> None:
    expires = int(time.time()) + 300
    verified = verifier.verify(keys.token(exp=expires))
    assert verifier.still_trusted(verified, now=expires + LEEWAY_SECONDS - 0.001)
    assert not verifier.still_trusted(verified, now=expires + LEEWAY_SECONDS)


def test_a_cached_token_is_verified_again_and_refused_once_its_key_is_rotated_out(
    verifier: CountingVerifier, key_set: KeySet, own_jwks: JwksServer, cache_clock: Clock, keys: IssuerKeys
) -> None:
    token = keys.token()

    async def across_a_rotation(caching: CachingVerifier) -> Rejection:
        await caching.claims(token)
        own_jwks.publish(IssuerKeys())
        assert key_set.refresh()
        with pytest.raises(TokenRejected) as rejected:
            await caching.claims(token)
        return rejected.value.rejection

    assert _run(across_a_rotation, _caching(verifier, cache_clock)) == Rejection.BAD_SIGNATURE
    assert verifier.verifications == 2


def test_a_refresh_that_brings_the_same_keys_keeps_cached_tokens_trusted(
    verifier: CountingVerifier, key_set: KeySet, key_clock: Clock, cache_clock: Clock, keys: IssuerKeys
) -> None:
    token = keys.token()

    async def across_a_refresh(caching: CachingVerifier) -> None:
        await caching.claims(token)
        key_clock.now += LIFETIME + 1
        assert key_set.refresh()
        await caching.claims(token)

    _run(across_a_refresh, _caching(verifier, cache_clock))
    assert verifier.verifications == 1


def test_a_cached_token_is_refused_once_the_key_set_is_older_than_its_lifetime_and_the_issuer_is_down(
    verifier: CountingVerifier, own_jwks: JwksServer, key_clock: Clock, cache_clock: Clock, keys: IssuerKeys
) -> None:
    token = keys.token()

    async def across_an_outage(caching: CachingVerifier) -> Rejection:
        await caching.claims(token)
        own_jwks.stop()
        key_clock.now += LIFETIME + 1
        with pytest.raises(TokenRejected) as rejected:
            await caching.claims(token)
        return rejected.value.rejection

    assert _run(across_an_outage, _caching(verifier, cache_clock)) == Rejection.KEYS_UNAVAILABLE


def test_new_tokens_under_a_fresh_key_set_are_verified_at_once_and_never_refused_as_overloaded(
    verifier: CountingVerifier, key_set: KeySet, cache_clock: Clock, keys: IssuerKeys
) -> None:
    assert key_set.refresh()
    tokens = [keys.token(sub=f"user-{serial}") for serial in range(5)]

    async def five_at_once(caching: CachingVerifier) -> list[str]:
        return [claims["sub"] for claims in await asyncio.gather(*(caching.claims(token) for token in tokens))]

    assert _run(five_at_once, _caching(verifier, cache_clock, workers=1, queue=1)) == [
        f"user-{serial}" for serial in range(5)
    ]
    assert verifier.verifications == 5


def test_tokens_that_may_wait_for_a_fetch_beyond_the_queue_are_refused_as_overloaded_at_once(
    key_set: KeySet, cache_clock: Clock, keys: IssuerKeys
) -> None:
    tokens = [keys.token(sub=f"user-{serial}") for serial in range(5)]
    verifier = HeldPoolVerifier(keys=key_set, issuer=ISSUER, audience=AUDIENCE, attempts=len(tokens))

    async def five_at_once(caching: CachingVerifier) -> list[str]:
        outcomes = await asyncio.gather(*(caching.claims(token) for token in tokens), return_exceptions=True)
        return ["overloaded" if isinstance(outcome, Overloaded) else outcome["sub"] for outcome in outcomes]

    outcomes = _run(five_at_once, _caching(verifier, cache_clock, workers=1, queue=2))
    assert outcomes == ["user-0", "user-1", "overloaded", "overloaded", "overloaded"]
    assert verifier.verifications == 2


def test_the_cache_keeps_at_most_its_size_and_evicts_the_least_recently_used(
    verifier: CountingVerifier, keys: IssuerKeys
) -> None:
    verified = {name: verifier.verify(keys.token(sub=name)) for name in ("a", "b", "c")}
    cache = TokenCache(capacity=2)
    cache.put(token_digest("a"), verified["a"])
    cache.put(token_digest("b"), verified["b"])
    assert cache.get(token_digest("a")) is verified["a"]
    cache.put(token_digest("c"), verified["c"])
    assert len(cache) == 2
    assert cache.get(token_digest("b")) is None
    assert cache.get(token_digest("a")) is verified["a"]
    assert cache.get(token_digest("c")) is verified["c"]


def test_a_cached_token_is_decided_by_the_grant_as_it_is_on_the_next_request(
    client: httpx.Client, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance, sharing={"mode": "selected", "users": ["alice"]}))
    headers = bearer(keys.token(sub="alice"))
    assert [client.get(check_path(instance), headers=headers).status_code for _ in range(2)] == [200, 200]
    volume.put(instance, grant(instance, sharing={"mode": "selected", "users": ["bob"]}))
    assert client.get(check_path(instance), headers=headers).status_code == 403
