"""The observed world: a typed, immutable view of everything the program reads.

A snapshot is built from raw Kubernetes objects, as `kubectl get -o yaml` prints them, by
`Snapshot.from_objects`. The live reader and the snapshot file both produce such objects;
planning never sees where they came from.

Invariant: a snapshot is complete or it does not exist. Whoever builds one has read every
kind it holds; an empty tuple means "none exist", never "could not read". The one exception
is named, never silent: a namespace that only some objects target and whose LIST the server
refused is listed in `Snapshot.unreadable`, and nothing in it was read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from api import peer_kinds
from api.kinds import APPLIANCE_KINDS
from api.meta import API_VERSION
from planning.frozen import EMPTY, FrozenMap, freeze_map

APPLIANCE_API_VERSION = API_VERSION
"""The apiVersion of the runtime custom resources."""
FLUX_KUSTOMIZE_API_VERSION = peer_kinds.FLUX_KUSTOMIZATION.api_version
NFD_API_VERSION = peer_kinds.NODE_FEATURE.api_version
KUBEAI_API_VERSION = peer_kinds.KUBEAI_MODEL.api_version
NFD_NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"

RUNTIME_KINDS = tuple(kind.kind for kind in APPLIANCE_KINDS)


class SnapshotError(ValueError):
    """An object in the input cannot be read; `identity` names it (kind/namespace/name or index)."""

    def __init__(self, identity: str, message: str) -> None:
        super().__init__(f"{identity}: {message}")
        self.identity = identity
        self.message = message


@dataclass(frozen=True)
class ObjectMeta:
    name: str
    namespace: str | None = None
    uid: str | None = None
    generation: int = 0
    resource_version: str | None = None
    labels: FrozenMap = field(default_factory=lambda: EMPTY)
    annotations: FrozenMap = field(default_factory=lambda: EMPTY)
    creation_timestamp: str | None = None
    """metadata.creationTimestamp as the server wrote it (issue #11, point 6: which AppInstance came first)."""


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""
    observed_generation: int | None = None


@dataclass(frozen=True)
class RuntimeObject:
    """One appliance.magicstick.dev object: identity, raw spec and the status last written."""

    kind: str
    meta: ObjectMeta
    spec: FrozenMap = field(default_factory=lambda: EMPTY)
    status: FrozenMap = field(default_factory=lambda: EMPTY)

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.meta.namespace}/{self.meta.name}"


@dataclass(frozen=True)
class FluxKustomization:
    """A Flux Kustomization with the parts of its status that decide module readiness."""

    meta: ObjectMeta
    spec: FrozenMap
    conditions: tuple[Condition, ...] = ()
    observed_generation: int | None = None
    last_applied_revision: str | None = None

    def condition(self, condition_type: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == condition_type), None)


@dataclass(frozen=True)
class Node:
    meta: ObjectMeta
    allocatable: FrozenMap = field(default_factory=lambda: EMPTY)
    capacity: FrozenMap = field(default_factory=lambda: EMPTY)
    node_info: FrozenMap = field(default_factory=lambda: EMPTY)


@dataclass(frozen=True)
class NodeFeature:
    """Node Feature Discovery's raw features of one node (nfd.k8s-sigs.io/v1alpha1)."""

    meta: ObjectMeta
    spec: FrozenMap = field(default_factory=lambda: EMPTY)

    @property
    def node_name(self) -> str:
        return str(self.meta.labels.get(NFD_NODE_NAME_LABEL, self.meta.name))


@dataclass(frozen=True)
class KubeAIModel:
    """A KubeAI Model (kubeai.org/v1) and what its controller reports: replica counts, and
    whether its loader has put the weights into the Model's cache profile (status.cache.loaded)."""

    meta: ObjectMeta
    spec: FrozenMap = field(default_factory=lambda: EMPTY)
    replicas_all: int = 0
    replicas_ready: int = 0
    cache_loaded: bool = False


