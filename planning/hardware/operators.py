"""GPU vendor operators: which to request, which to refuse, and what to report.

Decision, per hardware-provider module (gpu, amd-gpu, intel-gpu), every run:
- request it (seed its ModuleActivation) only when a node that passes the preflight has a GPU
  of its PCI vendor and no ModuleActivation names the module yet;
- refuse it (Conflict) when its CRD is already served and neither a ModuleActivation nor a
  Kustomization of ours stands behind it: another installation owns that operator;
- once requested, its activation stays, so a node's labels vanishing for a run (NFD
  restarting) never removes an operator; an explicit `enabled: false` always wins;
- an accelerator model may request it only where one of the above put it within reach: the
  preflight found the vendor (and no foreign operator owns it), or a ModuleActivation names
  it. Otherwise the model waits for a GPU and no operator is installed for it
  (`unavailable_vendors` says why, in the model's words).

Readiness criteria of a provider (Ready): its module is Ready and an allocatable extended
resource of its vendor is present on a compatible node. A running controller alone is not
readiness. Active (`operatorActive`): its operator is installed, ours (our Kustomization is
observed and the operator's CRD served) or another installation's; requested is not active.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from api.status import HardwareOperatorStatus, HardwarePhase
from api.vocabulary import Phase
from catalogs import Catalogs, ModuleEntry
from planning.hardware.capacity import AcceleratorCapacity, accelerator_capacity
from planning.hardware.inventory import PciGpu, gpus_by_node
from planning.hardware.memory import HostMemory, memory_by_node
from planning.hardware.nodes import NodeGpus, node_gpus
from planning.intent import Intent
from planning.labels import MODULE, is_generated
from planning.modules import ModulePlan
from planning.reasons import listed
from planning.requirements import Requirement
from planning.settings import FLUX_NAMESPACE
from planning.snapshot import Snapshot

_FAILING = frozenset({Phase.DEGRADED, Phase.FAILED})
LISTED_NODES = 16
"""detectedNodes and compatibleNodes name at most this many nodes, the first by name; their
counts (detectedNodeCount, compatibleNodeCount) count them all (planning.status bounds)."""
LISTED_DEVICES = 16
"""devices lists at most this many physical GPUs, by node name then PCI order; deviceCount
counts them all."""


@dataclass(frozen=True)
class Hardware:
    """The observed GPU hardware: per-node detection, physical inventory, published capacity."""

    nodes: tuple[NodeGpus, ...]
    gpus: Mapping[str, tuple[PciGpu, ...]]
    capacity: tuple[AcceleratorCapacity, ...]
    memory: Mapping[str, HostMemory] = field(default_factory=dict)
    """Node name -> memory layout (unified pools), for every node with a listed GPU."""


@dataclass(frozen=True)
class VendorDecision:
    module: str
    detected_nodes: tuple[str, ...]
    compatible_nodes: tuple[str, ...]
    request: bool
    conflict_crd: str | None
    has_activation: bool
    generated: bool
    incompatibilities: tuple[str, ...] = ()
    installed: bool = False
    """Our Kustomization of the module is observed and the operator's CRDs are served."""


def observe_hardware(snapshot: Snapshot, catalogs: Catalogs) -> Hardware:
    gpus = gpus_by_node(snapshot.nodes, snapshot.node_features)
    return Hardware(
        nodes=tuple(node_gpus(node) for node in snapshot.nodes),
        gpus=gpus,
        capacity=accelerator_capacity(snapshot.nodes, catalogs),
        memory=memory_by_node(snapshot.nodes, gpus, catalogs),
    )


def hardware_providers(catalogs: Catalogs) -> tuple[ModuleEntry, ...]:
    return tuple(entry for entry in catalogs.modules.entries if entry.hardware_provider)


def _activated_modules(intent: Intent, catalogs: Catalogs) -> set[str]:
    modules = set()
    for activation in intent.module_activations:
        raw = activation.obj.spec.get("module")
        module = catalogs.modules.canonical(raw) if isinstance(raw, str) else None
        if module is not None:
            modules.add(module)
    return modules


