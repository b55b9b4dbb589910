"""AMD compatibility profiles: which nodes a profile makes eligible, which engines it enables,
and which validation runs and device diagnostics may start.

Rules, per node with an AMD GPU, every run:
- upstream support: a node none of whose AMD GPUs a profile of the compatibility catalog lists
  is left to the AMD GPU Operator's own support; it is eligible when it passes the platform
  preflight, as before, with or without a profile;
- a node with an AMD GPU a profile lists (Strix Halo: 1002:1586) is eligible only through that
  profile, and only when all of these hold, checked in this order (the first that fails is the
  node's reason):
    1. the ModuleActivation/amd-gpu parameters are valid and select that profile
       (`compatibilityProfile`; empty means upstream-only support, which does not cover it);
    2. an experimental profile has the explicit consent `allowExperimental: "true"`;
    3. the hardware rule: exactly `requiredGpuCount` AMD GPUs, every one listed by the profile;
       verified NVIDIA GPUs (vendor 10de) may sit beside them; any other mixture (a second,
       unlisted AMD GPU, another vendor) is unknown and the profile does not apply;
    4. the platform preflight;
    5. current host evidence (planning.hardware.evidence): its GPU architecture is the
       profile's, its driver is ready and it sees the profile's PCI device;
- with eligibility, current evidence and a registered `amd.com/gpu` on the node, the profile's
  catalogued engines are enabled there (an engine label per engine); engine tests are never
  needed for that, nor for hardware Ready, model selection or model creation;
- the program writes only Magic Stick's own labels (eligibility, engines); AMD's NFD support
  label is never written.

Validation runs (planning.hardware.validation): a `validationRequest` starts a run only when the
profile applies on a node with current evidence and a registered resource, no other run is
unfinished, and the history store can be read; a run already recorded is declared until the
request changes, so an interrupted run resumes. Device diagnostics (`device-validation-<id>`
annotations on the ModuleActivation) are bound to a node, boot, host fingerprint, PCI device
and profile version; one whose binding no longer matches is Stale and never runs; they queue
behind the engine validation, one at a time, and never change eligibility. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, Self

from pydantic import ValidationError

from api.modules import AMD_GPU_MODULE, AmdGpuParameters, parse_gpu_parameters
from api.status import (
    CompatibilityNodeStatus,
    CompatibilityStatus,
    DeviceDiagnosticStatus,
    EngineValidationStatus,
    PciDeviceStatus,
)
from api.vocabulary import CompatibilityReason, ValidationBlock, VerdictReason
from catalogs import Catalogs, GpuCompatibilityProfile
from planning.hardware.evidence import HostEvidence, read_evidence
from planning.hardware.inventory import PciGpu
from planning.hardware.memory import labelled_gpus
from planning.hardware.operators import Hardware, VendorDecision
from planning.hardware.runtime_adoption import RuntimeAdoption
from planning.hardware.validation import (
    HISTORY_CONFIG_MAP,
    HISTORY_KEY,
    RUNTIME_IMAGES_CONFIG_MAP,
    RUNTIME_IMAGES_KEY,
    RUNTIME_IMAGES_NAMESPACE,
    EngineRun,
    History,
    HostIdentity,
    MalformedHistory,
    PodSecurity,
    RunRecord,
    Stage,
    read_history,
    read_runtime_images,
)
from planning.intent import Intent
from planning.snapshot import Node, Snapshot

AMD_VENDOR: Final = "1002"
NVIDIA_VENDOR: Final = "10de"
ENGINE_LABEL_PREFIX: Final = "appliance.magicstick.dev/amd-gpu-engine-"
DEVICE_VALIDATION_PREFIX: Final = "appliance.magicstick.dev/device-validation-"
LISTED_NODES: Final = 16
MAX_DIAGNOSTICS: Final = 8
"""At most this many device-validation annotations are read; further ones are reported Rejected."""


def engine_label(engine: str) -> str:
    """The node label that enables `engine` of the node's profile. Pure."""
    return f"{ENGINE_LABEL_PREFIX}{engine.lower()}"


@dataclass(frozen=True)
class Selection:
    """What ModuleActivation/amd-gpu asks for."""

    profile_id: str = ""
    consent: bool = False
    validation_request: str = ""
    activation: str | None = None
    invalid: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)


