"""The observed world: a typed, immutable view of everything the program reads.

A snapshot is built from raw Kubernetes objects, as `kubectl get -o yaml` prints them, by
`Snapshot.from_objects`. The live reader and the snapshot file both produce such objects;
planning never sees where they came from.

Invariant: a snapshot is complete or it does not exist. Whoever builds one has read every
kind it holds; an empty tuple means "none exist", never "could not read".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from api.meta import API_VERSION as APPLIANCE_API_VERSION
from planning.frozen import EMPTY, FrozenMap, freeze

FLUX_KUSTOMIZE_API_VERSION = "kustomize.toolkit.fluxcd.io/v1"
NFD_API_VERSION = "nfd.k8s-sigs.io/v1alpha1"
NFD_NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"

RUNTIME_KINDS = (
    "Appliance",
    "ModuleActivation",
    "ModelActivation",
    "AppInstance",
    "HostOperation",
    "ApplianceSetup",
)


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
        return self.meta.labels.get(NFD_NODE_NAME_LABEL, self.meta.name)


@dataclass(frozen=True)
class ConfigMap:
    meta: ObjectMeta
    data: FrozenMap = field(default_factory=lambda: EMPTY)


@dataclass(frozen=True)
class Snapshot:
    """Everything one run observed. Tuples are sorted by namespace and name."""

    runtime_objects: tuple[RuntimeObject, ...] = ()
    kustomizations: tuple[FluxKustomization, ...] = ()
    nodes: tuple[Node, ...] = ()
    node_features: tuple[NodeFeature, ...] = ()
    config_maps: tuple[ConfigMap, ...] = ()
    served_crds: frozenset[str] = field(default_factory=frozenset)

    def of_kind(self, kind: str, namespace: str) -> tuple[RuntimeObject, ...]:
        return tuple(
            obj for obj in self.runtime_objects if obj.kind == kind and obj.meta.namespace == namespace
        )

    def runtime_object(self, kind: str, namespace: str, name: str) -> RuntimeObject | None:
        return next(
            (obj for obj in self.of_kind(kind, namespace) if obj.meta.name == name),
            None,
        )

    def kustomization(self, namespace: str, name: str) -> FluxKustomization | None:
        return next(
            (k for k in self.kustomizations if k.meta.namespace == namespace and k.meta.name == name),
            None,
        )

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]]) -> Snapshot:
        """Build a snapshot from raw objects; kinds the program does not read are ignored.

        `List` objects are flattened. Raises SnapshotError naming the object when one lacks
        apiVersion, kind or metadata.name, or holds a field of the wrong shape.
        """
        runtime: list[RuntimeObject] = []
        kustomizations: list[FluxKustomization] = []
        nodes: list[Node] = []
        node_features: list[NodeFeature] = []
        config_maps: list[ConfigMap] = []
        crds: set[str] = set()
        for index, raw in enumerate(_flatten(objects)):
            identity = _identity(raw, index)
            api_version, kind = raw["apiVersion"], raw["kind"]
            meta = _meta(raw, identity)
            if api_version == APPLIANCE_API_VERSION and kind in RUNTIME_KINDS:
                runtime.append(
                    RuntimeObject(
                        kind=kind,
                        meta=meta,
                        spec=_mapping(raw, "spec", identity),
                        status=_mapping(raw, "status", identity),
                    )
                )
            elif api_version == FLUX_KUSTOMIZE_API_VERSION and kind == "Kustomization":
                kustomizations.append(_kustomization(raw, meta, identity))
            elif api_version == "v1" and kind == "Node":
                status = _mapping(raw, "status", identity)
                nodes.append(
                    Node(
                        meta=meta,
                        allocatable=status.get("allocatable", EMPTY),
                        capacity=status.get("capacity", EMPTY),
                        node_info=status.get("nodeInfo", EMPTY),
                    )
                )
            elif api_version == NFD_API_VERSION and kind == "NodeFeature":
                node_features.append(NodeFeature(meta=meta, spec=_mapping(raw, "spec", identity)))
            elif api_version == "v1" and kind == "ConfigMap":
                config_maps.append(ConfigMap(meta=meta, data=_mapping(raw, "data", identity)))
            elif kind == "CustomResourceDefinition" and api_version.startswith("apiextensions.k8s.io/"):
                if _crd_established(raw):
                    crds.add(meta.name)
        return cls(
            runtime_objects=tuple(sorted(runtime, key=_sort_key)),
            kustomizations=tuple(sorted(kustomizations, key=_sort_key)),
            nodes=tuple(sorted(nodes, key=_sort_key)),
            node_features=tuple(sorted(node_features, key=_sort_key)),
            config_maps=tuple(sorted(config_maps, key=_sort_key)),
            served_crds=frozenset(crds),
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
    namespace = metadata.get("namespace")
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


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
    )


def _mapping(raw: Mapping[str, Any], key: str, identity: str) -> FrozenMap:
    value = raw.get(key)
    if value is None:
        return EMPTY
    if not isinstance(value, Mapping):
        raise SnapshotError(identity, f"{key} must be a mapping")
    return freeze(value)


def _string_map(metadata: Mapping[str, Any], key: str, identity: str) -> FrozenMap:
    value = metadata.get(key)
    if value is None:
        return EMPTY
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise SnapshotError(identity, f"metadata.{key} must map strings to strings")
    return freeze(value)


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
