"""Direct runtimes: local models the program runs as its own Deployment, not through KubeAI.

FreeToken and the realtime vLLM-Omni runtime (run by the program itself, from their deployment
and profile fields) each get a Deployment and a Service, the realtime
runtime also a stage ConfigMap. All of one activation's objects are applied together by one
dynamic resource (providers/direct_runtime.py), so a refused write becomes that activation's
status (Degraded or Starting with a `<Runtime>...` reason) and never fails the run.

Rules, pure:
- every object carries the managed-by label, the activation label and RUNTIME_LABEL, which
  the live reader selects on (Deployments, Pods, ConfigMaps of direct runtimes);
- names: the Service and Deployment are `runtime_name(activation)`, a DNS-1035 label that fits
  the 63-character limit (a Service name must start with a letter);
- ready means the current rollout (planning/readiness.py `deployment_rollout`) has an
  available replica; the realtime runtime also needs its upstream `/health`;
- a direct runtime is published to the model catalog through the generated model list only
  while it is ready, so a failed runtime is never routable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from api.model_runtimes import RUNTIME_LABEL as RUNTIME_LABEL
from api.model_runtimes import DirectRuntimeKind as DirectRuntimeKind
from api.model_runtimes import activation_label_value
from api.vocabulary import Phase
from planning.frozen import FrozenMap, freeze, thaw
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE
from planning.models.kubeai import ACTIVATION_LABEL
from planning.names import LABEL_VALUE_LIMIT, fit
from planning.objects import OWNED_FORCE_ANNOTATION, DesiredObject
from planning.readiness import SPEC_HASH_ANNOTATION, Readiness, Waiting, deployment_rollout, spec_hash
from planning.reasons import Reason
from planning.snapshot import ConfigMap, Node, Snapshot, Workload

CONFIG_HASH_ANNOTATION = "appliance.magicstick.dev/config-hash"
"""On the Pod template: the hash of the runtime's ConfigMap, so a new bootstrap rolls the Pod."""
RESTART_NONCE_ANNOTATION = "appliance.magicstick.dev/restart-nonce"
"""On the Pod template: the activation's restartNonce; changing it restarts the runtime."""
SERVICE_NAME_PREFIX = "m-"
"""Put in front of a runtime name that does not start with a letter (Service names must)."""
RUNTIME_INPUT: Final = "runtime"
NAMESPACE_INPUT: Final = "namespace"
OBJECTS_INPUT: Final = "objects"
FIELD_MANAGER_INPUT: Final = "fieldManager"


@dataclass(frozen=True)
class ClaimBinding:
    """A shared ResourceClaim a direct runtime's Pod binds instead of an extended resource."""

    pod_claim: str
    """The name of the claim inside the Pod (spec.resourceClaims[].name)."""
    claim: str
    """The ResourceClaim's name in the runtime's namespace."""


@dataclass(frozen=True)
class DirectRuntime:
    """The objects of one activation's direct runtime, applied together in this order.

    `objects` holds at most one ConfigMap (first), one Service and one Deployment (last, so
    the Pod starts with its configuration and Service in place).
    """

    kind: DirectRuntimeKind
    activation: str
    namespace: str
    objects: tuple[DesiredObject, ...]

    @property
    def logical_name(self) -> str:
        return f"{self.kind.label}/{self.namespace}/{self.activation}"

    def inputs(self, field_manager: str) -> DirectRuntimeInputs:
        """What its DirectRuntime resource carries, applied under `field_manager`."""
        return DirectRuntimeInputs(
            runtime=self.kind,
            namespace=self.namespace,
            objects=tuple(obj.body for obj in self.objects),
            field_manager=field_manager,
        )


