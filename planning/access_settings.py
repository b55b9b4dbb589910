"""Installation-wide access settings: single sign-on, the shared Gateway, the access guard.

A plain value with no dependencies, so that planning.settings can hold it.
"""

from __future__ import annotations

from dataclasses import dataclass

GUARD_IMAGE_PLACEHOLDER = "registry.example.com/magicstick/access-guard:CHANGEME"


@dataclass(frozen=True)
class AccessSettings:
    """Installation-wide access settings (Pulumi config `magicstick:*`, documented in
    Pulumi.yaml). The defaults are example values on the public boundary (invariant 10)."""

    gateway_name: str = "magicstick"
    gateway_namespace: str = "ai-system"
    gateway_listener: str | None = None
    """The shared Gateway's listener (`sectionName`) the routes attach to; None: every listener."""
    dashboard_hosts: tuple[str, ...] = ()
    """The dashboard hosts of the callback routes; empty: `<prefix>.<local domain>` and `<prefix>.<domain>`."""
    dashboard_host_prefix: str = "dashboard"
    oidc_issuer: str = "https://auth.magicstick.example.com/realms/magicstick"
    oidc_client_id: str = "magicstick-apps"
    oidc_client_secret: str = "magicstick-oidc-client"
    """Name of the Secret (key `client-secret`) in the gateway namespace; only referenced."""
    oidc_scopes: tuple[str, ...] = ("openid", "profile", "email")
    oidc_jwks_uri: str | None = None
    """The issuer's key set; None: the Keycloak location under the issuer."""
    oidc_authorization_endpoint: str | None = None
    """The issuer's authorization endpoint; None: the Keycloak location under the issuer."""
    oidc_token_endpoint: str | None = None
    """The issuer's token endpoint; None: the Keycloak location under the issuer."""
    oidc_end_session_endpoint: str | None = None
    """The issuer's end session (logout) endpoint; None: the Keycloak location under the issuer."""
    roles_claim: str = "roles"
    groups_claim: str = "groups"
    subject_claim: str = "sub"
    guard_image: str = GUARD_IMAGE_PLACEHOLDER
    guard_service: str = "magicstick-access-guard"
    """The guard runs in the gateway namespace, beside the routes and policies that use it."""
    guard_port: int = 8080
    callback_timeout: str = "15s"

    def _under_issuer(self, endpoint: str) -> str:
        """Keycloak's location of an OpenID Connect endpoint under the issuer."""
        return f"{self.oidc_issuer.rstrip('/')}/protocol/openid-connect/{endpoint}"

    @property
    def jwks_uri(self) -> str:
        return self.oidc_jwks_uri or self._under_issuer("certs")

    @property
    def authorization_endpoint(self) -> str:
        return self.oidc_authorization_endpoint or self._under_issuer("auth")

    @property
    def token_endpoint(self) -> str:
        return self.oidc_token_endpoint or self._under_issuer("token")

    @property
    def end_session_endpoint(self) -> str:
        return self.oidc_end_session_endpoint or self._under_issuer("logout")

    def dashboard_hosts_for(self, *, domain: str, local_domain: str) -> tuple[str, ...]:
        """The dashboard hosts: as configured, else derived from the domains. Pure."""
        if self.dashboard_hosts:
            return self.dashboard_hosts
        return tuple(f"{self.dashboard_host_prefix}.{d}" for d in (local_domain, domain))
