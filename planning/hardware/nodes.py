"""What each node says about its GPUs, from Node Feature Discovery's PCI labels.

NFD labels a node `feature.node.kubernetes.io/pci-<class>_<vendor>.present: "true"` for each
PCI class and vendor it finds (an optional `_<device>` may follow the vendor). Display and 3D
controllers (classes 0300, 0302, 0380) are GPUs; every other class is ignored.

The platform preflight admits a node as compatible when it runs Linux on amd64 or arm64; a
detected GPU on any other node is reported but never gets an operator.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from planning.snapshot import Node

GPU_PCI_CLASSES = frozenset({"0300", "0302", "0380"})
NFD_LABEL_PREFIX = "feature.node.kubernetes.io/"
_PCI_LABEL = re.compile(
    r"^feature\.node\.kubernetes\.io/pci-(?P<cls>[0-9a-f]{4})_(?P<vendor>[0-9a-f]{4})(?:_[0-9a-f]{4})?\.present$"
)
SUPPORTED_ARCHITECTURES = frozenset({"amd64", "arm64"})


@dataclass(frozen=True)
class NodeGpus:
    """One node: the GPU vendors NFD reports on it and whether it passes the preflight."""

    name: str
    uid: str | None
    vendors: frozenset[str]
    nfd_reporting: bool
    compatible: bool
    incompatibility: str = ""


def gpu_vendors(labels: Mapping[str, object]) -> frozenset[str]:
    """PCI vendor IDs that have a display or 3D controller in `labels`."""
    vendors: set[str] = set()
    for key, value in dict(labels).items():
        match = _PCI_LABEL.match(key)
        if match and value == "true" and match["cls"] in GPU_PCI_CLASSES:
            vendors.add(match["vendor"])
    return frozenset(vendors)


def preflight(node: Node) -> str:
    """Empty when the node may run a GPU operator, else why not."""
    labels = node.meta.labels
    operating_system = labels.get("kubernetes.io/os") or node.node_info.get("operatingSystem")
    architecture = labels.get("kubernetes.io/arch") or node.node_info.get("architecture")
    if operating_system != "linux":
        return f"node {node.meta.name} runs {operating_system or 'an unknown operating system'}, not linux"
    if architecture not in SUPPORTED_ARCHITECTURES:
        return f"node {node.meta.name} is {architecture or 'of unknown architecture'}, not amd64 or arm64"
    return ""


def node_gpus(node: Node) -> NodeGpus:
    problem = preflight(node)
    return NodeGpus(
        name=node.meta.name,
        uid=node.meta.uid,
        vendors=gpu_vendors(node.meta.labels),
        nfd_reporting=any(key.startswith(NFD_LABEL_PREFIX) for key in node.meta.labels),
        compatible=not problem,
        incompatibility=problem,
    )
