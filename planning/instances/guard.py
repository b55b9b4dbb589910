"""The access guard: the external-authorization service every instance's SecurityPolicy calls,
its grants, and the Envoy filter order that lets it see a verified identity. Pure.

Rules:
- one guard for the installation, in the gateway namespace (beside the routes and policies
  that call it, so no ReferenceGrant is needed): a Deployment of two replicas, a Service, a
  PodDisruptionBudget that keeps one running through a drain, and the grants ConfigMap
  `magicstick-access-grants` mounted read-only. The Pod runs non-root, with a read-only root
  filesystem, no privilege escalation, every capability dropped and no service-account token:
  it reads nothing from the API, only its mounted grants and the issuer's key set;
- one grant per instance (`<system namespace>.<instance>.json`, the format of
  services/access_guard): authentication, minimum role, sharing and the claim names. The
  guard re-reads the mounted files, so a changed or removed grant takes effect without a restart;
  an instance whose spec is now refused keeps its grant as last applied (invariant 6);
- only the Envoy proxy Pods of the shared Gateway reach the guard's port: a NetworkPolicy in the
  gateway namespace admits, on that port alone, Pods labelled as Envoy Gateway labels the proxies
  of that Gateway, in Envoy Gateway's namespace (where it runs proxies by default) or in the
  gateway namespace (its gateway-namespace mode). Any other Pod that could reach the guard could
  ask it about tokens at will. It needs a CNI that enforces NetworkPolicies; the kubelet's probes
  come from the node, which the common CNIs admit whatever the policy says;
- the guard is ready when the Deployment carrying the planned spec hash has rolled out
  (planning.readiness `deployment_rollout`); until then no route gets a backend. A guard image
  that is still a placeholder (catalogs.images) is never ready, and says so;
- Envoy Gateway runs external authorization before OIDC and JWT by default. The EnvoyProxy
  `magicstick-proxy` moves `ext_authz` after `jwt_authn`, so the guard is asked only about
  requests whose ID token Envoy has already obtained and verified; the shared Gateway names it
  in `spec.infrastructure.parametersRef` (magic-cluster, the Envoy Gateway base).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from api import peer_kinds
from catalogs.images import is_placeholder_image
from planning.access_settings import AccessSettings
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE, SKIP_AWAIT_ANNOTATION
from planning.objects import OWNED_FORCE_ANNOTATION, DesiredObject
from planning.readiness import SPEC_HASH_ANNOTATION, Readiness, Verdict, deployment_rollout, spec_hash
from planning.snapshot import Snapshot, Workload

GRANTS_CONFIG_MAP = "magicstick-access-grants"
GRANTS_PATH = "/etc/magicstick/grants"
ENVOY_PROXY_NAME = "magicstick-proxy"
ENVOY_PROXY_API_VERSION = peer_kinds.ENVOY_PROXY.api_version
ENVOY_PROXY_CRD = "envoyproxies.gateway.envoyproxy.io"
COMPONENT_LABEL = "app.kubernetes.io/component"
GUARD_COMPONENT = "access-guard"
GUARD_SELECTOR = f"{COMPONENT_LABEL}={GUARD_COMPONENT}"
"""The live reader's selector for the guard's Deployment in the gateway namespace."""
ENVOY_GATEWAY_NAMESPACE = "envoy-gateway-system"
"""Where Envoy Gateway runs (magic-cluster/platform/basis/envoy-gateway.yaml) and, by default, its proxies."""
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
GUARD_USER = 65532
GUARD_REPLICAS = 2


def grant_key(system_namespace: str, instance: str) -> str:
    """The grants ConfigMap key of one instance: the namespace has no dots, so it splits. Pure."""
    return f"{system_namespace}.{instance}.json"


def grant_document(
    *,
    system_namespace: str,
    instance: str,
    authentication: str,
    role: str,
    sharing_mode: str | None,
    users: tuple[str, ...],
    groups: tuple[str, ...],
    settings: AccessSettings,
) -> str:
    """One instance's grant, as the guard reads it (canonical JSON, sorted). Pure."""
    sharing: dict[str, Any] = {"mode": sharing_mode or "all"}
    if sharing_mode == "selected":
        sharing |= {"users": sorted(set(users)), "groups": sorted(set(groups))}
    document = {
        "instance": f"{system_namespace}/{instance}",
        "authentication": authentication,
        "minimumRole": role,
        "sharing": sharing,
        "claims": {"subject": settings.subject_claim, "roles": settings.roles_claim, "groups": settings.groups_claim},
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def kept_grants(snapshot: Snapshot, settings: AccessSettings, keys: frozenset[str]) -> dict[str, str]:
    """The grants of `keys` as the cluster holds them (instances kept as last applied). Pure."""
    observed = snapshot.config_map(settings.gateway_namespace, GRANTS_CONFIG_MAP)
    if observed is None:
        return {}
    return {key: str(value) for key, value in observed.data.items() if key in keys}


# SKIP_AWAIT_ANNOTATION: pulumi-kubernetes would otherwise wait for the rollout inside `pulumi up`
# (and fail the run after its timeout); the program reads the rollout itself at the next run
# (`guard_readiness`).


def _metadata(name: str, settings: AccessSettings, field_manager: str, **annotations: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": settings.gateway_namespace,
        "labels": {MANAGED_BY: MANAGED_BY_VALUE, COMPONENT_LABEL: GUARD_COMPONENT},
        "annotations": {FIELD_MANAGER_ANNOTATION: field_manager, SKIP_AWAIT_ANNOTATION: "true", **annotations},
    }


def guard_objects(
    grants: Mapping[str, str], settings: AccessSettings, *, field_manager: str
) -> tuple[DesiredObject, ...]:
    """The grants ConfigMap, the guard's Service, Deployment, PodDisruptionBudget and NetworkPolicy. Pure."""
    selector = {COMPONENT_LABEL: GUARD_COMPONENT, MANAGED_BY: MANAGED_BY_VALUE}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(GRANTS_CONFIG_MAP, settings, field_manager),
        "data": dict(sorted(grants.items())),
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(settings.guard_service, settings, field_manager, **{OWNED_FORCE_ANNOTATION: "true"}),
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "http", "port": settings.guard_port, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    spec = _deployment_spec(selector, settings)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(
            settings.guard_service,
            settings,
            field_manager,
            **{OWNED_FORCE_ANNOTATION: "true", SPEC_HASH_ANNOTATION: spec_hash(spec)},
        ),
        "spec": spec,
    }
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _metadata(settings.guard_service, settings, field_manager, **{OWNED_FORCE_ANNOTATION: "true"}),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector}},
    }
    network_policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(settings.guard_service, settings, field_manager, **{OWNED_FORCE_ANNOTATION: "true"}),
        "spec": _network_policy_spec(selector, settings),
    }
    return tuple(DesiredObject.of(body) for body in (config_map, service, deployment, budget, network_policy))