@dataclass(frozen=True)
class DirectRuntimeInputs:
    """The objects of one direct runtime as its dynamic resource carries them (providers/direct_runtime.py)."""

    runtime: DirectRuntimeKind
    namespace: str
    objects: tuple[FrozenMap, ...]
    """The bodies to apply, in their order."""
    field_manager: str

    def to_inputs(self) -> dict[str, Any]:
        """The resource's inputs. Pure."""
        return {
            RUNTIME_INPUT: self.runtime.value,
            NAMESPACE_INPUT: self.namespace,
            OBJECTS_INPUT: [thaw(body) for body in self.objects],
            FIELD_MANAGER_INPUT: self.field_manager,
        }

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Any]) -> DirectRuntimeInputs:
        """The runtime `to_inputs` wrote. Pure."""
        return cls(
            runtime=DirectRuntimeKind(inputs[RUNTIME_INPUT]),
            namespace=inputs[NAMESPACE_INPUT],
            objects=tuple(freeze(body) for body in inputs.get(OBJECTS_INPUT) or ()),
            field_manager=inputs[FIELD_MANAGER_INPUT],
        )


def runtime_name(activation: str) -> str:
    """The Deployment and Service name of `activation`'s direct runtime: a DNS-1035 label. Pure."""
    name = activation if activation[:1].isalpha() else SERVICE_NAME_PREFIX + activation
    return fit(name, LABEL_VALUE_LIMIT)


def runtime_labels(kind: DirectRuntimeKind, activation: str) -> dict[str, str]:
    """The labels of every object of the runtime (and of its Pods). Pure."""
    return {
        MANAGED_BY: MANAGED_BY_VALUE,
        ACTIVATION_LABEL: activation_label_value(activation),
        RUNTIME_LABEL: kind.label,
    }


def pod_selector(kind: DirectRuntimeKind, activation: str) -> dict[str, str]:
    """The Deployment's selector (immutable once created, so it never includes anything that changes). Pure."""
    return {ACTIVATION_LABEL: activation_label_value(activation), RUNTIME_LABEL: kind.label}


def _of_runtime(items: tuple[Any, ...], kind: DirectRuntimeKind, namespace: str, activation: str) -> Any | None:
    """The first of `items` (observed objects with `meta`) labelled as `activation`'s runtime. Pure."""
    wanted = activation_label_value(activation)
    return next(
        (
            item
            for item in items
            if item.meta.namespace == namespace
            and item.meta.labels.get(ACTIVATION_LABEL) == wanted
            and item.meta.labels.get(RUNTIME_LABEL) == kind.label
        ),
        None,
    )


def observed_workload(snapshot: Snapshot, kind: DirectRuntimeKind, namespace: str, activation: str) -> Workload | None:
    """The runtime's Deployment as observed, found by its labels. Pure."""
    return _of_runtime(snapshot.workloads, kind, namespace, activation)


def observed_config_map(
    snapshot: Snapshot, kind: DirectRuntimeKind, namespace: str, activation: str
) -> ConfigMap | None:
    """The runtime's ConfigMap as observed (realtime only), found by its labels. Pure."""
    return _of_runtime(snapshot.config_maps, kind, namespace, activation)


def kept_runtime(
    snapshot: Snapshot, kind: DirectRuntimeKind, namespace: str, activation: str, service: DesiredObject
) -> DirectRuntime | None:
    """The runtime as it runs, declared again exactly as observed (invariant 6); None when
    nothing runs. The Service depends on the activation's name only, so the planned one is kept. Pure."""
    workload = observed_workload(snapshot, kind, namespace, activation)
    if workload is None:
        return None
    objects: list[DesiredObject] = []
    config_map = observed_config_map(snapshot, kind, namespace, activation)
    if config_map is not None:
        objects.append(DesiredObject.of(_bare("v1", "ConfigMap", config_map.meta, {"data": thaw(config_map.data)})))
    objects.append(service)
    objects.append(DesiredObject.of(_bare("apps/v1", "Deployment", workload.meta, {"spec": thaw(workload.spec)})))
    return DirectRuntime(kind=kind, activation=activation, namespace=namespace, objects=tuple(objects))


SERVER_ANNOTATION_PREFIXES = ("deployment.kubernetes.io/", "kubectl.kubernetes.io/")
"""Annotations controllers and clients add; never declared again."""


