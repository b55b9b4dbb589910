"""What the trigger watches, and which changes of it can alter the plan. PURE.

One watch per kind and namespace, mirroring the LISTs of providers/live_reader.py `reads()`
(same kinds, namespaces and label selectors):

| Kind                                    | Namespace                  | Selector                            | Counts                |
|-----------------------------------------|----------------------------|-------------------------------------|-----------------------|
| Appliance, ModuleActivation,            | system                     |                                     | spec and metadata     |
| ModelActivation, AppInstance            |                            |                                     |                       |
| HostOperation                           | system                     |                                     | spec, metadata, phase |
| ApplianceSetup                          | identity-system            |                                     | spec and metadata     |
| Node                                    | (cluster)                  |                                     | node inventory        |
| Kustomization (Flux)                    | flux-system                |                                     | every change          |
| HelmRelease (Flux)                      | system                     |                                     | every change          |
| ConfigMap (the shared settings, stores) | flux-system, system        |                                     | every change          |
| HTTPRoute, SecurityPolicy               | gateway                    |                                     | every change          |
| Model (KubeAI)                          | each target                |                                     | every change          |
| Pod (KubeAI model Pods)                 | each target                | `model`                             | every change          |
| Pod, Deployment (direct runtimes)       | each target                | `appliance.magicstick.dev/runtime`  | every change          |

What counts as a change, by sensitivity:

- every change: any ADDED, MODIFIED or DELETED event. Controllers' status writes count: a
  Kustomization becoming Ready, a Pod becoming Ready is what the plan waits for.
- spec and metadata (the runtime resources): `metadata.generation` (the spec), labels,
  annotations and deletion. A MODIFIED event that changes none of them is a status write: the
  program writes these statuses itself (through /status, field manager `magicstick-status`),
  and its own report cannot alter its plan.
- spec, metadata and phase (HostOperation): as spec and metadata, and `status.phase`, which the
  host agent writes. A clear-model-cache that ends releases the model runtimes the plan defers
  while it runs: the next run must come then, not at the Stack's resync. The phase counts as
  spec (`classify`), so it is requested at once, never held back as churn; the host agent's
  other status writes (progress, evidence) do not count.
- node inventory: labels (the NFD `feature.node.kubernetes.io/*` ones and every other),
  `appliance.magicstick.dev/*` annotations (host evidence), and what the plan reads of the
  status: `allocatable` (extended resources), `capacity` (memory) and `nodeInfo` (operating
  system, architecture). A kubelet heartbeat (conditions, images, addresses) does not count.

ADDED and DELETED always count. A MODIFIED event of an object the watch had not seen counts.

Which of the changes that count are churn (`classify`), requested with a growing backoff
(debounce.py says how) rather than at once:

- spec: an object created or deleted, or a modification of anything but its `status` (a spec
  edit, `metadata.generation`, labels, annotations, finalizers, deletion, a ConfigMap's data).
  It is what someone wrote: a user, the program, a controller's own spec write.
- churn: a modification of `status` alone: a Pod's phase, readiness or restart count, a Flux
  object's conditions, a Model's replicas, a Deployment's rollout, a Node's allocatable. A
  crash-looping Pod writes such a status every few seconds, for ever.

Why classify here rather than ask PKO whether the last run changed anything: PKO v2 does not
say. The Stack's `status.lastUpdate` (operator/api/pulumi/shared/stack_types.go,
StackUpdateState) holds the update's name, type, state (`succeeded` or `failed`), message,
commits, permalink, resync time and failures; the Update's status (operator/api/auto/v1alpha1,
UpdateStatus) its times, message, outputs Secret and conditions; the agent copies only the
result, message and times of the engine's summary (agent/pkg/server/server.go,
marshalUpdateSummary), never its resource changes. A run that changed nothing looks the same
as one that changed everything.

Not watched, though the reader lists them: CustomResourceDefinitions, NodeFeatures,
ReferenceGrants, the access guard's Deployment in the gateway namespace and the direct
runtimes' ConfigMaps. The Stack's periodic resync (every 300 s) covers them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from api.model_runtimes import RUNTIME_LABEL
from providers.kinds import (
    CONFIG_MAP,
    DEPLOYMENT,
    HELM_RELEASE,
    HOST_OPERATION,
    HTTP_ROUTE,
    KUBEAI_MODEL,
    KUSTOMIZATION,
    NODE,
    POD,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    SECURITY_POLICY,
    appliance_kinds_at,
)
from providers.kube import EventType, ResourceKind

FLUX_NAMESPACE: Final = "flux-system"
"""planning.settings.FLUX_NAMESPACE (a test holds them equal: services cannot import planning)."""
MODEL_POD_SELECTOR: Final = "model"
"""KubeAI labels every model Pod `model: <Model name>` (live_reader.MODEL_POD_SELECTOR)."""
DEFAULT_MODEL_NAMESPACE: Final = "ai"
"""Where GPU sharing's shared claim lives (live_reader.DEFAULT_MODEL_NAMESPACE)."""
KUBEAI_NAMESPACE: Final = "ai"
"""Where KubeAI runs (planning.hardware.runtime_adoption.KUBEAI_NAMESPACE)."""
KUBEAI_CONFIG_SELECTOR: Final = "app.kubernetes.io/name=kubeai,app.kubernetes.io/instance=kubeai"
"""KubeAI's own configuration (live_reader.KUBEAI_CONFIG_SELECTOR): its AMD images decide runtimeReady."""
MANAGED_SELECTOR: Final = "app.kubernetes.io/managed-by=magicstick"
"""Objects the program created itself (live_reader.MANAGED_SELECTOR)."""
RUNTIME_SELECTOR: Final = RUNTIME_LABEL
"""The label key of every direct runtime's objects (api/model_runtimes.py, as the program labels them)."""
NODE_ANNOTATION_PREFIX: Final = "appliance.magicstick.dev/"
NODE_STATUS_FIELDS: Final = ("allocatable", "capacity", "nodeInfo")
"""What the plan reads of a Node's status."""
SERVER_WRITTEN_METADATA: Final = ("resourceVersion", "managedFields")
"""Metadata the server moves on every write, status writes included."""


