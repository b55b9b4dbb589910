"""GPU sharing: one node's GPUs split into model slots, and the transitions between modes.

`gpuSharing` on ModuleActivation/gpu (NVIDIA: exclusive or time-slicing) and
ModuleActivation/amd-gpu (AMD: exclusive or dra-shared) selects one node by name and UID and
a mode. The vendor modules (nvidia_sharing, amd_sharing) say what the cluster shows and what
to declare; this module decides, per vendor, every run:

1. the allocation the cluster shows now (`applied`: the node's device-plugin label for NVIDIA,
   the DeviceConfig and the shared claim for AMD) and whether the node confirms it (the
   advertised slot count, the DRA devices);
2. the phase: `Default` (no gpuSharing and nothing of ours applied: nothing is managed and
   the device plugin keeps its default), `Active` (applied equals desired and confirmed),
   `Draining` (desired differs and a runtime of this vendor still has Pods), `Applying`
   (nothing of this vendor runs any more: the desired allocation is declared, and the program
   waits for the node to confirm it), or a refusal that changes nothing (`NodeNotFound`,
   `Conflict`, `Unsupported`);
3. which activations of the vendor may run: none while Draining or Applying (their KubeAI
   Models and Deployments stay, scaled to zero, so settings and downloaded data survive);
   in a shared allocation at most `slot_limit`, the running ones first, then by name.

Invariants: every decision comes from the cluster as observed, so a transition interrupted
by a restart resumes where the cluster stands; only this vendor's runtimes are drained; the
vendor's operator (driver, ClusterPolicy, DeviceConfig) stays installed throughout.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from api.modules import GpuSharing
from api.status import GpuSharingStatus
from api.validation import SpecError
from catalogs import Catalogs
from planning.frozen import thaw
from planning.intent import Intent, Parsed
from planning.models.direct import RUNTIME_LABEL
from planning.models.kubeai import ACTIVATION_LABEL, kept_model
from planning.objects import DesiredObject
from planning.reasons import listed
from planning.snapshot import KubeAIModel, Pod, Snapshot, Workload

DRAINED_ANNOTATION = "appliance.magicstick.dev/drained-for"
"""On a KubeAI Model or Deployment scaled to zero for a sharing transition: the transition."""
LISTED_MODELS = 16
"""admittedModels names at most this many activations; admittedModelCount counts them all."""
EXCLUSIVE = "exclusive"


class SharingPhase(StrEnum):
    DEFAULT = "Default"
    ACTIVE = "Active"
    DRAINING = "Draining"
    APPLYING = "Applying"
    NODE_NOT_FOUND = "NodeNotFound"
    CONFLICT = "Conflict"
    UNSUPPORTED = "Unsupported"


HOLDING_PHASES = frozenset({SharingPhase.DRAINING, SharingPhase.APPLYING})
"""Phases in which no runtime of the vendor runs."""


@dataclass(frozen=True)
class Allocation:
    """How a node's GPUs are handed out: whole (`exclusive`) or as `slots` per GPU."""

    mode: str = EXCLUSIVE
    slots: int | None = None

    @property
    def shared(self) -> bool:
        return self.mode != EXCLUSIVE

    def describe(self) -> str:
        return EXCLUSIVE if not self.shared else f"{self.mode} with {self.slots} slots"


@dataclass(frozen=True)
class VendorRuntime:
    """One activation's runtime of a vendor, as the cluster shows it."""

    activation: str
    pods: tuple[Pod, ...]
    drained: bool
    """Scaled to zero for a sharing transition (DRAINED_ANNOTATION)."""

    @property
    def running(self) -> bool:
        return bool(self.pods)


