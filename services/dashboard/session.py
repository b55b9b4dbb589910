"""The signed-in user of one request: the ID token Envoy forwards, verified, as an Identity.

Envoy's OIDC filter on the shared Gateway signs the user in and forwards the ID token in
`--token-header`; the dashboard verifies it as the access guard does (services.oidc: issuer,
audience, signature by the issuer's current keys, expiry) on every request, and trusts
nothing else: a request without exactly one valid token is answered 401.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import HTTPConnection

from services.dashboard.identity import Identity, IdentityRefused, identity_of
from services.dashboard.settings import DashboardSettings
from services.oidc.tokens import TokenRejected
from services.oidc.verification import CachingVerifier, Overloaded


@dataclass(frozen=True)
class SignIn:
    settings: DashboardSettings
    verifier: CachingVerifier

    async def identity(self, connection: HTTPConnection) -> Identity:
        """The verified identity of `connection`. Raises IdentityRefused (401, 403 or 503)."""
        tokens = connection.headers.getlist(self.settings.token_header)
        if len(tokens) != 1 or not tokens[0].strip():
            raise IdentityRefused(
                401, "missing-token", f"{len(tokens)} {self.settings.token_header} headers; sign in through the Gateway"
            )
        try:
            claims = await self.verifier.claims(tokens[0].strip())
        except Overloaded as error:
            raise IdentityRefused(503, "overloaded", str(error)) from error
        except TokenRejected as rejected:
            raise IdentityRefused(401, str(rejected.rejection), rejected.detail) from rejected
        return identity_of(claims, names=self.settings.claims, user_prefix=self.settings.user_prefix)