@dataclass(frozen=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False


@dataclass(frozen=True)
class Pod:
    """A Pod, as far as model lifecycles read it."""

    meta: ObjectMeta
    owners: tuple[OwnerReference, ...] = ()
    phase: str = "Pending"
    ready: bool = False
    terminating: bool = False
    reason: str = ""
    message: str = ""
    images: FrozenMap = field(default_factory=lambda: EMPTY)
    """Container name -> the image its spec names."""

    def controlled_by(self, uid: str | None) -> bool:
        return uid is not None and any(o.controller and o.uid == uid for o in self.owners)


# --- begin: Ollama probe outcome (issue #11, point 5; owned by providers/live_reader.py) ---
class OllamaProbe(StrEnum):
    """How the probe of one Ready Ollama Pod ended this run."""

    ANSWERED = "Answered"
    UNREACHABLE = "Unreachable"
    """Asked, and no usable answer came (timeout, 5xx, refused): `error` says why."""
    NOT_OBSERVED = "NotObserved"
    """Not asked, or not answered, within the run's probe budget: unknown this run, not broken."""


# --- end: Ollama probe outcome ---


@dataclass(frozen=True)
class OllamaObservation:
    """What one Ready Ollama Pod answered through the API server's pod proxy."""

    namespace: str
    pod: str
    tags: frozenset[str] = frozenset()
    ram_mi: int | None = None
    vram_mi: int | None = None
    total_mi: int | None = None
    error: str = ""
    probe: OllamaProbe = OllamaProbe.ANSWERED


@dataclass(frozen=True)
class GenericObject:
    """An object the program reads back whole: the HelmReleases and Gateway objects it generates,
    and the Pulumi Kubernetes Operator Stack it runs under (planning.operator)."""

    api_version: str
    kind: str
    meta: ObjectMeta
    spec: FrozenMap = field(default_factory=lambda: EMPTY)
    status: FrozenMap = field(default_factory=lambda: EMPTY)
    conditions: tuple[Condition, ...] = ()

    def condition(self, condition_type: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == condition_type), None)


GENERIC_KINDS = frozenset(
    (kind.api_version, kind.kind)
    for kind in (
        peer_kinds.HELM_RELEASE,
        peer_kinds.HTTP_ROUTE,
        peer_kinds.REFERENCE_GRANT,
        peer_kinds.REFERENCE_GRANT_V1,
        peer_kinds.SECURITY_POLICY,
        peer_kinds.STACK,
        peer_kinds.RESOURCE_CLAIM,
        peer_kinds.RESOURCE_SLICE,
    )
)


@dataclass(frozen=True)
class ConfigMap:
    meta: ObjectMeta
    data: FrozenMap = field(default_factory=lambda: EMPTY)


@dataclass(frozen=True)
class Workload:
    """A Deployment of a direct runtime (apps/v1), with the rollout counts its controller reports."""

    meta: ObjectMeta
    spec: FrozenMap = field(default_factory=lambda: EMPTY)
    observed_generation: int | None = None
    replicas: int = 0
    updated_replicas: int = 0
    available_replicas: int = 0
    conditions: tuple[Condition, ...] = ()

    @property
    def desired_replicas(self) -> int:
        """spec.replicas, which the API server defaults to 1."""
        value = self.spec.get("replicas", 1)
        return value if isinstance(value, int) else 1


@dataclass(frozen=True)
class HealthObservation:
    """What one Ready Pod of a direct runtime answered on its upstream health endpoint."""

    namespace: str
    pod: str
    healthy: bool
    error: str = ""


# --- begin: unreadable namespaces (issue #11, point 4; owned by providers/live_reader.py) ---
UNREADABLE_FIELDS = ("namespace", "apiVersion", "kind", "resource", "verb", "message")
"""The wire form of an UnreadableNamespace (a snapshot file records it in a List annotation)."""