def decide_vendors(
    hardware: Hardware, snapshot: Snapshot, intent: Intent, catalogs: Catalogs
) -> tuple[VendorDecision, ...]:
    activated = _activated_modules(intent, catalogs)
    generated = {
        k.meta.labels.get(MODULE)
        for k in snapshot.kustomizations
        if k.meta.namespace == FLUX_NAMESPACE and is_generated(k.meta.labels)
    }
    decisions = []
    for entry in hardware_providers(catalogs):
        detected = tuple(n.name for n in hardware.nodes if entry.pci_vendor in n.vendors)
        compatible = tuple(n.name for n in hardware.nodes if entry.pci_vendor in n.vendors and n.compatible)
        has_activation = entry.name in activated
        ours = entry.name in generated
        foreign_crd = next((crd for crd in entry.required_crds if crd in snapshot.served_crds), None)
        conflict = foreign_crd if foreign_crd and not has_activation and not ours else None
        decisions.append(
            VendorDecision(
                module=entry.name,
                detected_nodes=detected,
                compatible_nodes=compatible,
                request=bool(compatible) and not has_activation and conflict is None,
                conflict_crd=conflict,
                has_activation=has_activation,
                generated=ours,
                incompatibilities=tuple(
                    n.incompatibility for n in hardware.nodes if entry.pci_vendor in n.vendors and not n.compatible
                ),
                installed=ours and set(entry.required_crds) <= snapshot.served_crds,
            )
        )
    return tuple(decisions)


def unavailable_vendors(decisions: tuple[VendorDecision, ...], *, catalogs: Catalogs) -> dict[str, str]:
    """Vendor module -> why an accelerator model may not request it, for every module out of
    a model's reach (planning.requirements). Pure."""
    found = {}
    for decision in decisions:
        why = _out_of_reach(decision, catalogs)
        if why is not None:
            found[decision.module] = why
    return found


def _out_of_reach(decision: VendorDecision, catalogs: Catalogs) -> str | None:
    """Why a model cannot have the operator of `decision` installed, or None when it can. Pure."""
    if decision.has_activation or (decision.compatible_nodes and decision.conflict_crd is None):
        return None
    entry = catalogs.modules.require(decision.module)
    hardware = " or ".join(t.display_name for t in catalogs.compute_targets.provided_by(entry.name))
    waiting = f"Waiting for {hardware} hardware: "
    if decision.conflict_crd is not None:
        resources = " or ".join(n for t in catalogs.compute_targets.provided_by(entry.name) for n in t.resource_names)
        return f"{waiting}the {entry.display_name} is managed outside Magic Stick (CRD {decision.conflict_crd}) and no node publishes {resources} yet."
    anyway = (
        f"so the {entry.display_name} is not installed; a ModuleActivation of module {entry.name} installs it anyway."
    )
    if decision.detected_nodes:
        reasons = listed(decision.incompatibilities, separator="; ")
        return f"{waiting}a GPU of PCI vendor {entry.pci_vendor} is on {listed(decision.detected_nodes)}, but no node passes the platform preflight ({reasons}), {anyway}"
    return f"{waiting}no node reports a GPU of PCI vendor {entry.pci_vendor}, {anyway}"


def _resources(
    hardware: Hardware, entry_resources: tuple[str, ...], compatible: tuple[str, ...]
) -> tuple[int, list[str]]:
    published = [c for c in hardware.capacity if c.resource_name in entry_resources and c.node in compatible]
    return sum(c.allocatable for c in published), sorted({c.resource_name for c in published})


def operator_status(
    *,
    entry: ModuleEntry,
    decision: VendorDecision,
    hardware: Hardware,
    catalogs: Catalogs,
    module_phase: str | None,
    module_message: str,
    activation_enabled: bool | None,
    requested_by_models: bool,
    waiting_models: tuple[str, ...] = (),
) -> HardwareOperatorStatus:
    """One entry of Appliance.status.hardwareOperators. `waiting_models`: the models that wait
    for this vendor's hardware without requesting its operator. Pure."""
    resource_names = tuple(
        name
        for target in catalogs.compute_targets.entries
        if target.module == entry.name
        for name in target.resource_names
    )
    allocatable, published = _resources(hardware, resource_names, decision.compatible_nodes)
    foreign = decision.conflict_crd is not None
    requested = module_phase is not None
    phase, message = _phase(
        entry=entry,
        decision=decision,
        module_phase=module_phase,
        module_message=module_message,
        activation_enabled=activation_enabled,
        allocatable=allocatable,
        resource_names=resource_names,
    )
    if waiting_models and module_phase is None and phase == "NotRequired":
        message += f" Waiting for one: {listed(waiting_models)}."
    devices = [
        gpu for node in decision.detected_nodes for gpu in hardware.gpus.get(node, ()) if gpu.vendor == entry.pci_vendor
    ]
    return HardwareOperatorStatus(
        display_name=entry.display_name,
        phase=phase,
        needed=bool(decision.compatible_nodes) or requested_by_models,
        operator_active=decision.installed or foreign,
        managed_by="magicstick" if (requested or decision.has_activation) else ("external" if foreign else "none"),
        operator_version=entry.operator_version if requested else None,
        detected_nodes=list(decision.detected_nodes[:LISTED_NODES]),
        detected_node_count=len(decision.detected_nodes),
        compatible_nodes=list(decision.compatible_nodes[:LISTED_NODES]),
        compatible_node_count=len(decision.compatible_nodes),
        allocatable_resources=allocatable,
        resource_names=published,
        devices=[gpu.to_status(hardware.memory.get(gpu.node)) for gpu in devices[:LISTED_DEVICES]],
        device_count=len(devices),
        message=message,
    )