def read_selection(intent: Intent, catalogs: Catalogs) -> Selection:
    """The parameters of the first ModuleActivation (by name) naming amd-gpu; defaults without one. Pure."""
    for parsed in sorted(intent.module_activations, key=lambda p: p.name):
        raw = parsed.obj.spec.get("module")
        if not isinstance(raw, str) or catalogs.modules.canonical(raw) != AMD_GPU_MODULE:
            continue
        parameters = dict(parsed.obj.spec.get("parameters") or {})
        annotations = dict(parsed.obj.meta.annotations)
        try:
            typed = parse_gpu_parameters(AMD_GPU_MODULE, _thawed(parameters))
        except ValidationError as error:
            return Selection(
                activation=parsed.name,
                invalid=f"ModuleActivation {parsed.name}: {error.errors()[0]['msg']}",
                annotations=annotations,
            )
        assert isinstance(typed, AmdGpuParameters)
        return Selection(
            profile_id=typed.compatibility_profile,
            consent=typed.allow_experimental == "true",
            validation_request=typed.validation_request,
            activation=parsed.name,
            annotations=annotations,
        )
    return Selection()


def _thawed(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    return value


@dataclass(frozen=True)
class NodeCompatibility:
    """One AMD node under the compatibility rules."""

    node: str
    node_uid: str | None
    profile: GpuCompatibilityProfile | None
    """The profile that lists the node's AMD GPU; None for an upstream-supported node."""
    opted_in: bool
    eligible: bool
    pci_devices: tuple[str, ...]
    evidence: HostEvidence
    resource_registered: bool
    reason: CompatibilityReason
    message: str

    @property
    def upstream_supported(self) -> bool:
        return self.profile is None

    @property
    def engines(self) -> tuple[str, ...]:
        """Engines enabled here: a profile node, eligible, current evidence, registered resource."""
        if self.profile is None or not (self.eligible and self.evidence.current and self.resource_registered):
            return ()
        return tuple(sorted(self.profile.engines))

    @property
    def identity(self) -> HostIdentity | None:
        if not self.evidence.current or self.node_uid is None:
            return None
        return HostIdentity(
            node=self.node, node_uid=self.node_uid, boot_id=self.evidence.boot_id, fingerprint=self.evidence.fingerprint
        )

    def to_status(self) -> CompatibilityNodeStatus:
        evidence = self.evidence if self.evidence.fingerprint else None
        return CompatibilityNodeStatus(
            node=self.node,
            node_uid=self.node_uid,
            profile_id=self.profile.id if self.profile else None,
            profile_version=self.profile.profile_version if self.profile else None,
            upstream_supported=self.upstream_supported,
            opted_in=self.opted_in,
            eligible=self.eligible,
            pci_devices=list(self.pci_devices),
            expected_architecture=self.profile.expected_architecture if self.profile else None,
            detected_architecture=evidence.architecture if evidence else None,
            host_driver_ready=bool(evidence and evidence.current and evidence.driver_ready),
            resource_registered=self.resource_registered,
            host_fingerprint=evidence.fingerprint if evidence else None,
            host_boot_id=evidence.boot_id if evidence else None,
            evidence=self.evidence.state.value,
            engines=list(self.engines),
            reason=self.reason.value,
            message=self.message,
        )


def _device_ids(gpus: tuple[PciGpu, ...]) -> tuple[str, ...]:
    return tuple(sorted(f"{g.vendor.lower()}:{g.device.lower()}" for g in gpus))


def _listing_profile(gpus: tuple[PciGpu, ...], catalogs: Catalogs) -> GpuCompatibilityProfile | None:
    for profile in catalogs.gpu_compatibility.entries:
        listed = {(d.vendor_id, d.device_id) for d in profile.pci_devices}
        if any((g.vendor.lower(), g.device.lower()) in listed for g in gpus if g.vendor.lower() == AMD_VENDOR):
            return profile
    return None


def _hardware_rule(profile: GpuCompatibilityProfile, gpus: tuple[PciGpu, ...]) -> str | None:
    """Why the node's GPUs break the profile's hardware rule, or None. Pure."""
    listed = {(d.vendor_id, d.device_id) for d in profile.pci_devices}
    amd = [g for g in gpus if g.vendor.lower() == AMD_VENDOR]
    matched = [g for g in amd if (g.vendor.lower(), g.device.lower()) in listed]
    others = sorted({g.vendor.lower() for g in gpus if g.vendor.lower() not in (AMD_VENDOR, NVIDIA_VENDOR)})
    if len(matched) != profile.required_gpu_count:
        return f"{len(matched)} GPU(s) of profile {profile.id}, not exactly {profile.required_gpu_count}"
    if len(amd) != len(matched):
        return f"{len(amd) - len(matched)} other AMD GPU(s) beside the profile's: an unknown mixture"
    if others:
        return f"GPU(s) of PCI vendor {', '.join(others)} beside it: an unknown mixture (only NVIDIA may coexist)"
    return None


def _profile_rule(
    *,
    profile: GpuCompatibilityProfile,
    selection: Selection,
    gpus: tuple[PciGpu, ...],
    node: Node,
    preflight_ok: bool,
    evidence: HostEvidence,
) -> tuple[CompatibilityReason, str]:
    """The first rule a profile node breaks, or ProfileApplies. Pure."""
    name = node.meta.name
    if selection.invalid:
        return CompatibilityReason.PARAMETERS_INVALID, selection.invalid
    if selection.profile_id != profile.id:
        chosen = (
            f"profile {selection.profile_id!r}"
            if selection.profile_id
            else "upstream-only support (no compatibilityProfile)"
        )
        return CompatibilityReason.PROFILE_NOT_SELECTED, (
            f"node {name} has a GPU that only compatibility profile {profile.id} ({profile.display_name}) covers; "
            f"ModuleActivation/amd-gpu selects {chosen}"
        )
    if profile.experimental and not selection.consent:
        return (
            CompatibilityReason.CONSENT_REQUIRED,
            f'profile {profile.id} is experimental and needs allowExperimental: "true"',
        )
    broken = _hardware_rule(profile, gpus)
    if broken is not None:
        return CompatibilityReason.HARDWARE_RULE, f"node {name} has {broken}"
    if not preflight_ok:
        return CompatibilityReason.PREFLIGHT, f"node {name} does not pass the platform preflight"
    if not evidence.current:
        return CompatibilityReason.EVIDENCE_NOT_CURRENT, evidence.message
    if evidence.architecture != profile.expected_architecture:
        return CompatibilityReason.ARCHITECTURE_MISMATCH, (
            f"host evidence of node {name} reports {evidence.architecture or 'no'} architecture, not {profile.expected_architecture}"
        )
    if not evidence.driver_ready:
        return CompatibilityReason.DRIVER_NOT_READY, f"host evidence of node {name} reports the amdgpu driver not ready"
    if not set(_device_ids(gpus)) & set(evidence.pci_devices):
        return CompatibilityReason.EVIDENCE_MISMATCH, f"host evidence of node {name} does not see the GPU NFD lists"
    return CompatibilityReason.PROFILE_APPLIES, f"profile {profile.id} {profile.profile_version} applies on node {name}"


def node_compatibility(
    *,
    node: Node,
    gpus: tuple[PciGpu, ...],
    selection: Selection,
    decision: VendorDecision,
    registered: bool,
    catalogs: Catalogs,
    now: datetime,
) -> NodeCompatibility:
    """One AMD node under the rules of the module docstring. Pure."""
    evidence = read_evidence(node, now)
    profile = _listing_profile(gpus, catalogs)
    preflight_ok = node.meta.name in decision.compatible_nodes
    if profile is None:
        reason, message = (
            (CompatibilityReason.UPSTREAM, f"node {node.meta.name}: AMD GPU left to the operator's upstream support")
            if preflight_ok
            else (CompatibilityReason.PREFLIGHT, f"node {node.meta.name} does not pass the platform preflight")
        )
        eligible = preflight_ok
    else:
        reason, message = _profile_rule(
            profile=profile, selection=selection, gpus=gpus, node=node, preflight_ok=preflight_ok, evidence=evidence
        )
        eligible = reason is CompatibilityReason.PROFILE_APPLIES
    return NodeCompatibility(
        node=node.meta.name,
        node_uid=node.meta.uid,
        profile=profile,
        opted_in=bool(
            profile and selection.profile_id == profile.id and (selection.consent or not profile.experimental)
        ),
        eligible=eligible,
        pci_devices=_device_ids(tuple(g for g in gpus if g.vendor.lower() == AMD_VENDOR)),
        evidence=evidence,
        resource_registered=registered,
        reason=reason,
        message=message,
    )


@dataclass(frozen=True)
class ValidationRunPlan:
    """One validation run or device diagnostic to declare as a dynamic resource."""

    run_id: str
    profile_id: str
    profile_version: str
    host: HostIdentity
    """The identity the run is bound to (recorded at request time)."""
    host_current: bool
    """The bound node's evidence is current and still describes `host`: new Jobs may start."""
    engines: tuple[EngineRun, ...]
    security: Mapping[str, PodSecurity]
    namespace: str
    history_namespace: str
    device: str = ""
    current_host: HostIdentity | None = None
    """The bound node as its current evidence describes it now; None without current evidence."""
    runtime_images_namespace: str = RUNTIME_IMAGES_NAMESPACE
    """Where a passed engine's image is published (the runtime-images store)."""

    @property
    def logical_name(self) -> str:
        kind = "device-validation" if self.device else "gpu-validation"
        return f"{kind}/{self.run_id}"

    def to_inputs(self) -> dict[str, Any]:
        """The inputs of the run's dynamic resource (providers/gpu_validation.py). Pure.

        An engine crosses as its name, image and deadline: what a recorded run says of it is
        read back from the history store by the provider.
        """
        return {
            "runId": self.run_id,
            "profileId": self.profile_id,
            "profileVersion": self.profile_version,
            "host": self.host.to_wire(),
            "hostCurrent": self.host_current,
            "currentHost": self.current_host.to_wire() if self.current_host is not None else None,
            "engines": [
                {"engine": e.engine, "image": e.image, "timeoutSeconds": e.timeout_seconds} for e in self.engines
            ],
            "security": {
                name: {"runAsUser": s.run_as_user, "supplementalGroups": list(s.supplemental_groups)}
                for name, s in sorted(self.security.items())
            },
            "namespace": self.namespace,
            "historyNamespace": self.history_namespace,
            "device": self.device,
            "runtimeImagesNamespace": self.runtime_images_namespace,
        }

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Any]) -> Self:
        """The run `to_inputs` wrote, numbers restored from the floats Pulumi passes. Pure."""
        current = inputs.get("currentHost")
        return cls(
            run_id=inputs["runId"],
            profile_id=inputs["profileId"],
            profile_version=inputs["profileVersion"],
            host=HostIdentity.from_wire(inputs["host"]),
            host_current=bool(inputs["hostCurrent"]),
            engines=tuple(
                EngineRun(engine=e["engine"], image=e["image"], timeout_seconds=int(e["timeoutSeconds"]))
                for e in inputs["engines"]
            ),
            security={
                name: PodSecurity(
                    run_as_user=None if s.get("runAsUser") is None else int(s["runAsUser"]),
                    supplemental_groups=tuple(int(group) for group in s.get("supplementalGroups") or ()),
                )
                for name, s in (inputs.get("security") or {}).items()
            },
            namespace=inputs["namespace"],
            history_namespace=inputs["historyNamespace"],
            device=inputs.get("device") or "",
            current_host=HostIdentity.from_wire(current) if isinstance(current, Mapping) else None,
            runtime_images_namespace=inputs.get("runtimeImagesNamespace") or RUNTIME_IMAGES_NAMESPACE,
        )