@dataclass(frozen=True)
class UnreadableNamespace:
    """A namespace that only some objects target, whose LIST the server refused (403).

    Nothing in it was read: its KubeAI Models, Pods, ReferenceGrants and direct runtimes
    (Deployments, ConfigMaps) are unknown, not
    absent. `resource` is the refused resource as RBAC names it (`models.kubeai.org`, `pods`),
    `verb` the refused verb, `message` the server's Status (`403 Forbidden: ...`).
    """

    namespace: str
    api_version: str
    kind: str
    resource: str
    verb: str
    message: str

    @property
    def permission(self) -> str:
        """The missing permission in words: `list models.kubeai.org in namespace team-x`."""
        return f"{self.verb} {self.resource} in namespace {self.namespace}"

    def to_wire(self) -> dict[str, str]:
        """Pure."""
        values = (self.namespace, self.api_version, self.kind, self.resource, self.verb, self.message)
        return dict(zip(UNREADABLE_FIELDS, values, strict=True))

    @classmethod
    def from_wire(cls, raw: Any, identity: str) -> UnreadableNamespace:
        """Pure. Raises SnapshotError naming `identity` when a field is missing or not a string."""
        if not isinstance(raw, Mapping):
            raise SnapshotError(identity, "an unreadable namespace must be a mapping")
        missing = [key for key in UNREADABLE_FIELDS if not isinstance(raw.get(key), str) or not raw.get(key)]
        if missing:
            raise SnapshotError(identity, f"an unreadable namespace needs {', '.join(missing)} (non-empty strings)")
        return cls(*(str(raw[key]) for key in UNREADABLE_FIELDS))


UNREADABLE_ANNOTATION = "appliance.magicstick.dev/unreadable-namespaces"
"""On a snapshot file's List: a JSON array of UnreadableNamespace wire forms (magicstick snapshot)."""


def json_array_annotation(value: Any, annotation: str, identity: str) -> list[Any]:
    """Pure. The JSON array a List annotation of a snapshot file holds; SnapshotError naming
    `identity` and `annotation` otherwise."""
    try:
        listed = json.loads(value) if isinstance(value, str) else None
    except json.JSONDecodeError as error:
        raise SnapshotError(identity, f"annotation {annotation} is not JSON: {error.msg}") from error
    if not isinstance(listed, list):
        raise SnapshotError(identity, f"annotation {annotation} must be a JSON array")
    return listed


def unreadable_from_annotation(value: Any, identity: str) -> tuple[UnreadableNamespace, ...]:
    """Pure. The records an UNREADABLE_ANNOTATION value holds; SnapshotError naming `identity` otherwise."""
    listed = json_array_annotation(value, UNREADABLE_ANNOTATION, identity)
    return tuple(UnreadableNamespace.from_wire(raw, identity) for raw in listed)


# --- end: unreadable namespaces ---


APPLIED_BY_NAME_LABEL = "kustomize.toolkit.fluxcd.io/name"
APPLIED_BY_NAMESPACE_LABEL = "kustomize.toolkit.fluxcd.io/namespace"
"""The labels kustomize-controller sets on every object a Kustomization applies."""


