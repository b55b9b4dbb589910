"""Verified tokens for the event loop: a bounded cache by SHA-256, and a bounded pool for the rest.

Rules:

- The cache holds tokens that passed `TokenVerifier.verify`, keyed by the SHA-256 of the
  token's text (the token itself is not kept), with their claims, `exp` and the key that
  verified them. Rejections are never cached: a forged token costs a verification every time
  and cannot take a place in the cache.
- A cached token is used only while `TokenVerifier.still_trusted` holds: `exp` not passed
  (with PyJWT's leeway) and the fresh key set still holding the very key that verified it.
  Otherwise the entry is dropped and the token verified again, which gives the exact
  rejection (`expired`, `keys-unavailable`, ...).
- A cache hit replaces the signature and claims verification only. The grant decision
  (`decision.authorize`) runs on every request, so a changed grant applies to a cached token
  from the next request on.
- At most `cache_size` entries; the least recently used goes first.
- A token not in the cache whose key is in the fresh key set is verified at once, on the
  event loop: that cannot wait for anything, and costs about 0.1 ms of CPU (a signature
  check). Handing it to a thread would cost more: PyJWT and cryptography hold the GIL while
  they verify, so threads add no parallelism, only hand-offs (measured on two cores: RS256
  on two threads took 93 µs a token against 79 µs on one; with a new token on every check
  at 500/s, the guard spent about 0.2 ms more CPU a check through the pool than inline, and
  its median latency grew from 0.55 to 0.8 ms).
- Any other token (an unknown key ID, or a key set older than its lifetime) may have to wait
  for a key set fetch, up to `--jwks-timeout-seconds`: it is verified on a pool of `workers`
  threads, never on the event loop. Requests carrying the same such token share one
  verification. At most `queue` distinct tokens are waiting for or in verification there; one
  more raises `Overloaded` at once (the server answers 503) rather than waiting in a longer
  queue. The key set's own policy (keys.KeySet) bounds how often a fetch happens at all.
- Used from the event loop's thread only, so the cache and the pending map take no lock;
  the pool's threads run `TokenVerifier.verify` alone.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from services.oidc.tokens import TokenRejected, TokenVerifier, VerifiedToken, WouldWait


class Overloaded(Exception):
    """Too many distinct tokens in verification; the request is answered 503 without waiting."""


def token_digest(token: str) -> bytes:
    """The cache key of `token`. Pure."""
    return hashlib.sha256(token.encode("utf-8")).digest()


class TokenCache:
    """Verified tokens by digest, at most `capacity`, least recently used evicted first. Not thread-safe."""

    def __init__(self, *, capacity: int) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[bytes, VerifiedToken] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, digest: bytes) -> VerifiedToken | None:
        verified = self._entries.get(digest)
        if verified is not None:
            self._entries.move_to_end(digest)
        return verified

    def put(self, digest: bytes, verified: VerifiedToken) -> None:
        self._entries[digest] = verified
        self._entries.move_to_end(digest)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def discard(self, digest: bytes) -> None:
        self._entries.pop(digest, None)


class CachingVerifier:
    """`TokenVerifier` behind the cache and the bounded pool. Event loop thread only."""

    def __init__(
        self,
        *,
        verifier: TokenVerifier,
        cache_size: int,
        workers: int,
        queue: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._verifier = verifier
        self._cache = TokenCache(capacity=cache_size)
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="verify")
        self._queue = queue
        self._pending: dict[bytes, asyncio.Future[VerifiedToken]] = {}
        self._clock = clock

    async def claims(self, token: str) -> Mapping[str, Any]:
        """The verified claims of `token`. Raises TokenRejected, or Overloaded when the pool is full."""
        digest = token_digest(token)
        cached = self._cache.get(digest)
        if cached is not None:
            if self._verifier.still_trusted(cached, now=self._clock()):
                return cached.claims
            self._cache.discard(digest)
        pending = self._pending.get(digest)
        if pending is not None:
            # Joined before any inline attempt: the pool may have fetched the key set already, and
            # verifying again here would do the work the pending verification is doing.
            return await self._joined(pending)
        try:
            verified = self._verifier.verify(token, may_wait=False)
        except WouldWait:
            return await self._joined(self._started_on_pool(digest, token))
        self._cache.put(digest, verified)
        return verified.claims

    def _started_on_pool(self, digest: bytes, token: str) -> asyncio.Future[VerifiedToken]:
        if len(self._pending) >= self._queue:
            raise Overloaded(f"{len(self._pending)} tokens in verification, the most --verify-queue allows")
        pending = asyncio.get_running_loop().run_in_executor(self._executor, self._verifier.verify, token)
        self._pending[digest] = pending
        pending.add_done_callback(functools.partial(self._settled, digest))
        return pending

    async def _joined(self, pending: asyncio.Future[VerifiedToken]) -> Mapping[str, Any]:
        try:
            verified = await asyncio.shield(pending)
        except TokenRejected as rejected:
            # Every request sharing the verification gets its own exception, not one growing traceback.
            raise TokenRejected(rejected.rejection, rejected.detail) from None
        return verified.claims

    def close(self) -> None:
        """Stop the pool: verifications not started are dropped; one in progress ends on its own."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _settled(self, digest: bytes, future: asyncio.Future[VerifiedToken]) -> None:
        del self._pending[digest]
        if not future.cancelled() and future.exception() is None:
            self._cache.put(digest, future.result())
