"""The Gateway objects in front of one enabled AppInstance, built as plain values. Pure.

Rules, in the order a request meets them:

1. Deny by default. Every route of an instance is covered by its SecurityPolicy: the access
   guard always, plus OIDC login and role authorization for SSO. `authentication: none` drops
   only the login and the role check, never the guard, and every object then says so in an
   annotation.
2. Fail closed. A route carries its backendRefs only when `guard_ready`: the current policy is
   accepted (planning.readiness: the policy carries the planned spec hash in its annotation
   `appliance.magicstick.dev/spec-hash`, and every ancestor accepted its current generation).
   A rule without backendRefs makes Envoy answer with an error, never with the application;
   an unreachable guard answers with an error too (`failOpen: false`). Routes carry the hash
   of their own spec too, so the plan can tell a route that has its backend from one planned
   before the guard was accepted (planning.instances.reach).
3. Routes live in the gateway namespace. One ReferenceGrant in the instance namespace lets
   HTTPRoutes of that namespace reach exactly the instance's backend Service, nothing else.
4. Application routes (local, and public unless exposure is local) match every path and
   disable Envoy's total request timeout (`0s`) for long-lived streams. The callback route
   matches only the instance's exact callback path on the dashboard hosts and keeps a bounded
   timeout.

Decisions, and why:

- **One SecurityPolicy per instance**, targeting all its routes. Envoy Gateway attaches one
  SecurityPolicy to a route: when several target the same route, the oldest wins and the
  others are reported Conflicted. `mergeType` merges a route's policy only into a parent
  policy on the Gateway or a listener, never with a sibling on the same route. A separate
  guard policy would therefore either be rejected or silently displace OIDC. The callback
  route belongs to the same policy because the OIDC session cookies are named per policy.
- **The instance reaches the guard in the request path**: the check request goes to
  `/instances/<system namespace>/<instance>` followed by the original path. HTTP external
  authorization transmits no contextExtensions (only the gRPC CheckRequest carries them).
- **The redirect URL keeps the request's own host** (`https://%REQ(:authority)%<callback>`):
  the policy covers several hostnames (local, public, dashboard), and the OIDC CSRF cookie is
  bound to the host that started the login, so a fixed host would break every other one.
- **The JWT provider reads the ID token from a forwarded header**, not from the OIDC cookie.
  The schema allows `extractFrom.cookies`, but the cookies are encrypted unless
  `disableTokenEncryption` puts raw tokens in the browser. OIDC forwards the decrypted ID
  token in `ID_TOKEN_HEADER` and runs before JWT authentication in Envoy Gateway's filter
  chain; the signature, issuer and audience (the client ID) are still verified.
- **Logout has its own path beside the callback**, so an application's own `/logout` (the
  OIDC default) stays the application's.
- **The provider's endpoints are explicit** (authorization, token and end session, by default
  Keycloak's locations under the issuer), so the policy never depends on the identity provider
  being reachable when Envoy Gateway translates it: with only the issuer, Envoy Gateway fetches
  the discovery document at translation time, and a failed fetch makes the policy Invalid and
  every route of the instance fail closed. Given both the authorization and token endpoints,
  Envoy Gateway skips discovery and takes the end session endpoint as given (none if absent),
  so logout reaches the identity provider only because it is set too.

Risk, named: `%REQ(:authority)%` lets the redirect follow whatever host matched a route of
the instance; every such host is one the program derived, and the identity provider must
list their callback URLs as valid redirect URIs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from api import peer_kinds
from planning.access_settings import AccessSettings
from planning.instances.releases import INSTANCE_LABEL
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE
from planning.names import LABEL_VALUE_LIMIT, fit
from planning.objects import DesiredObject
from planning.readiness import SPEC_HASH_ANNOTATION, spec_hash

GATEWAY_GROUP = "gateway.networking.k8s.io"
HTTPROUTE_API_VERSION = peer_kinds.HTTP_ROUTE.api_version
REFERENCE_GRANT_API_VERSION = peer_kinds.REFERENCE_GRANT.api_version
SECURITY_POLICY_API_VERSION = peer_kinds.SECURITY_POLICY.api_version

INSTANCE_ANNOTATION = "appliance.magicstick.dev/app-instance"
"""`<system namespace>/<AppInstance name>` of the instance an object serves."""
UNAUTHENTICATED_ANNOTATION = "appliance.magicstick.dev/unauthenticated"
UNAUTHENTICATED_REASON = "explicitly requested by spec.access.authentication: none"

ROLES = ("admin", "operator", "user", "viewer")
"""Dashboard roles, highest first: each role holds the access of every role after it."""
EXPOSURES = ("localAndPublic", "local")
STREAMING_TIMEOUT = "0s"
"""Disables Envoy's total request timeout (15 s by default) on application routes."""
JWT_PROVIDER = "magicstick"
ID_TOKEN_HEADER = "X-Magicstick-Id-Token"
IDENTITY_HEADERS = ("x-magicstick-user", "x-magicstick-role", "x-magicstick-groups")
"""What the guard answers an allowed request with (services/access_guard); Envoy adds them upstream."""
GUARD_PATH_PREFIX = "/instances"
GUARD_CONNECTION_IDLE_TIMEOUT = "15s"
"""Envoy closes an idle connection to the guard after this, before the guard's own idle timeout
(30 s by default, services/access_guard) would: the side that closes first is Envoy, so no check
is ever sent on a connection the guard is closing at that moment."""