@dataclass(frozen=True)
class AmdCompatibility:
    """The compatibility decision of one run."""

    selection: Selection
    nodes: tuple[NodeCompatibility, ...]
    history: History | None
    """None when the history store cannot be read (no new run starts)."""
    history_problem: str
    runs: tuple[ValidationRunPlan, ...]
    blocked: str
    """Why the requested validation run does not start (ValidationBlock: message), or empty."""
    diagnostics: tuple[DeviceDiagnosticStatus, ...]
    runtime_images: Mapping[str, str]

    @property
    def eligible_nodes(self) -> tuple[str, ...]:
        return tuple(n.node for n in self.nodes if n.eligible)

    def labels_of(self, node: str) -> dict[str, str]:
        """The Magic Stick labels of an eligible node: eligibility and its enabled engines."""
        found = next((n for n in self.nodes if n.node == node), None)
        return {engine_label(e): "true" for e in (found.engines if found else ())}


def _history(snapshot: Snapshot, namespace: str) -> tuple[History | None, str]:
    stored = snapshot.config_map(namespace, HISTORY_CONFIG_MAP)
    try:
        return read_history(stored.data.get(HISTORY_KEY) if stored else None), ""
    except MalformedHistory as error:
        return None, str(error)


def _security(profile: GpuCompatibilityProfile) -> dict[str, PodSecurity]:
    return {
        name: PodSecurity(run_as_user=engine.run_as_user, supplemental_groups=tuple(engine.supplemental_groups))
        for name, engine in profile.engines.items()
    }