@dataclass(frozen=True)
class Snapshot:
    """Everything one run observed. Tuples are sorted by namespace and name."""

    runtime_objects: tuple[RuntimeObject, ...] = ()
    kustomizations: tuple[FluxKustomization, ...] = ()
    nodes: tuple[Node, ...] = ()
    node_features: tuple[NodeFeature, ...] = ()
    config_maps: tuple[ConfigMap, ...] = ()
    models: tuple[KubeAIModel, ...] = ()
    pods: tuple[Pod, ...] = ()
    generated: tuple[GenericObject, ...] = ()
    ollama: tuple[OllamaObservation, ...] = ()
    workloads: tuple[Workload, ...] = ()
    health: tuple[HealthObservation, ...] = ()
    """Health answers of Ready direct-runtime Pods; a Pod not listed was not asked this run."""
    served_crds: frozenset[str] = field(default_factory=frozenset)
    unreadable: tuple[UnreadableNamespace, ...] = ()
    """Namespaces only some objects target whose read the server refused; sorted by namespace."""
    served_apis: frozenset[str] = field(default_factory=frozenset)
    """Built-in APIs the cluster serves that only some features need, as
    `<plural>.<group>/<version>` (OPTIONAL_APIS); a snapshot file records them in a List annotation."""

    def unreadable_namespace(self, namespace: str) -> UnreadableNamespace | None:
        """Why `namespace` could not be read this run, or None when it was read (or never needed)."""
        return next((u for u in self.unreadable if u.namespace == namespace), None)

    def of_kind(self, kind: str, namespace: str) -> tuple[RuntimeObject, ...]:
        return tuple(obj for obj in self.runtime_objects if obj.kind == kind and obj.meta.namespace == namespace)

    def runtime_object(self, kind: str, namespace: str, name: str) -> RuntimeObject | None:
        return next(
            (obj for obj in self.of_kind(kind, namespace) if obj.meta.name == name),
            None,
        )

    def generic(self, kind: str, namespace: str, name: str) -> GenericObject | None:
        return next(
            (o for o in self.generated if o.kind == kind and o.meta.namespace == namespace and o.meta.name == name),
            None,
        )

    def model(self, namespace: str, name: str) -> KubeAIModel | None:
        return next((m for m in self.models if m.meta.namespace == namespace and m.meta.name == name), None)

    def config_map(self, namespace: str, name: str) -> ConfigMap | None:
        return next((c for c in self.config_maps if c.meta.namespace == namespace and c.meta.name == name), None)

    def pods_of(self, model: KubeAIModel) -> tuple[Pod, ...]:
        return tuple(
            p for p in self.pods if p.meta.namespace == model.meta.namespace and p.controlled_by(model.meta.uid)
        )

    def ollama_of(self, namespace: str, pod: str) -> OllamaObservation | None:
        return next((o for o in self.ollama if o.namespace == namespace and o.pod == pod), None)

    def health_of(self, namespace: str, pod: str) -> HealthObservation | None:
        return next((h for h in self.health if h.namespace == namespace and h.pod == pod), None)

    def pods_labelled(self, namespace: str, selector: Mapping[str, str]) -> tuple[Pod, ...]:
        """The Pods of `namespace` whose labels include every pair of `selector`."""
        return tuple(
            p
            for p in self.pods
            if p.meta.namespace == namespace and all(p.meta.labels.get(k) == v for k, v in selector.items())
        )

    def kustomization(self, namespace: str, name: str) -> FluxKustomization | None:
        return next(
            (k for k in self.kustomizations if k.meta.namespace == namespace and k.meta.name == name),
            None,
        )

    def released_by(self, namespace: str, kustomization: str) -> tuple[GenericObject, ...]:
        """The HelmReleases Flux Kustomization `namespace/kustomization` applied: those that
        kustomize-controller labelled with its name and namespace (`APPLIED_BY_NAME_LABEL`)."""
        return tuple(
            g
            for g in self.generated
            if (g.api_version, g.kind) == (peer_kinds.HELM_RELEASE.api_version, peer_kinds.HELM_RELEASE.kind)
            and g.meta.labels.get(APPLIED_BY_NAME_LABEL) == kustomization
            and g.meta.labels.get(APPLIED_BY_NAMESPACE_LABEL) == namespace
        )

    @classmethod
    def from_objects(
        cls,
        objects: Iterable[Mapping[str, Any]],
        ollama: Iterable[OllamaObservation] = (),
        unreadable: Iterable[UnreadableNamespace] = (),
        health: Iterable[HealthObservation] = (),
        served_apis: Iterable[str] = (),
    ) -> Snapshot:
        """Build a snapshot from raw objects; kinds the program does not read are ignored.

        `List` objects are flattened. Raises SnapshotError naming the object when one lacks
        apiVersion, kind or metadata.name, or holds a field of the wrong shape.
        """
        found = _Found()
        seen: dict[tuple[str, str], int] = {}
        for index, raw in enumerate(_flatten(objects)):
            identity = _identity(raw, index)
            _refuse_a_second_copy(raw, identity, index, seen)
            found.add(raw, _meta(raw, identity), identity)
        return cls(
            runtime_objects=tuple(sorted(found.runtime, key=_sort_key)),
            kustomizations=tuple(sorted(found.kustomizations, key=_sort_key)),
            nodes=tuple(sorted(found.nodes, key=_sort_key)),
            node_features=tuple(sorted(found.node_features, key=_sort_key)),
            config_maps=tuple(sorted(found.config_maps, key=_sort_key)),
            models=tuple(sorted(found.models, key=_sort_key)),
            pods=tuple(sorted(found.pods, key=_sort_key)),
            generated=tuple(sorted(found.generated, key=lambda o: (o.kind, o.meta.namespace or "", o.meta.name))),
            ollama=tuple(sorted(ollama, key=lambda o: (o.namespace, o.pod))),
            workloads=tuple(sorted(found.workloads, key=_sort_key)),
            health=tuple(sorted(health, key=lambda h: (h.namespace, h.pod))),
            served_crds=frozenset(found.crds),
            unreadable=tuple(sorted(unreadable, key=lambda u: u.namespace)),
            served_apis=frozenset(served_apis),
        )


