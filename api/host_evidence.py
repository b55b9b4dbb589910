"""The host-evidence annotation: its key, its fields and its fingerprint rule, once for both sides.

The host agent (services/host_agent) writes `appliance.magicstick.dev/host-evidence` on its own
Node; the program (planning/hardware/evidence.py) reads it and decides whether it is current.
Both build and check the document with the functions below, so a change of format is one change.

The annotation holds a JSON object (version 1):

    nodeUID       metadata.uid of the Node the host believes it is
    bootID        /proc/sys/kernel/random/boot_id, as the kubelet reports status.nodeInfo.bootID
    kernel        uname -r, as the kubelet reports status.nodeInfo.kernelVersion
    architecture  the GPU architecture the host driver reports (gfx1151), or ""
    driverReady   the host amdgpu driver is loaded and its device nodes are present
    pciDevices    the GPUs' "vendor:device" IDs the host sees, lower-case and sorted
    observedAt    when it was written (RFC 3339, UTC, whole seconds)
    fingerprint   "sha256:" + hex SHA-256 of the canonical JSON (sorted keys, compact) of every
                  other field except observedAt: the host's identity for validation results

Nothing else leaves the host: no serial number, no MAC address, no PCI slot address. Pure.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

HOST_EVIDENCE_ANNOTATION: Final = "appliance.magicstick.dev/host-evidence"
EVIDENCE_VERSION: Final = 1
MAX_EVIDENCE_CHARS: Final = 4096
EVIDENCE_FIELDS: Final = (
    "nodeUID",
    "bootID",
    "kernel",
    "architecture",
    "driverReady",
    "pciDevices",
    "observedAt",
    "fingerprint",
)


def fingerprint_of(fields: dict[str, Any]) -> str:
    """The fingerprint of an evidence document: every field but observedAt and fingerprint. Pure."""
    content = {k: v for k, v in fields.items() if k not in ("observedAt", "fingerprint")}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def evidence_document(
    *,
    node_uid: str,
    boot_id: str,
    kernel: str,
    architecture: str,
    driver_ready: bool,
    pci_devices: tuple[str, ...],
    observed_at: str,
) -> dict[str, Any]:
    """The annotation's value as a JSON object, fingerprint included. Pure."""
    fields: dict[str, Any] = {
        "nodeUID": node_uid,
        "bootID": boot_id,
        "kernel": kernel,
        "architecture": architecture,
        "driverReady": driver_ready,
        "pciDevices": sorted(device.lower() for device in pci_devices),
        "observedAt": observed_at,
    }
    return {**fields, "fingerprint": fingerprint_of(fields)}


def evidence_annotation(**fields: Any) -> str:
    """The annotation's text: `evidence_document(**fields)` as compact, key-sorted JSON. Pure."""
    return json.dumps(evidence_document(**fields), sort_keys=True, separators=(",", ":"))


HOST_PLANS_ANNOTATION: Final = "appliance.magicstick.dev/host-plans"
"""Beside the evidence, on the same Node: the plans the host agent offers, each with the planId a
HostOperation binds (services/host_agent/plans.py defines the document)."""
AMD_GPU_ELIGIBLE_LABEL: Final = "appliance.magicstick.dev/amd-gpu-eligible"
"""Set by the program (never by the host) on a node its current evidence made eligible: GPU
preparation completes once it is there with an allocatable amd.com/gpu."""

PHYSICAL_MEMORY_ANNOTATION: Final = "appliance.magicstick.dev/physical-memory-mi"
"""The OS-visible MemTotal, in MiB."""
GPU_ACCESSIBLE_ANNOTATION: Final = "appliance.magicstick.dev/gpu-accessible-mi"
"""A conservative bound of the GPU memory the driver's GTT/TTM pool allows, in MiB."""
GPU_ALLOCATION_MODE_ANNOTATION: Final = "appliance.magicstick.dev/gpu-allocation-mode"
"""firmware-reserved, shared-gtt or unknown (planning/hardware/memory.py reads all three)."""
HOST_ANNOTATIONS: Final = (
    HOST_EVIDENCE_ANNOTATION,
    HOST_PLANS_ANNOTATION,
    PHYSICAL_MEMORY_ANNOTATION,
    GPU_ACCESSIBLE_ANNOTATION,
    GPU_ALLOCATION_MODE_ANNOTATION,
)
"""Every annotation the host agent writes on its own Node, and the only ones its identity may change."""