def _engines(profile: GpuCompatibilityProfile) -> tuple[EngineRun, ...]:
    return tuple(
        EngineRun(engine=name, image=e.validation_image, timeout_seconds=e.timeout_seconds)
        for name, e in sorted(profile.engines.items())
    )


def _run_plan(
    *,
    run_id: str,
    profile: GpuCompatibilityProfile,
    target: NodeCompatibility | None,
    record: RunRecord | None,
    namespace: str,
    device: str = "",
    nodes: tuple[NodeCompatibility, ...] = (),
) -> ValidationRunPlan | None:
    """The resource of a run: bound to its record's host when recorded, else to `target`. Pure."""
    current = target.identity if target is not None else None
    host = record.host if record is not None else current
    if host is None:
        return None
    if record is not None and target is None:
        current = next((n.identity for n in nodes if n.node == host.node), None) if nodes else None
    return ValidationRunPlan(
        run_id=run_id,
        profile_id=record.profile_id if record else profile.id,
        profile_version=record.profile_version if record else profile.profile_version,
        host=host,
        host_current=current == host
        and profile.profile_version == (record.profile_version if record else profile.profile_version),
        engines=record.engines if record else _engines(profile),
        security=_security(profile),
        namespace=namespace,
        history_namespace=namespace,
        device=device,
        current_host=current,
    )