class ChangeClass(StrEnum):
    """Whose change it is: what someone wrote (requested at once), or status churn (backed off)."""

    SPEC = "spec"
    CHURN = "churn"


class Sensitivity(StrEnum):
    EVERY_CHANGE = "every change"
    SPEC_AND_METADATA = "spec and metadata"
    SPEC_METADATA_AND_PHASE = "spec, metadata and phase"
    NODE_INVENTORY = "node inventory"


DECISIVE_STATUS: Final[Mapping[Sensitivity, tuple[str, ...]]] = {Sensitivity.SPEC_METADATA_AND_PHASE: ("phase",)}
"""Status fields another party writes that decide what the plan does: they count, as spec."""


@dataclass(frozen=True)
class WatchTarget:
    """One watch: a kind, in one namespace or (namespace None) across the cluster."""

    kind: ResourceKind
    namespace: str | None = None
    label_selector: str | None = None
    sensitivity: Sensitivity = Sensitivity.EVERY_CHANGE

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        selected = f" ({self.label_selector})" if self.label_selector else ""
        return f"{self.kind.kind}{where}{selected}"


def watch_targets(
    *, system_namespace: str, target_namespaces: Iterable[str], gateway_namespace: str
) -> tuple[WatchTarget, ...]:
    """Every watch, in a fixed order, each once. Pure."""
    targets = [
        *(
            WatchTarget(kind, namespace, sensitivity=_appliance_sensitivity(kind))
            for kind, namespace in appliance_kinds_at(system_namespace)
        ),
        WatchTarget(NODE, sensitivity=Sensitivity.NODE_INVENTORY),
        WatchTarget(KUSTOMIZATION, FLUX_NAMESPACE),
        WatchTarget(CONFIG_MAP, FLUX_NAMESPACE),
        WatchTarget(CONFIG_MAP, system_namespace),
        WatchTarget(HELM_RELEASE, system_namespace),
        WatchTarget(HELM_RELEASE, FLUX_NAMESPACE),
        WatchTarget(CONFIG_MAP, KUBEAI_NAMESPACE, KUBEAI_CONFIG_SELECTOR),
        WatchTarget(HTTP_ROUTE, gateway_namespace),
        WatchTarget(SECURITY_POLICY, gateway_namespace),
        WatchTarget(RESOURCE_SLICE),
        WatchTarget(RESOURCE_CLAIM, DEFAULT_MODEL_NAMESPACE, MANAGED_SELECTOR),
    ]
    for namespace in sorted(set(target_namespaces)):
        targets += [
            WatchTarget(KUBEAI_MODEL, namespace),
            WatchTarget(POD, namespace, MODEL_POD_SELECTOR),
            WatchTarget(DEPLOYMENT, namespace, RUNTIME_SELECTOR),
            WatchTarget(POD, namespace, RUNTIME_SELECTOR),
        ]
    return tuple(dict.fromkeys(targets))


