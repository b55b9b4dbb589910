"""Nodes and NFD objects for hardware scenarios."""

from __future__ import annotations

from typing import Any

VENDOR = {"nvidia": "10de", "amd": "1002", "intel": "8086"}


def node(
    name: str,
    *gpus: str,
    pci_class: str = "0300",
    allocatable: dict[str, str] | None = None,
    arch: str = "amd64",
    os: str = "linux",
    extra_labels: dict[str, str] | None = None,
    nfd: bool = True,
) -> dict[str, Any]:
    labels: dict[str, str] = {"kubernetes.io/hostname": name, "kubernetes.io/os": os, "kubernetes.io/arch": arch}
    if nfd:
        labels["feature.node.kubernetes.io/cpu-model.vendor_id"] = "AMD"
        labels["feature.node.kubernetes.io/pci-0200_10ec.present"] = "true"
        for gpu in gpus:
            labels[f"feature.node.kubernetes.io/pci-{pci_class}_{VENDOR[gpu]}.present"] = "true"
    labels.update(extra_labels or {})
    resources = {"cpu": "16", "memory": "64Gi", "pods": "110", **(allocatable or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "nodeInfo": {"bootID": f"boot-{name}", "architecture": arch, "operatingSystem": os},
        },
    }


def node_feature(node_name: str, *devices: tuple[str, str, str]) -> dict[str, Any]:
    """devices: (class, vendor, device)."""
    elements: list[dict[str, Any]] = [
        {"attributes": {"class": cls, "vendor": vendor, "device": device}} for cls, vendor, device in devices
    ]
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {
            "name": node_name,
            "namespace": "node-feature-discovery",
            "labels": {"nfd.node.kubernetes.io/node-name": node_name},
        },
        "spec": {"features": {"instances": {"pci.device": {"elements": elements}}}},
    }