@dataclass(frozen=True)
class _Diagnostic:
    request: str
    node: str
    node_uid: str
    device: str
    boot_id: str
    fingerprint: str
    profile_version: str
    problem: str = ""


def _diagnostics(selection: Selection) -> tuple[_Diagnostic, ...]:
    """The device-validation-<id> annotations: each a JSON binding. Pure."""
    found = []
    keys = sorted(k for k in selection.annotations if k.startswith(DEVICE_VALIDATION_PREFIX))
    for key in keys:
        request = key.removeprefix(DEVICE_VALIDATION_PREFIX)
        try:
            raw = json.loads(selection.annotations[key])
        except json.JSONDecodeError:
            raw = None
        fields = ("node", "nodeUID", "device", "bootID", "fingerprint", "profileVersion")
        if not isinstance(raw, dict) or not all(isinstance(raw.get(f), str) and raw.get(f) for f in fields):
            found.append(
                _Diagnostic(
                    request,
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    problem=f"annotation {key} must be a JSON object with {', '.join(fields)}",
                )
            )
            continue
        found.append(
            _Diagnostic(
                request,
                raw["node"],
                raw["nodeUID"],
                raw["device"].lower(),
                raw["bootID"],
                raw["fingerprint"],
                raw["profileVersion"],
            )
        )
    return tuple(found)


def _binding_problem(
    diagnostic: _Diagnostic, nodes: tuple[NodeCompatibility, ...], profile: GpuCompatibilityProfile
) -> str:
    """Why a diagnostic's binding does not match the node as it is now, or empty. Pure."""
    node = next((n for n in nodes if n.node == diagnostic.node), None)
    if node is None or node.node_uid != diagnostic.node_uid:
        return f"node {diagnostic.node} with UID {diagnostic.node_uid} is not observed"
    if not node.evidence.current:
        return node.evidence.message
    if (node.evidence.boot_id, node.evidence.fingerprint) != (diagnostic.boot_id, diagnostic.fingerprint):
        return f"node {diagnostic.node} has rebooted or changed since the request (boot or host fingerprint differs)"
    if diagnostic.device not in node.pci_devices:
        return f"node {diagnostic.node} has no GPU {diagnostic.device}"
    if diagnostic.profile_version != profile.profile_version:
        return f"the request is for profile version {diagnostic.profile_version}, the catalog's is {profile.profile_version}"
    if not (node.eligible and node.resource_registered):
        return f"node {diagnostic.node} is not eligible with a registered {profile.module} resource"
    return ""


