"""Raw Kubernetes objects for planning tests, as `kubectl get -o yaml` would print them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from api.meta import API_VERSION
from catalogs import Catalogs, load_catalogs
from planning.access_settings import AccessSettings
from planning.frozen import thaw
from planning.instances.access import InstanceAccess, hostnames
from planning.instances.guard import guard_objects
from planning.objects import DesiredObject
from planning.plan import Plan, plan
from planning.settings import PlanSettings
from planning.snapshot import Snapshot
from tests.support.crd_defaults import with_defaults

JsonObject = dict[str, Any]
"""A raw Kubernetes object (or a part of one) as the API server returns it: free-form JSON."""

NOW = datetime(2026, 1, 1, tzinfo=UTC)
LATER = datetime(2026, 1, 2, tzinfo=UTC)
NS = "ai-system"
CATALOGS = load_catalogs()


def appliance(
    modules: dict[str, bool] | None = None,
    *,
    generation: int = 1,
    source: JsonObject | None = None,
    status: JsonObject | None = None,
) -> JsonObject:
    spec: dict[str, Any] = {"profile": "ai-workstation"}
    if source is not None:
        spec["source"] = source
    if modules is not None:
        spec["modules"] = {name: {"enabled": enabled} for name, enabled in modules.items()}
    obj: JsonObject = {
        "apiVersion": API_VERSION,
        "kind": "Appliance",
        "metadata": {"name": "local", "namespace": NS, "generation": generation, "uid": "uid-appliance"},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def runtime(
    kind: str,
    name: str,
    spec: JsonObject,
    *,
    generation: int = 1,
    labels: dict[str, str] | None = None,
    status: JsonObject | None = None,
) -> JsonObject:
    metadata: dict[str, Any] = {"name": name, "namespace": NS, "generation": generation, "uid": f"uid-{name}"}
    if labels:
        metadata["labels"] = labels
    obj: JsonObject = {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


def activation(name: str, module: str | None = None, *, enabled: bool = True, **kwargs: Any) -> JsonObject:
    return runtime("ModuleActivation", name, {"module": module or name, "enabled": enabled}, **kwargs)


def instance(name: str, application: str, *, enabled: bool = True, **kwargs: Any) -> JsonObject:
    return runtime(
        "AppInstance", name, {"application": application, "enabled": enabled, "values": {"name": name}}, **kwargs
    )


def cpu_model(name: str, *, engine: str = "VLLM", enabled: bool = True) -> JsonObject:
    return runtime(
        "ModelActivation",
        name,
        {
            "type": "local",
            "enabled": enabled,
            "local": {"preset": "qwen2505bcpu", "computeTarget": "cpu", "engine": engine},
        },
    )


def gpu_model(name: str, target: str = "nvidia-gpu") -> JsonObject:
    return runtime(
        "ModelActivation",
        name,
        {
            "type": "local",
            "enabled": True,
            "local": {"preset": "qwen2505bcpu", "computeTarget": target, "engine": "VLLM"},
        },
    )


def external_model(name: str) -> JsonObject:
    return runtime(
        "ModelActivation",
        name,
        {
            "type": "external",
            "enabled": True,
            "external": {
                "model": "openai/gpt-4o-mini",
                "apiBase": "https://api.example.com/v1",
                "modelType": "chat",
                "apiKeySecretRef": {"name": "external-api-key", "key": "api-key"},
            },
        },
    )


CORE_API_VERSIONS = frozenset({"v1", "apps/v1", "policy/v1", "networking.k8s.io/v1"})
"""Built-in kinds: no CRD defaults to apply (the server's own defaults are not played here)."""


def as_stored(obj: JsonObject | DesiredObject, *, generation: int = 1) -> JsonObject:
    """`obj` as the API server stores it: its CRD's defaults applied, metadata.generation set."""
    body: JsonObject = thaw(obj.body) if isinstance(obj, DesiredObject) else obj
    stored = body if body["apiVersion"] in CORE_API_VERSIONS else with_defaults(body)
    stored["metadata"]["generation"] = generation
    return stored


def condition(
    condition_type: str, status: str, *, reason: str, message: str = "", observed_generation: int | None
) -> JsonObject:
    """A metav1.Condition as controllers write it; observedGeneration only when given."""
    found: dict[str, Any] = {
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    if observed_generation is not None:
        found["observedGeneration"] = observed_generation
    return found


def flux_status(ready: str, *, reason: str, message: str, observed_generation: int, **extra: Any) -> JsonObject:
    """A Flux status: status.observedGeneration and the Ready condition's, as Flux sets both."""
    ready_condition = condition("Ready", ready, reason=reason, message=message, observed_generation=observed_generation)
    return {"observedGeneration": observed_generation, **extra, "conditions": [ready_condition]}


def kustomization_for(
    module: str,
    ready: str | None = "True",
    *,
    reason: str = "ReconciliationSucceeded",
    message: str = "Applied revision: main@sha1:0123",
    suspend: bool = False,
    labels: dict[str, str] | None = None,
    spec: JsonObject | None = None,
    generation: int = 1,
    observed_generation: int | None = None,
) -> JsonObject:
    """A generated Kustomization as the cluster returns it: CRD defaults, generation, and (unless
    `ready` is None) Flux's status for `observed_generation` (default: the current generation)."""
    entry = CATALOGS.modules.require(module)
    obj: dict[str, Any] = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": entry.kustomization,
            "namespace": "flux-system",
            "labels": labels
            if labels is not None
            else {"app.kubernetes.io/managed-by": "magicstick", "appliance.magicstick.dev/module": module},
        },
        "spec": spec
        if spec is not None
        else {
            "interval": "10m0s",
            "path": entry.path,
            "prune": True,
            "suspend": suspend,
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
        },
    }
    if ready is not None:
        observed = generation if observed_generation is None else observed_generation
        obj["status"] = flux_status(ready, reason=reason, message=message, observed_generation=observed)
    return as_stored(obj, generation=generation)


