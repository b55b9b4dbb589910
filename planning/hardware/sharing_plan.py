"""GPU sharing for one run: each vendor's decision, what to declare for it, and what to report.

Order: read each vendor's configuration and what the cluster shows (nvidia_sharing,
amd_sharing), decide (sharing.decide_vendor_sharing), then declare the allocation the decision
names (`declared`): the NVIDIA node label; for AMD the shared claim, the admission adapter and
the DeviceConfig's DRA switch (planning.hardware.amd). The models plan reads the decisions to
drain, hold or admit each activation (planning.models.plan).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from api.modules import GpuSharing
from api.status import DraSharingStatus, HardwareOperatorStatus
from catalogs import Catalogs
from planning.hardware import amd_sharing, nvidia_sharing
from planning.hardware.capacity import AcceleratorCapacity, quantity_count
from planning.hardware.operators import Hardware
from planning.hardware.sharing import (
    Allocation,
    SharingInputs,
    SharingPhase,
    VendorSharing,
    decide_vendor_sharing,
    sharing_config,
    vendor_candidates,
    vendor_runtimes,
)
from planning.intent import Intent
from planning.models.direct import ClaimBinding
from planning.models.kubeai import model_name
from planning.objects import DesiredObject
from planning.snapshot import Node, Snapshot

SHARING_NAMESPACE = "ai"
"""gpuSharing names namespace `ai` (api.modules): the shared claim and the models live there."""
LISTED_DRA_DEVICES = 16
NVIDIA_PCI_VENDOR = "10de"
AMD_PCI_VENDOR = "1002"


def _dra_mode(mode: str) -> Literal["exclusive", "dra-shared"]:
    """An AMD allocation mode, as DraSharingStatus spells it."""
    if mode == "dra-shared":
        return "dra-shared"
    if mode == "exclusive":
        return "exclusive"
    raise ValueError(f"'{mode}' is not an AMD GPU sharing mode")


@dataclass(frozen=True)
class SharingPlan:
    vendors: Mapping[str, VendorSharing] = field(default_factory=lambda: MappingProxyType({}))
    objects: tuple[DesiredObject, ...] = ()
    dra: amd_sharing.DraInventory | None = None
    amd_hostname: str | None = None

    def of(self, module: str | None) -> VendorSharing | None:
        return self.vendors.get(module) if module is not None else None

    @property
    def amd_dra(self) -> bool:
        """The AMD DeviceConfig runs the DRA driver instead of the device plugin this run."""
        amd = self.vendors.get(amd_sharing.MODULE)
        return amd is not None and amd.declared.shared

    def amd_status(self) -> DraSharingStatus | None:
        amd = self.vendors.get(amd_sharing.MODULE)
        if amd is None or self.dra is None:
            return None
        return DraSharingStatus(
            applied_mode=_dra_mode(amd.applied.mode),
            desired_mode=_dra_mode(amd.desired.mode),
            phase=amd.phase.value,
            claim=f"{SHARING_NAMESPACE}/{amd_sharing.SHARED_CLAIM}" if amd.applied.shared else None,
            claim_device=self.dra.claim_device,
            devices=list(self.dra.devices[:LISTED_DRA_DEVICES]),
            device_count=len(self.dra.devices),
        )

    def model_fields(self, module: str | None, activation: str) -> dict[str, Any] | None:
        """ModelActivation.status.gpuSharing of one activation; None when its vendor is unmanaged."""
        vendor = self.of(module)
        if vendor is None:
            return None
        extra: dict[str, Any] = {}
        if module == amd_sharing.MODULE and vendor.applied.shared:
            extra["claim"] = f"{SHARING_NAMESPACE}/{amd_sharing.SHARED_CLAIM}"
            if self.dra is not None and self.dra.claim_device is not None and self.dra.claim_device.pci_address:
                extra["pciDevice"] = self.dra.claim_device.pci_address
        return vendor.model_fields(activation, extra)

    def claim_binding(self, module: str | None) -> ClaimBinding | None:
        """The shared claim a direct runtime of `module` binds now (AMD dra-shared), if any."""
        vendor = self.of(module)
        if module != amd_sharing.MODULE or vendor is None or vendor.holds or not vendor.applied.shared:
            return None
        return ClaimBinding(pod_claim=amd_sharing.CLAIM_REFERENCE, claim=amd_sharing.SHARED_CLAIM)

    def shared_capacity(self) -> tuple[AcceleratorCapacity, ...]:
        """What an active dra-shared allocation offers in place of the device plugin's amd.com/gpu:
        its slots on the node, so AMD models find their resource profile. Pure."""
        amd = self.vendors.get(amd_sharing.MODULE)
        if amd is None or amd.holds or not amd.applied.shared or amd.node is None or amd.slot_limit is None:
            return ()
        return (
            AcceleratorCapacity(
                node=amd.node,
                node_uid=amd.node_uid,
                compute_target="amd-gpu",
                resource_name=amd_sharing.LEGACY_RESOURCE,
                allocatable=amd.slot_limit,
            ),
        )


def _node(snapshot: Snapshot, name: str | None) -> Node | None:
    return next((n for n in snapshot.nodes if n.meta.name == name), None) if name else None


def _physical(hardware: Hardware, node: str | None, vendor: str) -> int:
    return sum(1 for gpu in hardware.gpus.get(node or "", ()) if gpu.vendor == vendor)


@dataclass(frozen=True)
class NodeChoice:
    """The node a vendor's sharing concerns: the configured one when it exists with its UID,
    else the one carrying an allocation of ours (`fallback`)."""

    node: Node | None
    name: str | None
    uid: str | None
    found: bool
    """The configured node exists with the configured UID."""


def _choose(
    snapshot: Snapshot, config: GpuSharing | None, fallback: Node | None, fallback_name: str | None = None
) -> NodeChoice:
    configured = _node(snapshot, config.node_name) if config is not None else None
    found = configured is not None and config is not None and configured.meta.uid == config.node_uid
    node = configured if found else fallback
    if node is not None:
        return NodeChoice(node=node, name=node.meta.name, uid=node.meta.uid, found=found)
    if config is not None:
        return NodeChoice(node=None, name=config.node_name, uid=config.node_uid, found=False)
    return NodeChoice(node=None, name=fallback_name, uid=None, found=False)


def _inputs(
    module: str,
    vendor: str,
    intent: Intent,
    catalogs: Catalogs,
    found: bool,
    config: GpuSharing | None,
    choice: NodeChoice,
) -> dict[str, Any]:
    """The SharingInputs fields both vendors fill the same way."""
    return {
        "module": module,
        "vendor": vendor,
        "config": config,
        "node": choice.name,
        "node_uid": choice.uid,
        "node_found": choice.found,
        "candidates": vendor_candidates(intent, module, catalogs),
        "config_invalid": not found,
    }


def _nvidia(intent: Intent, snapshot: Snapshot, hardware: Hardware, catalogs: Catalogs) -> SharingInputs:
    found, config = sharing_config(intent, nvidia_sharing.MODULE, catalogs)
    labelled = next((n for n in snapshot.nodes if nvidia_sharing.carries_our_profile(n)), None)
    choice = _choose(snapshot, config, labelled)
    physical = _physical(hardware, choice.name, NVIDIA_PCI_VENDOR)
    applied = nvidia_sharing.applied_allocation(choice.node) if choice.node is not None else Allocation()
    return SharingInputs(
        **_inputs(nvidia_sharing.MODULE, "NVIDIA", intent, catalogs, found, config, choice),
        applied=applied,
        confirmed=choice.node is not None
        and applied is not None
        and nvidia_sharing.confirms(choice.node, applied, physical),
        physical_gpus=physical,
        runtimes=vendor_runtimes(snapshot, nvidia_sharing.MODULE, catalogs),
        slots_per_gpu=True,
    )


def _amd(
    intent: Intent, snapshot: Snapshot, hardware: Hardware, catalogs: Catalogs, inventory: amd_sharing.DraInventory
) -> SharingInputs:
    found, config = sharing_config(intent, amd_sharing.MODULE, catalogs)
    claim = amd_sharing.observed_claim(snapshot, SHARING_NAMESPACE)
    claimed = claim.meta.annotations.get(amd_sharing.NODE_ANNOTATION) if claim is not None else None
    choice = _choose(snapshot, config, _node(snapshot, claimed), claimed)
    applied = amd_sharing.applied_allocation(snapshot, SHARING_NAMESPACE)
    if applied.shared:
        confirmed = choice.name is not None and amd_sharing.confirms(inventory, choice.name)
    else:
        confirmed = (
            choice.node is not None and quantity_count(choice.node.allocatable.get(amd_sharing.LEGACY_RESOURCE)) > 0
        )
    return SharingInputs(
        **_inputs(amd_sharing.MODULE, "AMD", intent, catalogs, found, config, choice),
        applied=applied,
        confirmed=confirmed,
        physical_gpus=_physical(hardware, choice.name, AMD_PCI_VENDOR),
        runtimes=vendor_runtimes(snapshot, amd_sharing.MODULE, catalogs, claims=(amd_sharing.SHARED_CLAIM,)),
        slots_per_gpu=False,
        unsupported=amd_sharing.unsupported(snapshot),
        drain_on_slot_change=False,
    )


def plan_sharing(
    *, intent: Intent, snapshot: Snapshot, hardware: Hardware, catalogs: Catalogs, field_manager: str
) -> SharingPlan:
    """Both vendors' sharing decisions and the objects they declare. Pure."""
    inventory = amd_sharing.dra_inventory(snapshot, SHARING_NAMESPACE)
    nvidia = decide_vendor_sharing(_nvidia(intent, snapshot, hardware, catalogs))
    amd = decide_vendor_sharing(_amd(intent, snapshot, hardware, catalogs, inventory))
    objects: list[DesiredObject] = []
    nvidia_node = _node(snapshot, nvidia.node)
    if nvidia_node is not None and nvidia.phase.value not in ("Conflict", "Default"):
        patch = nvidia_sharing.label_patch(nvidia_node.meta.name, nvidia.declared, field_manager)
        if patch is not None:
            objects.append(patch)
    amd_node = _node(snapshot, amd.node)
    hostname = (
        amd_node.meta.labels.get(amd_sharing.HOSTNAME_LABEL, amd_node.meta.name) if amd_node is not None else None
    )
    if amd.declared.shared and hostname is not None and amd.declared.slots is not None:
        objects.append(
            amd_sharing.shared_claim(
                namespace=SHARING_NAMESPACE, node=amd.node or "", slots=amd.declared.slots, field_manager=field_manager
            )
        )
        models = tuple(model_name(a) for a in amd.admitted) if not amd.holds else ()
        objects.extend(
            amd_sharing.admission_adapter(
                namespace=SHARING_NAMESPACE, hostname=hostname, models=models, field_manager=field_manager
            )
        )
    return SharingPlan(
        vendors=MappingProxyType({nvidia.module: nvidia, amd.module: amd}),
        objects=tuple(objects),
        dra=inventory,
        amd_hostname=hostname,
    )


def with_sharing(
    operators: dict[str, HardwareOperatorStatus], sharing: SharingPlan
) -> dict[str, HardwareOperatorStatus]:
    """hardwareOperators with each vendor's `sharing`; an AMD operator whose device plugin gave
    way to an active shared DRA device is Ready on that device. Pure."""
    updated = dict(operators)
    for module, vendor in sharing.vendors.items():
        status = updated.get(module)
        if status is None:
            continue
        changes: dict[str, Any] = {"sharing": vendor.status()}
        dra_ready = module == amd_sharing.MODULE and vendor.phase is SharingPhase.ACTIVE and vendor.applied.shared
        if dra_ready and status.phase == "Installing":
            changes |= {
                "phase": "Ready",
                "message": f"The shared DRA device on node {vendor.node} is ready ({vendor.applied.describe()}).",
            }
        updated[module] = status.model_copy(update=changes)
    return updated