def decide_compatibility(
    *,
    snapshot: Snapshot,
    intent: Intent,
    hardware: Hardware,
    decision: VendorDecision,
    catalogs: Catalogs,
    namespace: str,
    now: datetime,
) -> AmdCompatibility:
    """Every AMD node under the compatibility rules, and the validation runs to declare. Pure."""
    selection = read_selection(intent, catalogs)
    registered = {c.node for c in hardware.capacity if c.resource_name == "amd.com/gpu" and c.allocatable > 0}
    nodes = []
    for node in snapshot.nodes:
        gpus = hardware.gpus.get(node.meta.name) or labelled_gpus(node)
        if not any(g.vendor.lower() == AMD_VENDOR for g in gpus) and node.meta.name not in decision.detected_nodes:
            continue
        nodes.append(
            node_compatibility(
                node=node,
                gpus=gpus,
                selection=selection,
                decision=decision,
                registered=node.meta.name in registered,
                catalogs=catalogs,
                now=now,
            )
        )
    history, history_problem = _history(snapshot, namespace)
    images_map = snapshot.config_map(RUNTIME_IMAGES_NAMESPACE, RUNTIME_IMAGES_CONFIG_MAP)
    runtime_images = read_runtime_images(images_map.data.get(RUNTIME_IMAGES_KEY) if images_map else None)
    profile = catalogs.gpu_compatibility.get(selection.profile_id) if selection.profile_id else None
    runs, blocked, diagnostics = _runs(selection, tuple(nodes), history, history_problem, profile, namespace)
    return AmdCompatibility(
        selection=selection,
        nodes=tuple(nodes),
        history=history,
        history_problem=history_problem,
        runs=runs,
        blocked=blocked,
        diagnostics=diagnostics,
        runtime_images=runtime_images,
    )


def _target(nodes: tuple[NodeCompatibility, ...], profile: GpuCompatibilityProfile) -> NodeCompatibility | None:
    return next(
        (n for n in nodes if n.profile == profile and n.eligible and n.resource_registered and n.evidence.current), None
    )


def _runs(
    selection: Selection,
    nodes: tuple[NodeCompatibility, ...],
    history: History | None,
    history_problem: str,
    profile: GpuCompatibilityProfile | None,
    namespace: str,
) -> tuple[tuple[ValidationRunPlan, ...], str, tuple[DeviceDiagnosticStatus, ...]]:
    """Recorded runs stay declared; a new one starts only when nothing else is unfinished. Pure."""
    if profile is None or selection.invalid:
        return (), "", ()
    target = _target(nodes, profile)
    runs: list[ValidationRunPlan] = []
    requests: list[tuple[str, str, _Diagnostic | None]] = []
    if selection.validation_request:
        requests.append((selection.validation_request, "", None))
    diagnostics = _diagnostics(selection)[:MAX_DIAGNOSTICS]
    requests += [(f"device-{d.request}", d.device, d) for d in diagnostics if not d.problem]
    busy = history is not None and any(not r.finished for r in history.runs.values())
    blocked = ""
    diag_status: dict[str, DeviceDiagnosticStatus] = {}
    for run_id, device, diagnostic in requests:
        record = history.runs.get(run_id) if history is not None else None
        if record is not None:
            plan = _run_plan(
                run_id=run_id,
                profile=profile,
                target=None,
                record=record,
                namespace=namespace,
                device=device,
                nodes=nodes,
            )
            if plan is not None:
                runs.append(plan)
            continue
        why = _start_block(history, history_problem, target, busy, profile)
        if diagnostic is not None and not why:
            stale = _binding_problem(diagnostic, nodes, profile)
            if stale:
                diag_status[run_id] = DeviceDiagnosticStatus(
                    request=diagnostic.request, node=diagnostic.node, device=device, state="Stale", message=stale
                )
                continue
            target_for: NodeCompatibility | None = next(n for n in nodes if n.node == diagnostic.node)
        else:
            target_for = target
        if why:
            if diagnostic is None:
                blocked = why
            else:
                diag_status[run_id] = DeviceDiagnosticStatus(
                    request=diagnostic.request, node=diagnostic.node, device=device, state="Queued", message=why
                )
            continue
        plan = _run_plan(
            run_id=run_id, profile=profile, target=target_for, record=None, namespace=namespace, device=device
        )
        if plan is not None:
            runs.append(plan)
            busy = True
    statuses = _diagnostic_statuses(diagnostics, diag_status, history, nodes)
    return tuple(runs), blocked, statuses