GATEWAY_REF = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "magicstick", "namespace": NS}
ENVOY_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"


def observed_release(
    planned: DesiredObject,
    ready: str | None = "True",
    *,
    reason: str = "InstallSucceeded",
    message: str = "Helm install succeeded",
    generation: int = 1,
    observed_generation: int | None = None,
) -> JsonObject:
    """The planned HelmRelease as the cluster returns it, with helm-controller's status for
    `observed_generation` (default: current); `ready` None: no status written yet."""
    stored = as_stored(planned, generation=generation)
    if ready is not None:
        observed = generation if observed_generation is None else observed_generation
        stored["status"] = flux_status(ready, reason=reason, message=message, observed_generation=observed)
    return stored


def gateway_status(
    key: str, accepted: str, *, reason: str, message: str, observed_generation: int | None
) -> JsonObject:
    """Envoy Gateway's status of a policy (`key` ancestors) or route (`key` parents): one Gateway."""
    ref = "ancestorRef" if key == "ancestors" else "parentRef"
    accepted_condition = condition(
        "Accepted", accepted, reason=reason, message=message, observed_generation=observed_generation
    )
    return {
        key: [{ref: dict(GATEWAY_REF), "controllerName": ENVOY_GATEWAY_CONTROLLER, "conditions": [accepted_condition]}]
    }


ACCEPTED_MESSAGES = {"ancestors": "Policy has been accepted.", "parents": "Route is accepted"}
RESOLVED_MESSAGE = "Resolved all the Object references for the Route"


def accepted_gateway_status(key: str, generation: int) -> JsonObject:
    """What Envoy Gateway writes on a policy (`key` ancestors) or route (`key` parents) it accepted
    at `generation`: Accepted, and for a route ResolvedRefs too, with its own messages
    (tests/peers/test_envoy_gateway.py compares this with what its translator writes)."""
    status = gateway_status(
        key, "True", reason="Accepted", message=ACCEPTED_MESSAGES[key], observed_generation=generation
    )
    if key == "parents":
        resolved = condition(
            "ResolvedRefs", "True", reason="ResolvedRefs", message=RESOLVED_MESSAGE, observed_generation=generation
        )
        status[key][0]["conditions"].append(resolved)
    return status


def accepted_policy(
    planned: DesiredObject,
    accepted: str = "True",
    *,
    reason: str = "Accepted",
    message: str = ACCEPTED_MESSAGES["ancestors"],
    generation: int = 1,
    observed_generation: int | None = None,
) -> JsonObject:
    """The planned SecurityPolicy as the cluster returns it once Envoy Gateway judged
    `observed_generation` (default: current): CRD defaults, generation, the applied annotations."""
    stored = as_stored(planned, generation=generation)
    observed = generation if observed_generation is None else observed_generation
    stored["status"] = gateway_status(
        "ancestors", accepted, reason=reason, message=message, observed_generation=observed
    )
    return stored