Authentication = Literal["sso", "none"]
Role = Literal["user", "viewer", "operator", "admin"]
SharingMode = Literal["all", "selected"]


@dataclass(frozen=True)
class InstanceAccess:
    """One instance's access inputs, defaulted and validated by the caller (api.instances).

    A contradiction the API already rejects (selected sharing without SSO, lists with mode
    all) raises ValueError here: it is a programming error, not a user's.
    """

    instance: str
    """AppInstance metadata.name."""
    application: str
    instance_name: str
    """The `<instance-name>` of the hostnames: spec.values.name, else metadata.name."""
    namespace: str
    """The instance's target namespace, where its backend Service lives."""
    system_namespace: str
    backend_service: str
    """The Service the chart renders for the instance's release (planning.instances.names)."""
    backend_port: int
    callback_path: str
    local_host: str
    public_host: str | None
    """None when exposure is local."""
    dashboard_hosts: tuple[str, ...]
    authentication: Authentication
    role: Role
    sharing_mode: SharingMode | None
    users: tuple[str, ...]
    groups: tuple[str, ...]
    guard_ready: bool
    """The current SecurityPolicy is accepted: only then do routes get a backend."""

    def __post_init__(self) -> None:
        if self.authentication not in ("sso", "none"):
            raise ValueError(f"unknown authentication {self.authentication!r}")
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}")
        if self.sharing_mode not in (None, "all", "selected"):
            raise ValueError(f"unknown sharing mode {self.sharing_mode!r}")
        if self.sharing_mode == "selected" and self.authentication != "sso":
            raise ValueError("sharing mode selected requires authentication sso")
        if self.sharing_mode != "selected" and (self.users or self.groups):
            raise ValueError("users and groups are allowed only with sharing mode selected")
        if not self.local_host or not self.dashboard_hosts:
            raise ValueError("an instance needs a local host and at least one dashboard host")
        if not self.callback_path.startswith("/") or self.callback_path.rstrip("/") == "":
            raise ValueError(f"callback path {self.callback_path!r} must be an absolute, non-root path")


def hostnames(
    *, instance_name: str, application: str, domain: str, local_domain: str, exposure: str
) -> tuple[str, str | None]:
    """(`<name>.<app>.<local domain>`, `<name>.<app>.<domain>` or None when exposure is local)."""
    if exposure not in EXPOSURES:
        raise ValueError(f"unknown exposure {exposure!r}")
    local = f"{instance_name}.{application}.{local_domain}"
    public = f"{instance_name}.{application}.{domain}" if exposure == "localAndPublic" else None
    return local, public


def allowed_roles(minimum: str) -> tuple[str, ...]:
    """Every role that reaches `minimum`, highest first: admin > operator > user > viewer."""
    if minimum not in ROLES:
        raise ValueError(f"unknown role {minimum!r}")
    return ROLES[: ROLES.index(minimum) + 1]


def route_names(access: InstanceAccess) -> tuple[str, ...]:
    """Names of the instance's HTTPRoutes: local, public (unless exposure is local), callback."""
    names = [fit(f"{access.instance}-local")]
    if access.public_host is not None:
        names.append(fit(f"{access.instance}-public"))
    names.append(fit(f"{access.instance}-callback"))
    return tuple(names)