def _start_block(
    history: History | None,
    history_problem: str,
    target: NodeCompatibility | None,
    busy: bool,
    profile: GpuCompatibilityProfile,
) -> str:
    if history is None:
        return f"{ValidationBlock.HISTORY_UNAVAILABLE}: {history_problem}; no new diagnostics start"
    if target is None:
        return (
            f"{ValidationBlock.NOT_APPLICABLE}: no node where profile {profile.id} applies has current host evidence "
            f"and a registered amd.com/gpu"
        )
    if busy:
        return f"{ValidationBlock.ANOTHER_RUN}: another validation run is unfinished; runs go one at a time"
    return ""


def _diagnostic_statuses(
    diagnostics: tuple[_Diagnostic, ...],
    decided: Mapping[str, DeviceDiagnosticStatus],
    history: History | None,
    nodes: tuple[NodeCompatibility, ...],
) -> tuple[DeviceDiagnosticStatus, ...]:
    found = []
    for diagnostic in diagnostics:
        run_id = f"device-{diagnostic.request}"
        if diagnostic.problem:
            found.append(
                DeviceDiagnosticStatus(
                    request=diagnostic.request, node="", device="", state="Rejected", message=diagnostic.problem
                )
            )
            continue
        if run_id in decided:
            found.append(decided[run_id])
            continue
        record = history.runs.get(run_id) if history is not None else None
        if record is None:
            found.append(
                DeviceDiagnosticStatus(
                    request=diagnostic.request, node=diagnostic.node, device=diagnostic.device, state="Queued"
                )
            )
            continue
        current = next((n.identity for n in nodes if n.node == record.host.node), None)
        state: Literal["Finished", "Running", "Stale"] = "Finished" if record.finished else "Running"
        if record.finished and current != record.host:
            state = "Stale"
        found.append(
            DeviceDiagnosticStatus(
                request=diagnostic.request,
                node=diagnostic.node,
                device=diagnostic.device,
                state=state,
                engines={e.engine: engine_status(e, record, current) for e in record.engines},
            )
        )
    return tuple(found)


def engine_status(run: EngineRun, record: RunRecord, current: HostIdentity | None) -> EngineValidationStatus:
    """One engine's status from its record; a final result bound to another host is Stale. Pure."""
    stale = run.stage in (Stage.PASSED, Stage.FAILED) and current != record.host
    return EngineValidationStatus(
        state="Stale" if stale else run.stage.value,
        run_id=record.run_id,
        image=run.image,
        image_id=run.image_id or None,
        job=run.job or None,
        started_at=run.started_at or None,
        finished_at=run.finished_at or None,
        reason=VerdictReason.EVIDENCE_CHANGED.value if stale else (run.reason or None),
        message=(f"the host changed since this result ({run.message})" if stale else run.message) or None,
    )


def catalogued_engines(compatibility: AmdCompatibility, catalogs: Catalogs) -> tuple[str, ...]:
    """The engines the selected profile catalogues; none without a known profile. Pure."""
    profile_id = compatibility.selection.profile_id
    profile = catalogs.gpu_compatibility.get(profile_id) if profile_id else None
    return tuple(sorted(profile.engines)) if profile is not None else ()


def with_device_results(
    devices: Sequence[PciDeviceStatus], diagnostics: Sequence[DeviceDiagnosticStatus]
) -> list[PciDeviceStatus]:
    """Each physical device entry with the per-engine results of the diagnostic bound to it (by
    node and PCI vendor:device); where several are, the one whose request sorts last. A device
    no diagnostic has reached is left as it is. Pure."""
    results: dict[tuple[str, str], DeviceDiagnosticStatus] = {}
    for diagnostic in diagnostics:
        if diagnostic.engines:
            results[(diagnostic.node, diagnostic.device)] = diagnostic
    found = []
    for device in devices:
        result = results.get((device.node, f"{device.vendor}:{device.device}".lower()))
        if result is not None:
            device = device.model_copy(update={"engines": dict(result.engines), "diagnostic_request": result.request})
        found.append(device)
    return found