@dataclass
class _Found:
    """The objects of one snapshot, by what the program reads them as, in the order they came."""

    runtime: list[RuntimeObject] = field(default_factory=list)
    kustomizations: list[FluxKustomization] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    node_features: list[NodeFeature] = field(default_factory=list)
    config_maps: list[ConfigMap] = field(default_factory=list)
    models: list[KubeAIModel] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    generated: list[GenericObject] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    crds: set[str] = field(default_factory=set)

    def add(self, raw: Mapping[str, Any], meta: ObjectMeta, identity: str) -> None:
        """Keep `raw` as the type the program reads its kind as; a kind it does not read is left out."""
        api_version, kind = raw["apiVersion"], raw["kind"]
        if api_version == APPLIANCE_API_VERSION and kind in RUNTIME_KINDS:
            self.runtime.append(
                RuntimeObject(
                    kind=kind, meta=meta, spec=_mapping(raw, "spec", identity), status=_mapping(raw, "status", identity)
                )
            )
        elif api_version == FLUX_KUSTOMIZE_API_VERSION and kind == peer_kinds.FLUX_KUSTOMIZATION.kind:
            self.kustomizations.append(_kustomization(raw, meta, identity))
        elif api_version == "v1" and kind == "Node":
            self.nodes.append(_node(raw, meta, identity))
        elif api_version == NFD_API_VERSION and kind == peer_kinds.NODE_FEATURE.kind:
            self.node_features.append(NodeFeature(meta=meta, spec=_mapping(raw, "spec", identity)))
        elif api_version == KUBEAI_API_VERSION and kind == peer_kinds.KUBEAI_MODEL.kind:
            self.models.append(_kubeai_model(raw, meta, identity))
        elif (api_version, kind) in GENERIC_KINDS:
            self.generated.append(_generic(raw, meta, identity))
        elif api_version == "apps/v1" and kind == "Deployment":
            self.workloads.append(_workload(raw, meta, identity))
        elif api_version == "v1" and kind == "Pod":
            self.pods.append(_pod(raw, meta, identity))
        elif api_version == "v1" and kind == "ConfigMap":
            self.config_maps.append(ConfigMap(meta=meta, data=_mapping(raw, "data", identity)))
        elif (
            kind == "CustomResourceDefinition"
            and api_version.startswith("apiextensions.k8s.io/")
            and _crd_established(raw)
        ):
            self.crds.add(meta.name)


def _node(raw: Mapping[str, Any], meta: ObjectMeta, identity: str) -> Node:
    status = _mapping(raw, "status", identity)
    return Node(
        meta=meta,
        allocatable=status.get("allocatable", EMPTY),
        capacity=status.get("capacity", EMPTY),
        node_info=status.get("nodeInfo", EMPTY),
    )