def runtime_namespaces(targets: Iterable[WatchTarget]) -> tuple[str, ...]:
    """The namespaces whose direct runtimes `targets` watch (their Deployments): where the
    runtime cleanup acts (cleanup.py), and where the trigger's RBAC lets it delete. Pure."""
    return tuple(
        sorted(
            {
                t.namespace
                for t in targets
                if t.kind == DEPLOYMENT and t.label_selector == RUNTIME_SELECTOR and t.namespace is not None
            }
        )
    )


def _appliance_sensitivity(kind: ResourceKind) -> Sensitivity:
    if kind == HOST_OPERATION:
        return Sensitivity.SPEC_METADATA_AND_PHASE
    return Sensitivity.SPEC_AND_METADATA


def _decisive_status(sensitivity: Sensitivity, obj: Mapping[str, Any]) -> list[object]:
    status = obj.get("status") or {}
    return [status.get(field) for field in DECISIVE_STATUS.get(sensitivity, ())]


def fingerprint(sensitivity: Sensitivity, obj: Mapping[str, Any]) -> str:
    """What of `obj` can alter the plan, as one comparable string. Pure.

    Two versions of an object with equal fingerprints are the same to the plan.
    """
    metadata = obj.get("metadata") or {}
    if sensitivity is Sensitivity.EVERY_CHANGE:
        return str(metadata.get("resourceVersion") or "")
    deleting = metadata.get("deletionTimestamp")
    if sensitivity in (Sensitivity.SPEC_AND_METADATA, Sensitivity.SPEC_METADATA_AND_PHASE):
        return _canonical(
            [
                metadata.get("generation"),
                metadata.get("labels") or {},
                metadata.get("annotations") or {},
                deleting,
                *_decisive_status(sensitivity, obj),
            ]
        )
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k.startswith(NODE_ANNOTATION_PREFIX)}
    status = obj.get("status") or {}
    return _canonical(
        [metadata.get("labels") or {}, annotations, [status.get(field) for field in NODE_STATUS_FIELDS], deleting]
    )


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def counts(event: EventType, previous: str | None, current: str) -> bool:
    """Whether an event can alter the plan, from the fingerprints before and after it. Pure.

    ADDED and DELETED always count; MODIFIED counts when the fingerprint moved, or when the
    watch had not seen the object before (nothing to compare with); BOOKMARK never does.
    """
    if event is EventType.BOOKMARK:
        return False
    if event in (EventType.ADDED, EventType.DELETED):
        return True
    return previous is None or previous != current


def spec_fingerprint(obj: Mapping[str, Any], sensitivity: Sensitivity = Sensitivity.EVERY_CHANGE) -> str:
    """A digest of `obj` without its `status` (but the status fields `sensitivity` holds decisive)
    and the metadata the server moves on every write: it moves with a spec, metadata or data
    change, never with a status write alone. Pure."""
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_WRITTEN_METADATA}
    rest = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    return hashlib.sha256(_canonical([metadata, rest, *_decisive_status(sensitivity, obj)]).encode()).hexdigest()


def classify(event: EventType, previous: str | None, current: str) -> ChangeClass:
    """Whether a change that counts is spec or churn, from the spec fingerprints before and after. Pure.

    Creation and deletion are spec; so is a modification of an object the watch had not seen
    (nothing to compare with). A modification that leaves the spec fingerprint alone is churn.
    """
    if event is EventType.MODIFIED and previous is not None and previous == current:
        return ChangeClass.CHURN
    return ChangeClass.SPEC