def compatibility_status(
    compatibility: AmdCompatibility, *, catalogs: Catalogs, adoption: RuntimeAdoption
) -> CompatibilityStatus:
    """hardwareOperators.amd-gpu.compatibility. Pure."""
    selection = compatibility.selection
    profile = catalogs.gpu_compatibility.get(selection.profile_id) if selection.profile_id else None
    subject = _subject(compatibility.nodes, profile)
    reason, message = _summary(compatibility, profile, subject)
    subject_status = subject.to_status() if subject is not None else None
    return CompatibilityStatus(
        catalog_version=catalogs.gpu_compatibility.version,
        profiles=[p.id for p in catalogs.gpu_compatibility.entries],
        profile_id=selection.profile_id,
        profile_version=profile.profile_version if profile else None,
        experimental=profile.experimental if profile else None,
        opted_in=bool(profile and (selection.consent or not profile.experimental)),
        upstream_supported=bool(subject and subject.upstream_supported),
        eligible=bool(subject and subject.eligible),
        pci_devices=list(subject.pci_devices) if subject else [],
        expected_architecture=profile.expected_architecture if profile else None,
        detected_architecture=subject_status.detected_architecture if subject_status else None,
        host_driver_ready=bool(subject_status and subject_status.host_driver_ready),
        resource_registered=bool(subject and subject.resource_registered),
        host_fingerprint=subject_status.host_fingerprint if subject_status else None,
        host_boot_id=subject_status.host_boot_id if subject_status else None,
        nodes=[n.to_status() for n in compatibility.nodes[:LISTED_NODES]],
        validation_request=selection.validation_request or None,
        validation=_validation(compatibility, profile),
        device_diagnostics=list(compatibility.diagnostics),
        runtime_ready=adoption.ready,
        runtime_reason=adoption.reason.value,
        runtime_message=adoption.message,
        effective_images=dict(adoption.effective_images),
        runtime_images=dict(compatibility.runtime_images),
        reason=reason,
        message=message,
    )


def _subject(nodes: tuple[NodeCompatibility, ...], profile: GpuCompatibilityProfile | None) -> NodeCompatibility | None:
    """The node the top-level fields describe: the first the selected profile lists, else the first AMD node."""
    listed = [n for n in nodes if profile is not None and n.profile == profile]
    return next(iter(listed or nodes), None)


def _summary(
    compatibility: AmdCompatibility, profile: GpuCompatibilityProfile | None, subject: NodeCompatibility | None
) -> tuple[str, str]:
    selection = compatibility.selection
    if selection.invalid:
        return CompatibilityReason.PARAMETERS_INVALID.value, selection.invalid
    if selection.profile_id and profile is None:
        return CompatibilityReason.PROFILE_UNKNOWN.value, (
            f"compatibility profile {selection.profile_id!r} is not in the catalog; upstream support only"
        )
    if subject is None:
        return CompatibilityReason.NO_AMD_GPU.value, "No node reports an AMD GPU."
    return subject.reason.value, subject.message


def _validation(
    compatibility: AmdCompatibility, profile: GpuCompatibilityProfile | None
) -> dict[str, EngineValidationStatus]:
    if profile is None:
        return {}
    request = compatibility.selection.validation_request
    if not request:
        return {name: EngineValidationStatus(state="NotRequested") for name in sorted(profile.engines)}
    record = compatibility.history.runs.get(request) if compatibility.history is not None else None
    if record is None:
        declared = any(r.run_id == request for r in compatibility.runs)
        reason, _, message = compatibility.blocked.partition(": ")
        return {
            name: EngineValidationStatus(
                state="Pending" if declared else "Blocked",
                run_id=request,
                image=engine.validation_image,
                reason=None if declared else reason,
                message=None if declared else message,
            )
            for name, engine in sorted(profile.engines.items())
        }
    current = next((n.identity for n in compatibility.nodes if n.node == record.host.node), None)
    return {run.engine: engine_status(run, record, current) for run in record.engines}
