"""ID token verification with PyJWT: RS256 or ES256, the issuer's key, issuer, audience, time.

Order: the token's shape and its header's algorithm and key ID are checked before any key is
looked up, so an unsigned (`alg: none`) or foreign-algorithm token never reaches the key set
and never causes a fetch. Then PyJWT checks the signature with the key of that ID (whose
algorithm must be the header's), `exp` (required), `nbf` and `iat` when present, `iss` and
`aud`, with a 30-second leeway for clock skew.

A verified token is returned with the key that verified it and its `exp`, so that a cache can
trust it again without the signature check while `still_trusted` holds: the same fresh key
is in the key set and `exp` has not passed (with the same leeway). `nbf` and `iat` need no
second look: once in the past, they stay there.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt

from services.oidc.keys import ALGORITHMS, KeySet, KeysUnavailable, UnknownKey

LEEWAY_SECONDS = 30
MAX_TOKEN_BYTES = 16 * 1024


class Rejection(enum.StrEnum):
    """Why a token was refused; each one answers 401."""

    MALFORMED = "malformed-token"
    UNSUPPORTED_ALGORITHM = "unsupported-algorithm"
    KEYS_UNAVAILABLE = "keys-unavailable"
    UNKNOWN_KEY = "unknown-key"
    BAD_SIGNATURE = "bad-signature"
    EXPIRED = "expired"
    NOT_YET_VALID = "not-yet-valid"
    WRONG_ISSUER = "wrong-issuer"
    WRONG_AUDIENCE = "wrong-audience"
    MISSING_CLAIM = "missing-claim"
    INVALID = "invalid-token"


@dataclass(frozen=True)
class VerifiedToken:
    claims: Mapping[str, Any]
    key: jwt.PyJWK
    """The key that verified the signature (the key set's own object)."""
    expires_at: int
    """`exp`, as PyJWT read it (an integer of seconds since the epoch)."""


class WouldWait(Exception):
    """The token's key is not in the fresh key set: verifying it may wait for a key set fetch."""


class TokenRejected(Exception):
    def __init__(self, rejection: Rejection, detail: str) -> None:
        super().__init__(f"{rejection}: {detail}")
        self.rejection = rejection
        self.detail = detail


_ERRORS: tuple[tuple[type[jwt.PyJWTError], Rejection], ...] = (
    (jwt.ExpiredSignatureError, Rejection.EXPIRED),
    (jwt.ImmatureSignatureError, Rejection.NOT_YET_VALID),
    (jwt.InvalidIssuerError, Rejection.WRONG_ISSUER),
    (jwt.InvalidAudienceError, Rejection.WRONG_AUDIENCE),
    (jwt.MissingRequiredClaimError, Rejection.MISSING_CLAIM),
    (jwt.InvalidAlgorithmError, Rejection.UNSUPPORTED_ALGORITHM),
    (jwt.InvalidSignatureError, Rejection.BAD_SIGNATURE),
    (jwt.DecodeError, Rejection.MALFORMED),
)
"""PyJWT's errors, most specific first (InvalidSignatureError is a DecodeError)."""


class TokenVerifier:
    def __init__(self, *, keys: KeySet, issuer: str, audience: str) -> None:
        self._keys = keys
        self._issuer = issuer
        self._audience = audience

    def verify(self, token: str, *, may_wait: bool = True) -> VerifiedToken:
        """The verified claims of `token`. Raises TokenRejected. Thread-safe.

        With `may_wait`, it may wait for a key set fetch (up to the fetch timeout); without, it
        raises WouldWait instead of looking beyond the fresh key set.
        """
        if len(token) > MAX_TOKEN_BYTES or token.count(".") != 2:
            raise TokenRejected(Rejection.MALFORMED, "not a compact JWS of three parts within 16 KiB")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as error:
            raise TokenRejected(Rejection.MALFORMED, str(error)) from error
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise TokenRejected(
                Rejection.UNSUPPORTED_ALGORITHM, f"algorithm {algorithm!r} is not one of {list(ALGORITHMS)}"
            )
        key_id = header.get("kid")
        if not isinstance(key_id, str) or not key_id:
            raise TokenRejected(Rejection.MALFORMED, "the header names no key ID (kid)")
        key = self._key(key_id) if may_wait else self._keys.fresh_key(key_id)
        if key is None:
            raise WouldWait(f"key {key_id!r} is not in a fresh key set")
        if key.algorithm_name != algorithm:
            raise TokenRejected(
                Rejection.UNSUPPORTED_ALGORITHM,
                f"key {key_id!r} is for {key.algorithm_name}, the token says {algorithm}",
            )
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                issuer=self._issuer,
                audience=self._audience,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as error:
            raise TokenRejected(_rejection(error), str(error)) from error
        return VerifiedToken(claims=claims, key=key, expires_at=int(claims["exp"]))

    def still_trusted(self, verified: VerifiedToken, *, now: float) -> bool:
        """Whether `verified` would pass `verify` again at `now` (seconds since the epoch), without
        checking its signature: `exp` not passed (PyJWT's rule and leeway), and the fresh key set
        still holds the very key that verified it (not expired, not rotated out). Never fetches."""
        if verified.expires_at <= now - LEEWAY_SECONDS:
            return False
        key_id = verified.key.key_id
        return key_id is not None and self._keys.fresh_key(key_id) is verified.key

    def _key(self, key_id: str) -> jwt.PyJWK:
        try:
            return self._keys.signing_key(key_id)
        except KeysUnavailable as error:
            raise TokenRejected(Rejection.KEYS_UNAVAILABLE, str(error)) from error
        except UnknownKey as error:
            raise TokenRejected(Rejection.UNKNOWN_KEY, str(error)) from error


def _rejection(error: jwt.PyJWTError) -> Rejection:
    for kind, rejection in _ERRORS:
        if isinstance(error, kind):
            return rejection
    return Rejection.INVALID
