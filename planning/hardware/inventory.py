"""Physical GPU inventory per node, from NFD's NodeFeature objects.

NodeFeature.spec.features.instances["pci.device"].elements lists one element per PCI device
with attributes class, vendor, device (and subsystem ids). Each display or 3D controller is
one physical GPU: inventory counts devices, never sharing slots.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from api.status import PciDeviceStatus
from planning.hardware.nodes import GPU_PCI_CLASSES
from planning.snapshot import Node, NodeFeature

if TYPE_CHECKING:
    from planning.hardware.memory import HostMemory

PCI_DEVICE_FEATURE = "pci.device"


@dataclass(frozen=True)
class PciGpu:
    node: str
    node_uid: str | None
    vendor: str
    device: str
    pci_class: str
    subsystem_vendor: str | None = None
    subsystem_device: str | None = None

    def to_status(self, memory: HostMemory | None = None) -> PciDeviceStatus:
        """The device's status entry; a unified pool adds its memory layout. Pure."""
        unified = memory if memory is not None and memory.unified else None
        return PciDeviceStatus(
            node=self.node,
            node_uid=self.node_uid,
            vendor=self.vendor,
            device=self.device,
            pci_class=self.pci_class,
            subsystem_vendor=self.subsystem_vendor,
            subsystem_device=self.subsystem_device,
            memory_architecture=unified.architecture if unified is not None else None,
            shared_pool_id=unified.shared_pool_id if unified is not None else None,
            gpu_allocation_mode=unified.gpu_allocation_mode if unified is not None else None,
            physical_memory_mi=unified.physical_memory_mi if unified is not None else None,
            gpu_accessible_mi=unified.gpu_accessible_mi if unified is not None else None,
        )


def _elements(feature: NodeFeature) -> tuple[Mapping[str, Any], ...]:
    instances = (feature.spec.get("features") or {}).get("instances") or {}
    return tuple((instances.get(PCI_DEVICE_FEATURE) or {}).get("elements") or ())


def gpus_by_node(nodes: tuple[Node, ...], features: tuple[NodeFeature, ...]) -> dict[str, tuple[PciGpu, ...]]:
    """Every GPU NFD lists, per node name, sorted; nodes absent from the snapshot are skipped."""
    uids = {node.meta.name: node.meta.uid for node in nodes}
    found: dict[str, list[PciGpu]] = {}
    for feature in features:
        node = feature.node_name
        if node not in uids:
            continue
        for element in _elements(feature):
            attributes = element.get("attributes") or {}
            pci_class = str(attributes.get("class", ""))
            if pci_class not in GPU_PCI_CLASSES:
                continue
            found.setdefault(node, []).append(
                PciGpu(
                    node=node,
                    node_uid=uids[node],
                    vendor=str(attributes.get("vendor", "")),
                    device=str(attributes.get("device", "")),
                    pci_class=pci_class,
                    subsystem_vendor=attributes.get("subsystem_vendor"),
                    subsystem_device=attributes.get("subsystem_device"),
                )
            )
    return {
        node: tuple(
            sorted(gpus, key=lambda g: (g.vendor, g.device, g.subsystem_vendor or "", g.subsystem_device or ""))
        )
        for node, gpus in sorted(found.items())
    }
