"""A local OIDC issuer the tests control: signing keys, a JWKS endpoint, minted ID tokens.

The issuer's name is an example URL; only the key set is served, on loopback, by a small
HTTP server that can be stopped (connections are then refused, as in an outage) and started
again on the same port.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

ISSUER = "https://auth.example.com/realms/magicstick"
AUDIENCE = "magicstick-apps"
JWKS_PATH = "/protocol/openid-connect/certs"
RSA_KID = "rsa-1"
EC_KID = "ec-1"
ROGUE_KID = "rogue-1"
_UNSET: Any = object()


@dataclass(frozen=True)
class IssuerKeys:
    """The issuer's RSA and EC keys, plus a rogue RSA key that no key set publishes."""

    rsa: RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048))
    ec: EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    rogue: RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048))

    def jwks(self) -> dict[str, Any]:
        rsa_jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.rsa.public_key(), as_dict=True)
        ec_jwk = jwt.algorithms.ECAlgorithm.to_jwk(self.ec.public_key(), as_dict=True)
        return {
            "keys": [
                {**rsa_jwk, "kid": RSA_KID, "use": "sig", "alg": "RS256"},
                {**ec_jwk, "kid": EC_KID, "use": "sig", "alg": "ES256"},
            ]
        }

    def claims(self, **overrides: Any) -> dict[str, Any]:
        """Valid ID token claims for `alice` holding `user`, with `overrides` applied."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "alice",
            "iat": now,
            "exp": now + 300,
            "roles": ["user"],
            "groups": [],
        }
        claims.update(overrides)
        return claims

    def token(
        self,
        *,
        algorithm: str = "RS256",
        kid: str | None = _UNSET,
        key: Any = None,
        drop: tuple[str, ...] = (),
        **claims: Any,
    ) -> str:
        """An ID token signed with the issuer's key for `algorithm` unless `key` is given."""
        payload = {name: value for name, value in self.claims(**claims).items() if name not in drop}
        signing_key = key if key is not None else (self.ec if algorithm.startswith("ES") else self.rsa)
        if kid is _UNSET:
            kid = EC_KID if algorithm.startswith("ES") else RSA_KID
        headers = {"kid": kid} if kid is not None else {}
        return jwt.encode(payload, signing_key, algorithm=algorithm, headers=headers)

    def unsigned_token(self, **claims: Any) -> str:
        """`alg: none` with the issuer's key ID and an empty signature."""
        return f"{_segment({'alg': 'none', 'typ': 'JWT', 'kid': RSA_KID})}.{_segment(self.claims(**claims))}."

    def hmac_with_public_key_token(self, **claims: Any) -> str:
        """HS256 keyed with the public RSA key's PEM: the classic algorithm confusion."""
        public_pem = self.rsa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        signing_input = f"{_segment({'alg': 'HS256', 'typ': 'JWT', 'kid': RSA_KID})}.{_segment(self.claims(**claims))}"
        signature = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(signature)}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _segment(value: dict[str, Any]) -> str:
    return _b64(json.dumps(value, separators=(",", ":")).encode())


class JwksServer:
    """The issuer's key set over HTTP on loopback; `stop` refuses connections until `start`."""

    def __init__(self, keys: IssuerKeys) -> None:
        self._body = json.dumps(keys.jwks()).encode()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.fetches = 0

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{JWKS_PATH}"

    def publish(self, keys: IssuerKeys) -> None:
        """Serve the key set of `keys` from now on, under the same key IDs: a key rotation."""
        self._body = json.dumps(keys.jwks()).encode()

    def start(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != JWKS_PATH:
                    self.send_error(404)
                    return
                owner.fetches += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(owner._body)))
                self.end_headers()
                self.wfile.write(owner._body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


def serving(keys: IssuerKeys) -> Iterator[JwksServer]:
    """A started JwksServer, stopped afterwards (a generator for fixtures and `contextlib`)."""
    server = JwksServer(keys)
    server.start()
    try:
        yield server
    finally:
        server.stop()