def envoy_proxy_labels(settings: AccessSettings) -> dict[str, str]:
    """The labels Envoy Gateway gives the proxy Pods of the shared Gateway. Pure."""
    return {
        "app.kubernetes.io/name": "envoy",
        "app.kubernetes.io/component": "proxy",
        "app.kubernetes.io/managed-by": "envoy-gateway",
        "gateway.envoyproxy.io/owning-gateway-name": settings.gateway_name,
        "gateway.envoyproxy.io/owning-gateway-namespace": settings.gateway_namespace,
    }


def _network_policy_spec(selector: dict[str, str], settings: AccessSettings) -> dict[str, Any]:
    namespaces = sorted({ENVOY_GATEWAY_NAMESPACE, settings.gateway_namespace})
    return {
        "podSelector": {"matchLabels": selector},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": namespaces}]
                        },
                        "podSelector": {"matchLabels": envoy_proxy_labels(settings)},
                    }
                ],
                "ports": [{"protocol": "TCP", "port": settings.guard_port}],
            }
        ],
    }


def _deployment_spec(selector: dict[str, str], settings: AccessSettings) -> dict[str, Any]:
    args = [
        f"--grants-dir={GRANTS_PATH}",
        f"--issuer={settings.oidc_issuer}",
        f"--audience={settings.oidc_client_id}",
        f"--jwks-uri={settings.jwks_uri}",
        f"--listen=0.0.0.0:{settings.guard_port}",
    ]
    container = {
        "name": "guard",
        "image": settings.guard_image,
        "args": args,
        "ports": [{"name": "http", "containerPort": settings.guard_port, "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 20},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": GUARD_USER,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "grants", "mountPath": GRANTS_PATH, "readOnly": True}],
    }
    return {
        "replicas": GUARD_REPLICAS,
        "selector": {"matchLabels": selector},
        "template": {
            "metadata": {"labels": selector},
            "spec": {
                "automountServiceAccountToken": False,
                "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [container],
                "volumes": [{"name": "grants", "configMap": {"name": GRANTS_CONFIG_MAP}}],
            },
        },
    }


def envoy_proxy(settings: AccessSettings, *, field_manager: str) -> DesiredObject:
    """The EnvoyProxy whose filter order puts the guard after OIDC and JWT verification. Pure."""
    body = {
        "apiVersion": ENVOY_PROXY_API_VERSION,
        "kind": "EnvoyProxy",
        "metadata": {
            "name": ENVOY_PROXY_NAME,
            "namespace": settings.gateway_namespace,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE},
            "annotations": {FIELD_MANAGER_ANNOTATION: field_manager},
        },
        "spec": {"filterOrder": [{"name": "envoy.filters.http.ext_authz", "after": "envoy.filters.http.jwt_authn"}]},
    }
    return DesiredObject.of(body)


def observed_guard(snapshot: Snapshot, settings: AccessSettings) -> Workload | None:
    return next(
        (
            w
            for w in snapshot.workloads
            if w.meta.namespace == settings.gateway_namespace
            and w.meta.name == settings.guard_service
            and w.meta.labels.get(COMPONENT_LABEL) == GUARD_COMPONENT
        ),
        None,
    )


def guard_readiness(snapshot: Snapshot, settings: AccessSettings, planned: tuple[DesiredObject, ...]) -> Verdict:
    """Whether the guard planned now serves: its rollout, and an image that can exist. Pure."""
    if is_placeholder_image(settings.guard_image):
        return Verdict(
            Readiness.IN_PROGRESS,
            "GuardImageNotSet",
            f"the access guard image {settings.guard_image} is the placeholder; build it (services/access_guard) and set magicstick:guardImage",
        )
    deployment = next(o for o in planned if o.kind == "Deployment")
    verdict = deployment_rollout(
        observed_guard(snapshot, settings),
        planned_hash=str(deployment.body["metadata"]["annotations"][SPEC_HASH_ANNOTATION]),
    )
    return verdict