def _bare(api_version: str, kind: str, meta: Any, content: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": meta.name, "namespace": meta.namespace}
    if meta.labels:
        metadata["labels"] = thaw(meta.labels)
    annotations = {k: v for k, v in thaw(meta.annotations).items() if not k.startswith(SERVER_ANNOTATION_PREFIXES)}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **content}


def _metadata(
    kind: DirectRuntimeKind, activation: str, namespace: str, name: str, field_manager: str, **annotations: str
) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "labels": runtime_labels(kind, activation),
        "annotations": {FIELD_MANAGER_ANNOTATION: field_manager, OWNED_FORCE_ANNOTATION: "true", **annotations},
    }


def service_object(
    kind: DirectRuntimeKind, activation: str, namespace: str, *, port: int, field_manager: str
) -> DesiredObject:
    """The ClusterIP Service in front of the runtime's Pod, port `http`. Pure."""
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(kind, activation, namespace, runtime_name(activation), field_manager),
        "spec": {
            "type": "ClusterIP",
            "selector": pod_selector(kind, activation),
            "ports": [{"name": "http", "port": port, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    return DesiredObject.of(body)


def deployment_object(
    kind: DirectRuntimeKind,
    activation: str,
    namespace: str,
    *,
    pod_spec: dict[str, Any],
    pod_annotations: dict[str, str],
    field_manager: str,
    recreate: bool,
    annotations: dict[str, str] | None = None,
) -> DesiredObject:
    """The runtime's one-replica Deployment; its spec hash is recorded beside it (invariant 11). Pure."""
    template_metadata: dict[str, Any] = {"labels": runtime_labels(kind, activation)}
    if pod_annotations:
        template_metadata["annotations"] = dict(sorted(pod_annotations.items()))
    spec: dict[str, Any] = {
        "replicas": 1,
        "selector": {"matchLabels": pod_selector(kind, activation)},
        "template": {"metadata": template_metadata, "spec": pod_spec},
    }
    if recreate:
        spec["strategy"] = {"type": "Recreate"}
    extra = {**(annotations or {}), SPEC_HASH_ANNOTATION: spec_hash(spec)}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(kind, activation, namespace, runtime_name(activation), field_manager, **extra),
        "spec": spec,
    }
    return DesiredObject.of(body)


def planned_hash(runtime: DirectRuntime) -> str:
    """The spec hash the planned Deployment carries. Pure."""
    deployment = next(o for o in runtime.objects if o.kind == "Deployment")
    return str(deployment.body["metadata"]["annotations"][SPEC_HASH_ANNOTATION])


def container_resources(
    *, cpu_request_millicores: int, cpu_limit_millicores: int, memory_mi: int, gpus: dict[str, int]
) -> dict[str, Any]:
    """Requests and limits of the runtime container: the resolved CPU policy (no CPU limit
    when it is 0), RAM request equal to its limit, whole GPUs as limits. Pure."""
    requests: dict[str, str] = {"cpu": f"{cpu_request_millicores}m", "memory": f"{memory_mi}Mi"}
    limits: dict[str, str] = {"memory": f"{memory_mi}Mi"}
    if cpu_limit_millicores > 0:
        limits["cpu"] = f"{cpu_limit_millicores}m"
    for resource, count in sorted(gpus.items()):
        if count > 0:
            limits[resource] = str(count)
    return {"requests": requests, "limits": limits}


def node_affinity(node: str | None) -> dict[str, Any]:
    """Linux nodes; exactly `node` when given (by name, not by a hostname label). Pure."""
    term: dict[str, Any] = {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}
    if node is not None:
        term["matchFields"] = [{"key": "metadata.name", "operator": "In", "values": [node]}]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def allocatable_mi(node: Node) -> int | None:
    """The node's allocatable memory in MiB, or None when it gives none we can read. Pure."""
    text = str(node.allocatable.get("memory", "")).strip()
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
    for suffix, factor in units.items():
        if text.endswith(suffix) and text[: -len(suffix)].isdigit():
            return int(int(text[: -len(suffix)]) * factor)
    return int(text) // (1024 * 1024) if text.isdigit() else None


def model_id(url: str) -> str:
    """The repository a `hf://<repository>` reference names: what the runtime loads. Pure."""
    return url.split("://", 1)[1] if "://" in url else url


@dataclass(frozen=True)
class RuntimeState:
    """Where a planned direct runtime stands, from what the cluster shows."""

    phase: Phase
    reason: Reason
    message: str
    serving: bool
    """The rollout is ready (and healthy where the runtime needs it): publish it to the catalog."""


def runtime_state(
    *, runtime: DirectRuntime, snapshot: Snapshot, published: frozenset[str], needs_health: bool
) -> RuntimeState:
    """The phase of a planned direct runtime: rollout, then upstream health, then the model
    catalog. Pure."""
    workload = observed_workload(snapshot, runtime.kind, runtime.namespace, runtime.activation)
    verdict = deployment_rollout(workload, planned_hash=planned_hash(runtime))
    if verdict.readiness is Readiness.FAILED:
        return RuntimeState(
            Phase.DEGRADED,
            Reason.ROLLOUT_FAILED,
            f"The runtime's rollout failed: {verdict.reason}: {verdict.message}",
            False,
        )
    if workload is None:
        return RuntimeState(
            Phase.STARTING,
            Reason.WAITING_FOR_ROLLOUT,
            f"The runtime's Deployment {runtime.namespace}/{runtime_name(runtime.activation)} is being created.",
            False,
        )
    if not verdict.ready:
        pods = snapshot.pods_labelled(runtime.namespace, pod_selector(runtime.kind, runtime.activation))
        if verdict.reason != Waiting.NOT_CURRENT and not [p for p in pods if not p.terminating]:
            return RuntimeState(
                Phase.STARTING, Reason.WAITING_FOR_POD, "The runtime's Deployment has no Pod yet.", False
            )
        waiting = next((f" Pod {p.meta.name}: {p.reason}: {p.message}".rstrip(": ") for p in pods if p.reason), "")
        return RuntimeState(
            Phase.STARTING,
            Reason.WAITING_FOR_ROLLOUT,
            f"Waiting for the runtime's rollout: {verdict.message}.{waiting}",
            False,
        )
    if needs_health:
        unhealthy = _health(snapshot, runtime)
        if unhealthy is not None:
            return RuntimeState(Phase.STARTING, Reason.WAITING_FOR_RUNTIME_HEALTH, unhealthy, False)
    if runtime.activation not in published:
        return RuntimeState(
            Phase.STARTING,
            Reason.WAITING_FOR_MODEL_CATALOG,
            "The runtime is ready; waiting for the model catalog to publish it.",
            True,
        )
    return RuntimeState(Phase.READY, Reason.READY, "Model is available in the generated model catalog.", True)


def _health(snapshot: Snapshot, runtime: DirectRuntime) -> str | None:
    """None when a Ready Pod answered /health; else why not, in words. Pure."""
    pods = [
        p for p in snapshot.pods_labelled(runtime.namespace, pod_selector(runtime.kind, runtime.activation)) if p.ready
    ]
    answers = [snapshot.health_of(runtime.namespace, p.meta.name) for p in pods]
    if any(a is not None and a.healthy for a in answers):
        return None
    failed = next((a for a in answers if a is not None), None)
    if failed is not None:
        return f"The runtime's /health did not answer healthy (Pod {failed.pod}: {failed.error})."
    return "The runtime's /health was not read this run; tried again on the next run."


def catalog_entry(*, activation: str, namespace: str, port: int, url: str, model_type: str = "chat") -> dict[str, Any]:
    """The generated model-list entry that makes a serving direct runtime routable through
    LiteLLM: a keyless in-cluster endpoint, reached over plain http. Pure."""
    base = f"http://{runtime_name(activation)}.{namespace}.svc.cluster.local:{port}/v1"
    return {"id": activation, "model": f"openai/{model_id(url)}", "modelType": model_type, "apiBase": base}