def _generic(raw: Mapping[str, Any], meta: ObjectMeta, identity: str) -> GenericObject:
    status = _mapping(raw, "status", identity)
    return GenericObject(
        api_version=raw["apiVersion"],
        kind=raw["kind"],
        meta=meta,
        spec=_mapping(raw, "spec", identity),
        status=status,
        conditions=_conditions(status, identity),
    )


def _flatten(objects: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    for index, raw in enumerate(objects):
        if raw is None:
            continue
        if not isinstance(raw, Mapping):
            raise SnapshotError(f"document {index}", "is not a Kubernetes object (expected a mapping)")
        if raw.get("kind") == "List" or str(raw.get("kind", "")).endswith("List") and "items" in raw:
            items = raw.get("items") or []
            if not isinstance(items, list):
                raise SnapshotError(f"document {index}", "List.items must be a sequence")
            yield from _flatten(items)
        else:
            yield raw


def _identity(raw: Mapping[str, Any], index: int) -> str:
    kind = raw.get("kind")
    metadata = raw.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(raw.get("apiVersion"), str) or not raw.get("apiVersion"):
        raise SnapshotError(f"object {index} ({kind or 'no kind'})", "apiVersion is missing")
    if not isinstance(kind, str) or not kind:
        raise SnapshotError(f"object {index}", "kind is missing")
    if not isinstance(name, str) or not name:
        raise SnapshotError(f"object {index} ({kind})", "metadata.name is missing")
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def _refuse_a_second_copy(raw: Mapping[str, Any], identity: str, index: int, seen: dict[tuple[str, str], int]) -> None:
    """A cluster holds one object per API group, kind, namespace and name, whatever the version."""
    group = raw["apiVersion"].rpartition("/")[0]
    key = (group, identity)
    if key in seen:
        raise SnapshotError(f"object {index} ({identity})", f"appears twice (first as object {seen[key]})")
    seen[key] = index


def _meta(raw: Mapping[str, Any], identity: str) -> ObjectMeta:
    metadata = raw["metadata"]
    generation = metadata.get("generation", 0)
    if not isinstance(generation, int):
        raise SnapshotError(identity, "metadata.generation must be an integer")
    return ObjectMeta(
        name=metadata["name"],
        namespace=metadata.get("namespace"),
        uid=metadata.get("uid"),
        generation=generation,
        resource_version=metadata.get("resourceVersion"),
        labels=_string_map(metadata, "labels", identity),
        annotations=_string_map(metadata, "annotations", identity),
        creation_timestamp=str(metadata["creationTimestamp"])
        if metadata.get("creationTimestamp") is not None
        else None,
    )


def _mapping(raw: Mapping[str, Any], key: str, identity: str) -> FrozenMap:
    value = raw.get(key)
    if value is None:
        return EMPTY
    if not isinstance(value, Mapping):
        raise SnapshotError(identity, f"{key} must be a mapping")
    return freeze_map(value)


def _string_map(metadata: Mapping[str, Any], key: str, identity: str) -> FrozenMap:
    value = metadata.get(key)
    if value is None:
        return EMPTY
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise SnapshotError(identity, f"metadata.{key} must map strings to strings")
    return freeze_map(value)


def _conditions(status: Mapping[str, Any], identity: str) -> tuple[Condition, ...]:
    raw_conditions = status.get("conditions") or ()
    if not isinstance(raw_conditions, (list, tuple)):
        raise SnapshotError(identity, "status.conditions must be a sequence")
    conditions = []
    for raw in raw_conditions:
        if not isinstance(raw, Mapping) or "type" not in raw or "status" not in raw:
            raise SnapshotError(identity, "status.conditions entries need type and status")
        conditions.append(
            Condition(
                type=str(raw["type"]),
                status=str(raw["status"]),
                reason=str(raw.get("reason", "")),
                message=str(raw.get("message", "")),
                last_transition_time=str(raw.get("lastTransitionTime", "")),
                observed_generation=raw.get("observedGeneration"),
            )
        )
    return tuple(conditions)


def _kustomization(raw: Mapping[str, Any], meta: ObjectMeta, identity: str) -> FluxKustomization:
    status = _mapping(raw, "status", identity)
    return FluxKustomization(
        meta=meta,
        spec=_mapping(raw, "spec", identity),
        conditions=_conditions(status, identity),
        observed_generation=status.get("observedGeneration"),
        last_applied_revision=status.get("lastAppliedRevision"),
    )


def _kubeai_model(raw: Mapping[str, Any], meta: ObjectMeta, identity: str) -> KubeAIModel:
    status = _mapping(raw, "status", identity)
    replicas = status.get("replicas") or {}
    cache = status.get("cache") or {}
    return KubeAIModel(
        meta=meta,
        spec=_mapping(raw, "spec", identity),
        replicas_all=int(replicas.get("all") or 0),
        replicas_ready=int(replicas.get("ready") or 0),
        cache_loaded=isinstance(cache, Mapping) and cache.get("loaded") is True,
    )


def _workload(raw: Mapping[str, Any], meta: ObjectMeta, identity: str) -> Workload:
    status = _mapping(raw, "status", identity)

    def count(key: str) -> int:
        value = status.get(key, 0)
        if not isinstance(value, int):
            raise SnapshotError(identity, f"status.{key} must be an integer")
        return value

    observed = status.get("observedGeneration")
    if observed is not None and not isinstance(observed, int):
        raise SnapshotError(identity, "status.observedGeneration must be an integer")
    return Workload(
        meta=meta,
        spec=_mapping(raw, "spec", identity),
        observed_generation=observed,
        replicas=count("replicas"),
        updated_replicas=count("updatedReplicas"),
        available_replicas=count("availableReplicas"),
        conditions=_conditions(status, identity),
    )


def _pod(raw: Mapping[str, Any], meta: ObjectMeta, identity: str) -> Pod:
    status = _mapping(raw, "status", identity)
    owners = []
    for owner in raw["metadata"].get("ownerReferences") or ():
        if not isinstance(owner, Mapping) or not {"apiVersion", "kind", "name", "uid"} <= set(owner):
            raise SnapshotError(identity, "metadata.ownerReferences entries need apiVersion, kind, name and uid")
        owners.append(
            OwnerReference(
                api_version=str(owner["apiVersion"]),
                kind=str(owner["kind"]),
                name=str(owner["name"]),
                uid=str(owner["uid"]),
                controller=bool(owner.get("controller")),
            )
        )
    ready = any(c.type == "Ready" and c.status == "True" for c in _conditions(status, identity))
    return Pod(
        meta=meta,
        owners=tuple(owners),
        phase=str(status.get("phase") or "Pending"),
        ready=ready,
        terminating=bool(raw["metadata"].get("deletionTimestamp")),
        reason=str(status.get("reason") or ""),
        message=str(status.get("message") or ""),
        images=_container_images(raw, identity),
    )


def _container_images(raw: Mapping[str, Any], identity: str) -> FrozenMap:
    containers = _mapping(raw, "spec", identity).get("containers") or ()
    if not isinstance(containers, (list, tuple)) or not all(isinstance(c, Mapping) for c in containers):
        raise SnapshotError(identity, "spec.containers must be a list of objects")
    return freeze_map({str(c.get("name") or ""): str(c.get("image") or "") for c in containers})


def _crd_established(raw: Mapping[str, Any]) -> bool:
    """A CRD counts as served once Established; a CRD printed without status counts too."""
    status = raw.get("status")
    if not isinstance(status, Mapping) or not status.get("conditions"):
        return True
    return any(
        isinstance(c, Mapping) and c.get("type") == "Established" and c.get("status") == "True"
        for c in status["conditions"]
    )


def _sort_key(obj: Any) -> tuple[str, str, str]:
    kind = getattr(obj, "kind", "")
    return (kind, obj.meta.namespace or "", obj.meta.name)