def _phase(
    *,
    entry: ModuleEntry,
    decision: VendorDecision,
    module_phase: str | None,
    module_message: str,
    activation_enabled: bool | None,
    allocatable: int,
    resource_names: tuple[str, ...],
) -> tuple[HardwarePhase, str]:
    resources = " or ".join(resource_names)
    if activation_enabled is False:
        return "Disabled", f"{entry.display_name} is disabled by its ModuleActivation."
    if decision.conflict_crd is not None:
        if decision.detected_nodes:
            return "Conflict", (
                f"CRD {decision.conflict_crd} already exists without a Magic Stick activation; "
                f"another installation owns the {entry.display_name}, so Magic Stick does not request it."
            )
        return (
            "NotRequired",
            f"No {entry.display_name} hardware detected; CRD {decision.conflict_crd} is managed outside Magic Stick.",
        )
    if module_phase is None:
        if decision.detected_nodes and not decision.compatible_nodes:
            reasons = listed(decision.incompatibilities, separator="; ")
            return (
                "Unsupported",
                f"GPU detected on {listed(decision.detected_nodes)}, but no node passes the platform preflight: {reasons}.",
            )
        if decision.compatible_nodes:
            return (
                "Detected",
                f"GPU detected on {listed(decision.compatible_nodes)}; requesting the {entry.display_name}.",
            )
        return "NotRequired", f"No node reports a GPU of PCI vendor {entry.pci_vendor}."
    if module_phase in _FAILING:
        return "Degraded", module_message
    if module_phase == "WaitingForModules":
        return "Detected", module_message
    if allocatable > 0:
        return "Ready", f"{allocatable} allocatable GPU resource(s) are ready."
    if not decision.detected_nodes and decision.installed:
        return "Unknown", f"No node reports a GPU of PCI vendor {entry.pci_vendor} right now; the operator is kept."
    if not decision.detected_nodes:
        return (
            "Installing",
            f"No node reports a GPU of PCI vendor {entry.pci_vendor}; installing the {entry.display_name} as its ModuleActivation asks. {module_message}",
        )
    if module_phase == "Ready":
        return "Installing", f"The operator is ready, but no compatible node publishes {resources} yet."
    return "Installing", module_message


def hardware_operator_statuses(
    *,
    hardware: Hardware,
    decisions: tuple[VendorDecision, ...],
    modules: ModulePlan,
    catalogs: Catalogs,
    requirements: tuple[Requirement, ...] = (),
) -> dict[str, HardwareOperatorStatus]:
    """Appliance.status.hardwareOperators: every hardware provider, requested or not. Pure."""
    statuses = {}
    for decision in decisions:
        entry = catalogs.modules.require(decision.module)
        outcome = modules.outcome(decision.module)
        disabled = outcome is not None and outcome.phase == "Disabled"
        statuses[decision.module] = operator_status(
            entry=entry,
            decision=decision,
            hardware=hardware,
            catalogs=catalogs,
            module_phase=None if outcome is None or disabled else outcome.phase,
            module_message=outcome.message if outcome is not None else "",
            activation_enabled=False if disabled else None,
            requested_by_models=outcome is not None
            and any(r.startswith("ModelActivation/") for r in outcome.requested_by),
            waiting_models=tuple(sorted(r.requester for r in requirements if r.missing_hardware == decision.module)),
        )
    return statuses
