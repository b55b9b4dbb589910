"""The issuer's signing keys: a JWKS fetched with PyJWT, cached under the guard's own policy.

Why PyJWT's `PyJWKClient` fetches and parses, and why the guard still owns the cache:

- The library does the parts that are easy to get subtly wrong: it refuses any scheme but
  http(s), follows no redirect, applies a timeout, and turns each JWK into a ready key object
  of the right algorithm (`PyJWK`), skipping keys it cannot use. Nothing else is needed from
  an HTTP client, so the guard carries no second one.
- The cache policy is the guard's security contract, so it is written here rather than left
  to the library's defaults, which changed across the releases the dependency range allows
  (older releases wipe the cached set when a refresh fails; later ones add a refresh
  cooldown). The client is therefore built with its own cache off, and this module states the
  policy:

  1. A key set is used for `lifetime` seconds after the fetch that produced it, never longer.
     Without a set that young, every token is refused (the caller answers 401).
  2. A token naming a key the fresh set lacks causes at most one refresh per
     `UNKNOWN_KEY_REFRESH_SECONDS` (key rotation), so forged key IDs cannot make the guard
     hammer the issuer.
  3. After a failed fetch, no fetch is tried for `RETRY_AFTER_FAILURE_SECONDS`: during an outage
     requests are refused at once instead of each waiting for the fetch timeout.
  4. A failed refresh never discards a set that is still young.
  5. One fetch at a time; requests whose key is in the fresh set never wait for it.
  6. A refresh that brings a key back unchanged (same ID, algorithm and public numbers) keeps
     the key object of the previous set, so a token verified by it stays trusted by the
     verified-token cache (`tokens.TokenVerifier.still_trusted`); a key whose material
     changed is a new object, and every token it verified is checked again.

Only RS256 and ES256 keys are kept.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import jwt

ALGORITHMS = ("RS256", "ES256")
UNKNOWN_KEY_REFRESH_SECONDS = 10.0
RETRY_AFTER_FAILURE_SECONDS = 1.0


class KeySetError(Exception):
    """The base of every reason no verification key is available."""


class KeysUnavailable(KeySetError):
    """No key set younger than the cache lifetime: the issuer's JWKS could not be fetched."""


class UnknownKey(KeySetError):
    """The fresh key set holds no usable key with the token's key ID."""


@dataclass(frozen=True)
class _Snapshot:
    keys: Mapping[str, jwt.PyJWK] = field(default_factory=dict)
    fetched_at: float | None = None


class KeySet:
    """The issuer's signing keys by key ID, cached for `lifetime` seconds. Thread-safe."""

    def __init__(
        self,
        *,
        uri: str,
        lifetime: float,
        timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = jwt.PyJWKClient(uri, cache_jwk_set=False, timeout=timeout)
        self._lifetime = lifetime
        self._timeout = timeout
        self._clock = clock
        self._fetch_lock = threading.Lock()
        self._snapshot = _Snapshot()
        """Replaced whole, never mutated: readers take it without the lock."""
        self._last_failure: float | None = None
        self.last_error: str | None = None
        """Why the last fetch failed, for the log; None after a success."""

    def signing_key(self, key_id: str) -> jwt.PyJWK:
        """The key for `key_id`, fetching the set when the policy allows.

        Raises KeysUnavailable (no fresh set) or UnknownKey (the fresh set lacks `key_id`).
        """
        key = self.fresh_key(key_id)
        if key is not None:
            return key
        if not self._fetch_lock.acquire(timeout=self._timeout + 1.0):
            return self._fresh_key_or_raise(key_id)
        try:
            key = self.fresh_key(key_id)
            if key is None and self._may_fetch(self._clock()):
                self.refresh()
        finally:
            self._fetch_lock.release()
        return self._fresh_key_or_raise(key_id)

    def refresh(self) -> bool:
        """Fetch the key set now; True when it succeeded. A failure keeps the current set."""
        try:
            fetched = self._client.get_jwk_set()
        except (jwt.PyJWTError, ValueError, OSError, http.client.HTTPException) as error:
            self._last_failure = self._clock()
            self.last_error = f"{type(error).__name__}: {error}"
            return False
        previous = self._snapshot.keys
        keys = {
            key.key_id: _kept(previous.get(key.key_id), key)
            for key in fetched.keys
            if key.key_id and key.public_key_use in ("sig", None) and key.algorithm_name in ALGORITHMS
        }
        self._snapshot = _Snapshot(keys=keys, fetched_at=self._clock())
        self._last_failure = None
        self.last_error = None
        return True

    def _is_fresh(self, snapshot: _Snapshot, now: float) -> bool:
        return snapshot.fetched_at is not None and now - snapshot.fetched_at <= self._lifetime

    def fresh_key(self, key_id: str) -> jwt.PyJWK | None:
        """The key for `key_id` in a set younger than the lifetime, or None. Never fetches nor waits."""
        snapshot = self._snapshot
        if not self._is_fresh(snapshot, self._clock()):
            return None
        return snapshot.keys.get(key_id)

    def _fresh_key_or_raise(self, key_id: str) -> jwt.PyJWK:
        snapshot = self._snapshot
        if not self._is_fresh(snapshot, self._clock()):
            raise KeysUnavailable(self.last_error or "no key set fetched within the cache lifetime")
        key = snapshot.keys.get(key_id)
        if key is None:
            raise UnknownKey(f"no usable key with ID {key_id!r}")
        return key

    def _may_fetch(self, now: float) -> bool:
        if self._last_failure is not None and now - self._last_failure < RETRY_AFTER_FAILURE_SECONDS:
            return False
        fetched_at = self._snapshot.fetched_at
        if fetched_at is None or now - fetched_at > self._lifetime:
            return True
        return now - fetched_at >= UNKNOWN_KEY_REFRESH_SECONDS


def _kept(previous: jwt.PyJWK | None, fetched: jwt.PyJWK) -> jwt.PyJWK:
    """`previous` when `fetched` is the same key (policy 6), else `fetched`."""
    if previous is None or previous.algorithm_name != fetched.algorithm_name:
        return fetched
    same: bool = previous.key.public_numbers() == fetched.key.public_numbers()
    return previous if same else fetched
