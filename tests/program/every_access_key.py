"""One value for every access key, in config form and as the AccessSettings it gives."""

from __future__ import annotations

from planning.access_settings import AccessSettings

CONFIG = {
    "oidcIssuer": "https://auth.example.com/realms/magicstick",
    "oidcClientId": "stick",
    "oidcClientSecretName": "stick-oidc",
    "oidcScopes": '["openid","groups"]',
    "oidcJwksUri": "https://auth.example.com/keys",
    "oidcAuthorizationEndpoint": "https://auth.example.com/authorize",
    "oidcTokenEndpoint": "https://auth.example.com/token",
    "oidcEndSessionEndpoint": "https://auth.example.com/logout",
    "rolesClaim": "realm_access.roles",
    "groupsClaim": "teams",
    "subjectClaim": "email",
    "gatewayName": "edge",
    "gatewayNamespace": "gateway-system",
    "gatewayListener": "https",
    "dashboardHosts": "dashboard.example.local,dashboard.example.com",
    "guardImage": "registry.example.com/magicstick/access-guard:1.0.0",
}
"""Each key as `pulumi config` holds it (a list as JSON, or comma-separated)."""

SETTINGS = AccessSettings(
    oidc_issuer="https://auth.example.com/realms/magicstick",
    oidc_client_id="stick",
    oidc_client_secret="stick-oidc",
    oidc_scopes=("openid", "groups"),
    oidc_jwks_uri="https://auth.example.com/keys",
    oidc_authorization_endpoint="https://auth.example.com/authorize",
    oidc_token_endpoint="https://auth.example.com/token",
    oidc_end_session_endpoint="https://auth.example.com/logout",
    roles_claim="realm_access.roles",
    groups_claim="teams",
    subject_claim="email",
    gateway_name="edge",
    gateway_namespace="gateway-system",
    gateway_listener="https",
    dashboard_hosts=("dashboard.example.local", "dashboard.example.com"),
    guard_image="registry.example.com/magicstick/access-guard:1.0.0",
)
"""What CONFIG gives."""