def security_policy_name(access: InstanceAccess) -> str:
    return fit(f"{access.instance}-access")


def reference_grant_name(access: InstanceAccess) -> str:
    return fit(f"{access.instance}-gateway-routes")


def access_objects(
    access: InstanceAccess, settings: AccessSettings, *, field_manager: str
) -> tuple[DesiredObject, ...]:
    """The HTTPRoutes, the ReferenceGrant (when namespaces differ) and the SecurityPolicy.

    Order: application routes (local, public), callback route, ReferenceGrant, SecurityPolicy.
    Only the routes depend on `guard_ready`; the policy is the same before and after.
    """
    local_name, *public_names, callback_name = route_names(access)
    objects = [_http_route(access, settings, field_manager, local_name, (access.local_host,), _app_rule(access))]
    if access.public_host is not None:
        objects.append(
            _http_route(access, settings, field_manager, public_names[0], (access.public_host,), _app_rule(access))
        )
    objects.append(
        _http_route(
            access, settings, field_manager, callback_name, access.dashboard_hosts, _callback_rule(access, settings)
        )
    )
    if access.namespace != settings.gateway_namespace:
        objects.append(_reference_grant(access, settings, field_manager))
    objects.append(_security_policy(access, settings, field_manager))
    return tuple(objects)


def _metadata(access: InstanceAccess, field_manager: str, name: str, namespace: str) -> dict[str, Any]:
    annotations = {
        FIELD_MANAGER_ANNOTATION: field_manager,
        INSTANCE_ANNOTATION: f"{access.system_namespace}/{access.instance}",
    }
    if access.authentication == "none":
        annotations[UNAUTHENTICATED_ANNOTATION] = UNAUTHENTICATED_REASON
    return {
        "name": name,
        "namespace": namespace,
        "labels": {MANAGED_BY: MANAGED_BY_VALUE, INSTANCE_LABEL: fit(access.instance, LABEL_VALUE_LIMIT)},
        "annotations": annotations,
    }