@dataclass(frozen=True)
class VendorSharing:
    """The sharing decision of one vendor module for this run."""

    module: str
    config: GpuSharing | None
    phase: SharingPhase
    applied: Allocation
    desired: Allocation
    node: str | None
    node_uid: str | None
    physical_gpus: int
    message: str
    declared: Allocation
    """The allocation the program declares this run (applied while draining or refusing)."""
    slot_limit: int | None = None
    admitted: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()

    @property
    def managed(self) -> bool:
        return self.phase is not SharingPhase.DEFAULT

    @property
    def holds(self) -> bool:
        """No runtime of this vendor may run this run (a transition is under way)."""
        return self.phase in HOLDING_PHASES

    def admits(self, activation: str) -> bool:
        return not self.holds and (self.slot_limit is None or activation in self.admitted)

    def model_fields(self, activation: str, extra: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """ModelActivation.status.gpuSharing of an activation of this vendor; None when unmanaged."""
        if not self.managed or self.holds:
            return None
        fields: dict[str, Any] = {"mode": self.applied.mode, "node": self.node}
        if self.applied.shared and activation in self.admitted:
            fields["slots"] = self.applied.slots
        return fields | (extra or {})

    def status(self) -> GpuSharingStatus:
        return GpuSharingStatus(
            management="magicstick" if self.managed else "default",
            desired_mode=self.desired.mode if self.managed else None,
            observed_phase=self.phase.value,
            applied_mode=self.applied.mode,
            node=self.node,
            node_uid=self.node_uid,
            slots=self.desired.slots,
            slot_limit=self.slot_limit,
            physical_gpus=self.physical_gpus,
            admitted_models=list(self.admitted[:LISTED_MODELS]),
            admitted_model_count=len(self.admitted),
            waiting_models=list(self.waiting[:LISTED_MODELS]),
            message=self.message,
        )


def sharing_config(intent: Intent, module: str, catalogs: Catalogs) -> tuple[bool, GpuSharing | None]:
    """(found, config): whether a valid ModuleActivation of `module` exists, and its gpuSharing.

    An invalid activation is not found: its old configuration keeps applying (invariant 6). Pure.
    """
    for parsed in intent.module_activations:
        if parsed.spec is None or catalogs.modules.canonical(parsed.spec.module) != module:
            continue
        if parsed.error is not None:
            return False, None
        return True, parsed.spec.gpu_sharing()
    return True, None


def activation_vendor(parsed: Parsed[Any], catalogs: Catalogs) -> str | None:
    """The hardware module whose GPUs a local activation runs on (None: CPU, external, invalid). Pure."""
    if parsed.spec is None or parsed.spec.type != "local" or parsed.spec.local is None:
        return None
    local = parsed.spec.local
    target_name = local.compute_target
    if local.realtime is not None:
        profile = catalogs.runtimes.realtime.get(local.realtime.profile)
        if profile is None:
            return None
        target_name = profile.compute_target
    else:
        engine = catalogs.engines.get(local.engine)
        if engine is not None and not engine.uses_kubeai:
            return "gpu"
    target = catalogs.compute_targets.get(target_name)
    return target.module if target is not None else None


def live_pods(pods: tuple[Pod, ...]) -> tuple[Pod, ...]:
    """Pods that still hold a device: every Pod not finished (terminating ones included)."""
    return tuple(p for p in pods if p.phase not in ("Succeeded", "Failed"))


def vendor_profiles(module: str, catalogs: Catalogs) -> tuple[str, ...]:
    """The KubeAI resource profiles (and clone prefixes) of the compute targets of `module`."""
    return tuple(
        profile
        for target in catalogs.compute_targets.entries
        if target.module == module
        for profile in target.resource_profiles.values()
    )


def vendor_resources(module: str, catalogs: Catalogs) -> tuple[str, ...]:
    return tuple(
        name for target in catalogs.compute_targets.entries if target.module == module for name in target.resource_names
    )


def _model_of_vendor(model: KubeAIModel, profiles: tuple[str, ...]) -> bool:
    profile = str(model.spec.get("resourceProfile") or "").partition(":")[0]
    return any(profile == base or profile.startswith(f"{base}-") for base in profiles)


def _workload_of_vendor(workload: Workload, resources: tuple[str, ...], claims: tuple[str, ...]) -> bool:
    pod_spec = (workload.spec.get("template") or {}).get("spec") or {}
    if any(c.get("resourceClaimName") in claims for c in pod_spec.get("resourceClaims") or ()):
        return True
    for container in pod_spec.get("containers") or ():
        limits = (container.get("resources") or {}).get("limits") or {}
        if any(name in limits for name in resources):
            return True
    return False


def vendor_runtimes(
    snapshot: Snapshot, module: str, catalogs: Catalogs, claims: tuple[str, ...] = ()
) -> tuple[VendorRuntime, ...]:
    """Every runtime on `module`'s GPUs the cluster shows, known by what it requests: KubeAI
    Models on the vendor's resource profiles, direct-runtime Deployments limiting the vendor's
    resource or binding one of `claims` (the vendor's shared ResourceClaims). Sorted by
    activation. Pure."""
    profiles = vendor_profiles(module, catalogs)
    resources = vendor_resources(module, catalogs)
    found: list[VendorRuntime] = []
    for model in snapshot.models:
        if _model_of_vendor(model, profiles):
            found.append(
                VendorRuntime(
                    activation=model.meta.labels.get(ACTIVATION_LABEL, model.meta.name),
                    pods=live_pods(snapshot.pods_of(model)),
                    drained=DRAINED_ANNOTATION in model.meta.annotations,
                )
            )
    for workload in snapshot.workloads:
        if RUNTIME_LABEL in workload.meta.labels and _workload_of_vendor(workload, resources, claims):
            selector = (workload.spec.get("selector") or {}).get("matchLabels") or {}
            pods = snapshot.pods_labelled(workload.meta.namespace or "", thaw(selector)) if selector else ()
            found.append(
                VendorRuntime(
                    activation=workload.meta.labels.get(ACTIVATION_LABEL, workload.meta.name),
                    pods=live_pods(pods),
                    drained=DRAINED_ANNOTATION in workload.meta.annotations,
                )
            )
    return tuple(sorted(found, key=lambda r: r.activation))


def admitted_in_order(
    candidates: tuple[str, ...], runtimes: tuple[VendorRuntime, ...], limit: int
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(admitted, waiting): the candidates whose runtime runs (not drained) keep their slots
    first, by name; then the others by name, up to `limit`. Pure."""
    running = {r.activation for r in runtimes if not r.drained}
    ordered = sorted(candidates, key=lambda a: (a not in running, a))
    return tuple(sorted(ordered[:limit])), tuple(sorted(ordered[limit:]))


def transition_message(
    *, vendor: str, node: str, applied: Allocation, desired: Allocation, runtimes: tuple[VendorRuntime, ...]
) -> str:
    still = [r.activation for r in runtimes if r.running]
    return (
        f"GPU sharing on node {node} changes from {applied.describe()} to {desired.describe()}: "
        f"draining {vendor} runtimes ({listed(tuple(still))} still running); settings and downloaded model data are kept."
    )


def drained_model(observed: KubeAIModel, transition: str) -> DesiredObject:
    """The observed KubeAI Model scaled to zero with autoscaling off, as it is otherwise. Pure."""
    body = thaw(kept_model(observed).body)
    body["spec"] |= {"replicas": 0, "minReplicas": 0, "autoscalingDisabled": True}
    body["metadata"]["annotations"] = body["metadata"].get("annotations", {}) | {DRAINED_ANNOTATION: transition}
    return DesiredObject.of(body)


def drained_deployment(deployment: DesiredObject, transition: str) -> DesiredObject:
    """A direct runtime's Deployment scaled to zero, as it is otherwise. Pure."""
    body = thaw(deployment.body)
    body["spec"]["replicas"] = 0
    body["metadata"]["annotations"] = body["metadata"].get("annotations", {}) | {DRAINED_ANNOTATION: transition}
    return DesiredObject.of(body)


@dataclass(frozen=True)
class SharingInputs:
    """What one vendor's decision needs, read from the cluster by the vendor module."""

    module: str
    vendor: str
    """The vendor's name in messages (NVIDIA, AMD)."""
    config: GpuSharing | None
    node: str | None
    """The configured node, or the node carrying an allocation of ours when unconfigured."""
    node_uid: str | None
    node_found: bool
    applied: Allocation | None
    """What the node shows now; None: a configuration Magic Stick did not write."""
    confirmed: bool
    """The node confirms the applied allocation (advertised slots, DRA devices)."""
    physical_gpus: int
    runtimes: tuple[VendorRuntime, ...]
    candidates: tuple[str, ...]
    """The enabled, valid activations of this vendor, by name."""
    slots_per_gpu: bool
    """NVIDIA advertises `slots` per physical GPU; AMD shares one claimed device."""
    unsupported: str | None = None
    """Why the desired allocation cannot be applied on this cluster, if it cannot."""
    drain_on_slot_change: bool = True
    """A change of slot count alone needs a drain (NVIDIA: the device plugin restarts)."""
    config_invalid: bool = False
    """The module's ModuleActivation is invalid: the applied allocation stays desired (invariant 6)."""


def _same(applied: Allocation, desired: Allocation, drain_on_slot_change: bool) -> bool:
    return applied.mode == desired.mode and (not drain_on_slot_change or applied.slots == desired.slots)


def decide_vendor_sharing(inputs: SharingInputs) -> VendorSharing:
    """The phase, the allocation to declare and the admitted activations of one vendor. Pure."""
    config = inputs.config
    desired = Allocation(config.mode, config.slots) if config is not None and config.shared else Allocation(EXCLUSIVE)
    applied = inputs.applied
    if inputs.config_invalid and applied is not None:
        desired = applied

    def result(
        phase: SharingPhase, message: str, declared: Allocation, effective: Allocation | None = None
    ) -> VendorSharing:
        effective = effective or declared
        limit = _slot_limit(effective, inputs) if phase not in HOLDING_PHASES else None
        admitted, waiting = (
            admitted_in_order(inputs.candidates, inputs.runtimes, limit)
            if limit is not None
            else (inputs.candidates, ())
        )
        if phase in HOLDING_PHASES:
            admitted, waiting = (), inputs.candidates
        return VendorSharing(
            module=inputs.module,
            config=config,
            phase=phase,
            applied=applied or Allocation(EXCLUSIVE),
            desired=desired,
            node=inputs.node,
            node_uid=inputs.node_uid,
            physical_gpus=inputs.physical_gpus,
            message=message,
            declared=declared,
            slot_limit=limit,
            admitted=admitted if limit is not None else (),
            waiting=waiting,
        )

    if applied is None:
        return result(
            SharingPhase.CONFLICT,
            f"Node {inputs.node} carries a device-plugin configuration Magic Stick did not write; it is left as it is.",
            Allocation(EXCLUSIVE),
        )
    if config is None and not applied.shared and not inputs.config_invalid:
        return result(
            SharingPhase.DEFAULT, f"No gpuSharing is set: the {inputs.vendor} device plugin keeps its default.", applied
        )
    if config is not None and not inputs.node_found:
        return result(
            SharingPhase.NODE_NOT_FOUND,
            f"gpuSharing selects node {config.node_name} with UID {config.node_uid}, but no such node exists; "
            f"the current allocation ({applied.describe()}) is kept.",
            applied,
        )
    if desired.shared and inputs.unsupported is not None:
        return result(
            SharingPhase.UNSUPPORTED,
            f"{inputs.unsupported}; the current allocation ({applied.describe()}) is kept.",
            applied,
        )
    if _same(applied, desired, inputs.drain_on_slot_change):
        if inputs.confirmed:
            return result(SharingPhase.ACTIVE, f"Node {inputs.node} runs {desired.describe()}.", desired)
        return result(SharingPhase.APPLYING, _waiting_message(inputs, desired), desired)
    if any(r.running for r in inputs.runtimes):
        message = transition_message(
            vendor=inputs.vendor, node=inputs.node or "", applied=applied, desired=desired, runtimes=inputs.runtimes
        )
        return result(SharingPhase.DRAINING, message, applied)
    return result(SharingPhase.APPLYING, _waiting_message(inputs, desired), desired)


def _waiting_message(inputs: SharingInputs, desired: Allocation) -> str:
    if not desired.shared:
        expected = f"{inputs.physical_gpus} whole GPU(s)"
    elif inputs.slots_per_gpu:
        expected = f"{(desired.slots or 0) * inputs.physical_gpus} slots ({desired.slots} per GPU on {inputs.physical_gpus} GPU(s))"
    else:
        expected = f"the shared device ({desired.slots} slots)"
    return (
        f"GPU sharing on node {inputs.node} is set to {desired.describe()}; waiting for the node to advertise {expected} "
        f"before {inputs.vendor} models run again."
    )


def _slot_limit(effective: Allocation, inputs: SharingInputs) -> int | None:
    if not effective.shared or effective.slots is None:
        return None
    return effective.slots * inputs.physical_gpus if inputs.slots_per_gpu else effective.slots


def vendor_candidates(intent: Intent, module: str, catalogs: Catalogs) -> tuple[str, ...]:
    """The enabled, valid local activations whose GPUs are `module`'s, by name. Pure."""
    return tuple(
        sorted(
            p.name
            for p in intent.model_activations
            if p.error is None and p.enabled and activation_vendor(p, catalogs) == module
        )
    )


def shared_gpu_count_error(parsed: Parsed[Any], catalogs: Catalogs) -> SpecError | None:
    """A direct runtime asking for more than one GPU of a shared allocation: a slot is one GPU's
    share, and several slots are never several GPUs. Pure."""
    local = parsed.valid_spec.local
    if local.realtime is not None:
        profile = catalogs.runtimes.realtime.get(local.realtime.profile)
        count = (
            local.realtime.gpu_count
            if local.realtime.gpu_count is not None
            else (profile.gpu_counts[0] if profile else 1)
        )
        field = "spec.local.realtime.gpuCount"
    elif local.freetoken is not None and local.freetoken.gpu_count is not None:
        count, field = local.freetoken.gpu_count, "spec.local.freetoken.gpuCount"
    else:
        return None
    if count <= 1:
        return None
    return SpecError(field, f"the GPUs of this vendor are shared in slots: gpuCount must be 1, not {count}")