def accepted_route(planned: DesiredObject, *, generation: int = 1) -> JsonObject:
    """The planned HTTPRoute as the cluster returns it once its Gateway accepted this generation
    and resolved its references."""
    stored = as_stored(planned, generation=generation)
    stored["status"] = accepted_gateway_status("parents", generation)
    return stored


def crd(name: str) -> JsonObject:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name}}


def ready_modules(*modules: str) -> list[JsonObject]:
    """Ready Kustomizations and served CRDs for `modules`."""
    objects: list[JsonObject] = []
    for module in modules:
        objects.append(kustomization_for(module))
        objects += [crd(name) for name in CATALOGS.modules.require(module).required_crds]
    return objects


def access_for(
    application: str = "openclaw", *, instance: str | None = None, exposure: str = "localAndPublic", **overrides: Any
) -> InstanceAccess:
    """The access inputs of `<application>-default` in namespace ai, as the plan derives them."""
    entry = CATALOGS.applications.require(application)
    instance = instance or f"{application}-default"
    local, public = hostnames(
        instance_name="default",
        application=application,
        domain="magicstick.example.com",
        local_domain="magicstick.local",
        exposure=exposure,
    )
    fields: dict[str, Any] = {
        "instance": instance,
        "application": application,
        "instance_name": "default",
        "namespace": "ai",
        "system_namespace": NS,
        "backend_service": entry.backend_service_for("default"),
        "backend_port": entry.backend_port,
        "callback_path": entry.callback_path_for(instance),
        "local_host": local,
        "public_host": public,
        "dashboard_hosts": ("dashboard.magicstick.local", "dashboard.magicstick.example.com"),
        "authentication": "sso",
        "role": "user",
        "sharing_mode": None,
        "users": (),
        "groups": (),
        "guard_ready": False,
    }
    fields.update(overrides)
    return InstanceAccess(**fields)


FLUX_CRD = "kustomizations.kustomize.toolkit.fluxcd.io"


def with_flux(objects: Iterable[JsonObject]) -> list[JsonObject]:
    """`objects` in a cluster where Flux is installed (its Kustomization CRD served), as in every
    appliance; a test of the opposite passes `flux=False` to plan_of."""
    found = list(objects)
    served = any(o.get("kind") == "CustomResourceDefinition" and o["metadata"]["name"] == FLUX_CRD for o in found)
    return found if served else [*found, crd(FLUX_CRD)]


GUARD_IMAGE = "registry.example.com/magicstick/access-guard:0.1.0"
SETTINGS = PlanSettings(access=AccessSettings(guard_image=GUARD_IMAGE))
"""The plan settings of planning tests: the defaults, with an access guard image an
administrator has built and set (the shipped default is a CHANGEME placeholder)."""


def plan_of(
    *objects: JsonObject,
    now: datetime = NOW,
    flux: bool = True,
    settings: PlanSettings = SETTINGS,
    catalogs: Catalogs = CATALOGS,
) -> Plan:
    return plan(
        snapshot=Snapshot.from_objects(with_flux(objects) if flux else objects),
        catalogs=catalogs,
        now=now,
        settings=settings,
    )


def running_guard(settings: PlanSettings = SETTINGS, *, available: int = 2, generation: int = 1) -> JsonObject:
    """The access guard's Deployment as planned under `settings`, rolled out by its controller
    for `generation` with `available` replicas available."""
    planned = next(
        o for o in guard_objects({}, settings.access, field_manager=settings.field_manager) if o.kind == "Deployment"
    )
    stored = as_stored(planned, generation=generation)
    replicas = stored["spec"]["replicas"]
    stored["status"] = {
        "observedGeneration": generation,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "availableReplicas": available,
    }
    return stored


def status_of(result: Plan, kind: str, name: str) -> JsonObject:
    for update in result.statuses:
        if update.kind == kind and update.name == name:
            status: JsonObject = thaw(update.status)
            return status
    raise KeyError(f"no status for {kind}/{name}")


def kustomization_names(result: Plan) -> set[str]:
    return {k.name for k in result.modules.kustomizations}


def kustomization_of(result: Plan, module: str) -> DesiredObject | None:
    name = CATALOGS.modules.require(module).kustomization
    matches = [k for k in result.modules.kustomizations if k.name == name]
    return matches[0] if matches else None