def _desired(api_version: str, kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> DesiredObject:
    return DesiredObject.of({"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec})


def _backend(access: InstanceAccess) -> dict[str, Any]:
    """The instance's Service once the guard is ready; before, no backendRefs key at all."""
    if not access.guard_ready:
        return {}
    service = {
        "group": "",
        "kind": "Service",
        "name": access.backend_service,
        "namespace": access.namespace,
        "port": access.backend_port,
    }
    return {"backendRefs": [service]}


def _app_rule(access: InstanceAccess) -> dict[str, Any]:
    return {
        "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
        "timeouts": {"request": STREAMING_TIMEOUT},
        **_backend(access),
    }


def _callback_rule(access: InstanceAccess, settings: AccessSettings) -> dict[str, Any]:
    return {
        "matches": [{"path": {"type": "Exact", "value": access.callback_path}}],
        "timeouts": {"request": settings.callback_timeout},
        **_backend(access),
    }


def _http_route(
    access: InstanceAccess,
    settings: AccessSettings,
    field_manager: str,
    name: str,
    hosts: tuple[str, ...],
    rule: dict[str, Any],
) -> DesiredObject:
    parent = {
        "group": GATEWAY_GROUP,
        "kind": "Gateway",
        "name": settings.gateway_name,
        "namespace": settings.gateway_namespace,
    }
    if settings.gateway_listener is not None:
        parent["sectionName"] = settings.gateway_listener
    spec = {
        "parentRefs": [parent],
        "hostnames": list(hosts),
        "rules": [rule],
    }
    metadata = _metadata(access, field_manager, name, settings.gateway_namespace)
    metadata["annotations"][SPEC_HASH_ANNOTATION] = spec_hash(spec)
    return _desired(HTTPROUTE_API_VERSION, "HTTPRoute", metadata, spec)


def _reference_grant(access: InstanceAccess, settings: AccessSettings, field_manager: str) -> DesiredObject:
    spec = {
        "from": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute", "namespace": settings.gateway_namespace}],
        "to": [{"group": "", "kind": "Service", "name": access.backend_service}],
    }
    return _desired(
        REFERENCE_GRANT_API_VERSION,
        "ReferenceGrant",
        _metadata(access, field_manager, reference_grant_name(access), access.namespace),
        spec,
    )


def _security_policy(access: InstanceAccess, settings: AccessSettings, field_manager: str) -> DesiredObject:
    spec: dict[str, Any] = {
        "targetRefs": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute", "name": name} for name in route_names(access)],
        "extAuth": _guard(access, settings),
    }
    if access.authentication == "sso":
        spec["oidc"] = _oidc(access, settings)
        spec["jwt"] = _jwt(settings)
        spec["authorization"] = _authorization(access, settings)
    metadata = _metadata(access, field_manager, security_policy_name(access), settings.gateway_namespace)
    metadata["annotations"][SPEC_HASH_ANNOTATION] = spec_hash(spec)
    return _desired(SECURITY_POLICY_API_VERSION, "SecurityPolicy", metadata, spec)


def _guard(access: InstanceAccess, settings: AccessSettings) -> dict[str, Any]:
    """The guard in the gateway namespace; it receives the forwarded ID token (an HTTP check
    request otherwise carries only Host, Method, Path, Content-Length and Authorization) and
    answers an allowed request with the identity headers Envoy adds upstream."""
    return {
        "http": {
            "backendRefs": [
                {
                    "group": "",
                    "kind": "Service",
                    "name": settings.guard_service,
                    "namespace": settings.gateway_namespace,
                    "port": settings.guard_port,
                }
            ],
            "path": f"{GUARD_PATH_PREFIX}/{access.system_namespace}/{access.instance}",
            "headersToBackend": list(IDENTITY_HEADERS),
            "backendSettings": {"timeout": {"http": {"connectionIdleTimeout": GUARD_CONNECTION_IDLE_TIMEOUT}}},
        },
        "headersToExtAuth": [ID_TOKEN_HEADER.lower()],
        "failOpen": False,
    }


def _logout_path(callback_path: str) -> str:
    parent = callback_path.rstrip("/").rsplit("/", 1)[0]
    return f"{parent}/logout"


def _oidc(access: InstanceAccess, settings: AccessSettings) -> dict[str, Any]:
    return {
        "provider": {
            "issuer": settings.oidc_issuer,
            "authorizationEndpoint": settings.authorization_endpoint,
            "tokenEndpoint": settings.token_endpoint,
            "endSessionEndpoint": settings.end_session_endpoint,
        },
        "clientID": settings.oidc_client_id,
        "clientSecret": {"group": "", "kind": "Secret", "name": settings.oidc_client_secret},
        "scopes": list(settings.oidc_scopes),
        "redirectURL": f"https://%REQ(:authority)%{access.callback_path}",
        "logoutPath": _logout_path(access.callback_path),
        "forwardIDToken": {"header": ID_TOKEN_HEADER},
    }


def _jwt(settings: AccessSettings) -> dict[str, Any]:
    return {
        "providers": [
            {
                "name": JWT_PROVIDER,
                "issuer": settings.oidc_issuer,
                "audiences": [settings.oidc_client_id],
                "remoteJWKS": {"uri": settings.jwks_uri},
                "extractFrom": {"headers": [{"name": ID_TOKEN_HEADER}]},
            }
        ]
    }


def _claim(name: str, values: tuple[str, ...], value_type: str) -> dict[str, Any]:
    return {"name": name, "valueType": value_type, "values": list(values)}


def _allow(name: str, *claims: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "action": "Allow", "principal": {"jwt": {"provider": JWT_PROVIDER, "claims": list(claims)}}}


def _authorization(access: InstanceAccess, settings: AccessSettings) -> dict[str, Any]:
    """Default Deny; Allow rules whose claims are ANDed. An empty selection allows nobody."""
    roles = _claim(settings.roles_claim, allowed_roles(access.role), "StringArray")
    rules: list[dict[str, Any]] = []
    if access.sharing_mode == "selected":
        users = tuple(sorted(set(access.users)))
        groups = tuple(sorted(set(access.groups)))
        if users:
            rules.append(_allow("allow-selected-users", _claim(settings.subject_claim, users, "String"), roles))
        if groups:
            rules.append(_allow("allow-selected-groups", _claim(settings.groups_claim, groups, "StringArray"), roles))
    else:
        rules.append(_allow("allow-roles", roles))
    authorization: dict[str, Any] = {"defaultAction": "Deny"}
    if rules:
        authorization["rules"] = rules
    return authorization
