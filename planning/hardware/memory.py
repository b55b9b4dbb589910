"""The memory layout of each GPU node: discrete GPU memory or one pool shared with Linux.

A node is unified when NFD lists a GPU on it (NodeFeature pci.device; without a NodeFeature,
a label `pci-<class>_<vendor>_<device>.present`, which NFD writes when configured to add the
device) that a profile of the GPU compatibility catalog matches by PCI vendor and device and
declares `memoryArchitecture: unified` (Strix Halo: 1002:1586). Its pool is the Node UID. The rest is
host evidence, runtime-owned (the host worker annotates the Node; public manifests never seed
it):

- `physicalMemoryMi`: the OS-visible MemTotal; without the annotation, the Node's memory
  capacity, which the kubelet reads from MemTotal;
- `gpuAccessibleMi`: a conservative GTT/TTM bound within the pool, never raw firmware VRAM
  counters; unknown (None) without the annotation;
- `gpuAllocationMode`: `firmware-reserved` (a fixed carve-out outside Linux RAM),
  `shared-gtt` (allocated from Linux RAM) or `unknown` (treated as shared).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from api.host_evidence import GPU_ACCESSIBLE_ANNOTATION, GPU_ALLOCATION_MODE_ANNOTATION, PHYSICAL_MEMORY_ANNOTATION
from catalogs import Catalogs
from planning.hardware.capacity import AcceleratorCapacity
from planning.hardware.inventory import PciGpu
from planning.hardware.nodes import GPU_PCI_CLASSES
from planning.snapshot import Node

MemoryArchitecture = Literal["discrete", "unified"]
GpuAllocationMode = Literal["firmware-reserved", "shared-gtt", "unknown"]


_PCI_DEVICE_LABEL = re.compile(
    r"^feature\.node\.kubernetes\.io/pci-(?P<cls>[0-9a-f]{4})_(?P<vendor>[0-9a-f]{4})_(?P<device>[0-9a-f]{4})\.present$"
)
_BINARY = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}


@dataclass(frozen=True)
class HostMemory:
    """Where a model's GPU memory comes from. Discrete unless a unified profile matched."""

    architecture: MemoryArchitecture = "discrete"
    shared_pool_id: str | None = None
    gpu_allocation_mode: GpuAllocationMode | None = None
    physical_memory_mi: int | None = None
    gpu_accessible_mi: int | None = None

    @property
    def unified(self) -> bool:
        return self.architecture == "unified"

    @property
    def gpu_charged_to_ram(self) -> bool:
        """True when GPU allocations come out of Linux RAM (shared GTT, or not known not to)."""
        return self.unified and self.gpu_allocation_mode != "firmware-reserved"

    def to_status(self) -> dict[str, object]:
        """The camelCase fields of a unified pool; empty for discrete memory. Pure."""
        if not self.unified:
            return {}
        fields = {
            "memoryArchitecture": self.architecture,
            "sharedPoolId": self.shared_pool_id,
            "gpuAllocationMode": self.gpu_allocation_mode,
            "physicalMemoryMi": self.physical_memory_mi,
            "gpuAccessibleMi": self.gpu_accessible_mi,
        }
        return {key: value for key, value in fields.items() if value is not None}


DISCRETE = HostMemory()


def mebibytes(value: object) -> int | None:
    """A positive whole MiB count from "1234" (MiB) or a quantity ("64Gi", bytes); else None."""
    text = str(value or "").strip()
    for suffix, factor in _BINARY.items():
        if text.endswith(suffix) and text[: -len(suffix)].isdigit():
            mi = int(int(text[: -len(suffix)]) * factor)
            return mi if mi > 0 else None
    return None


def _annotated_mi(node: Node, key: str) -> int | None:
    raw = node.meta.annotations.get(key)
    return int(raw) if isinstance(raw, str) and raw.isdigit() and int(raw) > 0 else None


def _capacity_mi(node: Node) -> int | None:
    raw = str(node.capacity.get("memory", ""))
    return mebibytes(raw) or (int(raw) // (1024 * 1024) if raw.isdigit() and int(raw) >= 1024 * 1024 else None)


def is_unified(gpus: tuple[PciGpu, ...], catalogs: Catalogs) -> bool:
    """True when a unified-memory profile of the GPU compatibility catalog matches a GPU. Pure."""
    unified = {
        (device.vendor_id, device.device_id)
        for profile in catalogs.gpu_compatibility.entries
        if profile.memory_architecture == "unified"
        for device in profile.pci_devices
    }
    return any((gpu.vendor.lower(), gpu.device.lower()) in unified for gpu in gpus)


def node_memory(node: Node, gpus: tuple[PciGpu, ...], catalogs: Catalogs) -> HostMemory:
    """The memory layout of `node`, whose NFD-listed GPUs are `gpus`. Pure."""
    if not is_unified(gpus, catalogs):
        return DISCRETE
    mode = node.meta.annotations.get(GPU_ALLOCATION_MODE_ANNOTATION)
    return HostMemory(
        architecture="unified",
        shared_pool_id=node.meta.uid,
        gpu_allocation_mode=mode if mode in get_args(GpuAllocationMode) else "unknown",
        physical_memory_mi=_annotated_mi(node, PHYSICAL_MEMORY_ANNOTATION) or _capacity_mi(node),
        gpu_accessible_mi=_annotated_mi(node, GPU_ACCESSIBLE_ANNOTATION),
    )


def labelled_gpus(node: Node) -> tuple[PciGpu, ...]:
    """The GPUs NFD's device-level PCI labels name on `node` (display and 3D controllers). Pure."""
    found = []
    for key, value in sorted(node.meta.labels.items()):
        match = _PCI_DEVICE_LABEL.match(key)
        if match and value == "true" and match["cls"] in GPU_PCI_CLASSES:
            found.append(
                PciGpu(
                    node=node.meta.name,
                    node_uid=node.meta.uid,
                    vendor=match["vendor"],
                    device=match["device"],
                    pci_class=match["cls"],
                )
            )
    return tuple(found)


def memory_by_node(
    nodes: tuple[Node, ...], gpus: Mapping[str, tuple[PciGpu, ...]], catalogs: Catalogs
) -> dict[str, HostMemory]:
    """Node name -> memory layout, for every node with a GPU that NFD lists (NodeFeature first,
    device-level labels otherwise). Pure."""
    found = {}
    for node in nodes:
        listed = gpus.get(node.meta.name) or labelled_gpus(node)
        if listed:
            found[node.meta.name] = node_memory(node, listed, catalogs)
    return found


def pool_for_target(
    *, capacity: tuple[AcceleratorCapacity, ...], memory: Mapping[str, HostMemory], compute_target: str
) -> HostMemory:
    """The memory layout a model of `compute_target` runs on: a unified pool only when exactly
    one node publishes the target's resource and that node is unified; else discrete (the
    model may land on any of several nodes, so no single pool is charged). Pure."""
    nodes = sorted({c.node for c in capacity if c.compute_target == compute_target})
    layouts = [memory.get(node, DISCRETE) for node in nodes]
    return layouts[0] if len(layouts) == 1 and layouts[0].unified else DISCRETE
