"""Unified memory: an APU's GPU shares the node's RAM, recognised from NFD by the GPU
compatibility catalog, and reported per device in Appliance.status.hardwareOperators."""

from __future__ import annotations

import pytest

from planning.hardware.inventory import PciGpu
from planning.hardware.memory import (
    GPU_ACCESSIBLE_ANNOTATION,
    GPU_ALLOCATION_MODE_ANNOTATION,
    PHYSICAL_MEMORY_ANNOTATION,
    is_unified,
    node_memory,
    pool_for_target,
)
from planning.hardware.operators import observe_hardware
from planning.snapshot import Snapshot
from tests.planning.builders import CATALOGS, appliance, plan_of, status_of
from tests.planning.hardware.nodes import node, node_feature

STRIX_HALO = ("0300", "1002", "1586")
DISCRETE_AMD = ("0300", "1002", "744c")


def _apu(annotations: dict[str, str] | None = None, *, allocatable: dict[str, str] | None = None) -> dict:
    obj = node("apu-1", "amd", allocatable={"memory": "128Gi", **(allocatable or {})})
    obj["status"]["capacity"]["memory"] = "128Gi"
    obj["metadata"]["annotations"] = annotations or {}
    return obj


def _memory(*objects: dict):
    snapshot = Snapshot.from_objects(list(objects))
    return observe_hardware(snapshot, CATALOGS)


@pytest.mark.parametrize(
    ("device", "unified"),
    [(STRIX_HALO, True), (DISCRETE_AMD, False), (("0300", "10de", "2684"), False)],
    ids=["strix-halo", "discrete-amd", "nvidia"],
)
def test_a_gpu_is_unified_only_when_a_unified_catalog_profile_lists_its_pci_ids(device, unified) -> None:
    gpu = PciGpu(node="n", node_uid="u", pci_class=device[0], vendor=device[1], device=device[2])
    assert is_unified((gpu,), CATALOGS) is unified


@pytest.mark.parametrize(
    ("annotations", "mode", "physical", "accessible"),
    [
        ({}, "unknown", 131072, None),
        (
            {
                GPU_ALLOCATION_MODE_ANNOTATION: "shared-gtt",
                PHYSICAL_MEMORY_ANNOTATION: "126976",
                GPU_ACCESSIBLE_ANNOTATION: "98304",
            },
            "shared-gtt",
            126976,
            98304,
        ),
        ({GPU_ALLOCATION_MODE_ANNOTATION: "firmware-reserved"}, "firmware-reserved", 131072, None),
        ({GPU_ALLOCATION_MODE_ANNOTATION: "something-else", GPU_ACCESSIBLE_ANNOTATION: "-5"}, "unknown", 131072, None),
    ],
    ids=["no-host-evidence", "shared-gtt-evidence", "firmware-reserved", "malformed-evidence"],
)
def test_a_unified_node_reports_its_pool_from_host_evidence_and_its_node_uid(
    annotations, mode, physical, accessible
) -> None:
    hardware = _memory(_apu(annotations), node_feature("apu-1", STRIX_HALO))
    memory = hardware.memory["apu-1"]
    assert (memory.architecture, memory.shared_pool_id, memory.gpu_allocation_mode) == ("unified", "uid-apu-1", mode)
    assert (memory.physical_memory_mi, memory.gpu_accessible_mi) == (physical, accessible)


def test_a_discrete_gpu_node_has_no_shared_pool() -> None:
    hardware = _memory(_apu(), node_feature("apu-1", DISCRETE_AMD))
    assert hardware.memory["apu-1"].unified is False
    assert hardware.memory["apu-1"].to_status() == {}


def test_a_target_published_only_by_one_unified_node_runs_on_its_pool() -> None:
    hardware = _memory(_apu(allocatable={"amd.com/gpu": "1"}), node_feature("apu-1", STRIX_HALO))
    assert (
        pool_for_target(capacity=hardware.capacity, memory=hardware.memory, compute_target="amd-gpu").shared_pool_id
        == "uid-apu-1"
    )
    assert (
        pool_for_target(capacity=hardware.capacity, memory=hardware.memory, compute_target="nvidia-gpu").unified
        is False
    )


def test_a_target_published_by_a_unified_and_a_discrete_node_is_treated_as_discrete() -> None:
    other = node("dgpu-1", "amd", allocatable={"amd.com/gpu": "1"})
    hardware = _memory(
        _apu(allocatable={"amd.com/gpu": "1"}),
        node_feature("apu-1", STRIX_HALO),
        other,
        node_feature("dgpu-1", DISCRETE_AMD),
    )
    assert (
        pool_for_target(capacity=hardware.capacity, memory=hardware.memory, compute_target="amd-gpu").unified is False
    )


def test_a_unified_device_status_carries_the_memory_layout_of_its_pool() -> None:
    annotations = {GPU_ALLOCATION_MODE_ANNOTATION: "shared-gtt", GPU_ACCESSIBLE_ANNOTATION: "98304"}
    hardware = _memory(_apu(annotations), node_feature("apu-1", STRIX_HALO))
    (gpu,) = hardware.gpus["apu-1"]
    device = gpu.to_status(hardware.memory["apu-1"]).to_wire()
    assert {
        k: device[k]
        for k in ("memoryArchitecture", "sharedPoolId", "gpuAllocationMode", "physicalMemoryMi", "gpuAccessibleMi")
    } == {
        "memoryArchitecture": "unified",
        "sharedPoolId": "uid-apu-1",
        "gpuAllocationMode": "shared-gtt",
        "physicalMemoryMi": 131072,
        "gpuAccessibleMi": 98304,
    }


def test_a_discrete_device_status_carries_no_memory_layout() -> None:
    result = plan_of(appliance(), _apu(), node_feature("apu-1", DISCRETE_AMD))
    (device,) = status_of(result, "Appliance", "local")["hardwareOperators"]["amd-gpu"]["devices"]
    assert "memoryArchitecture" not in device


def test_a_node_memory_without_listed_gpus_stays_discrete() -> None:
    snapshot = Snapshot.from_objects([_apu()])
    assert node_memory(snapshot.nodes[0], (), CATALOGS).unified is False


def test_a_node_without_a_node_feature_is_recognised_as_unified_from_its_device_level_pci_label() -> None:
    labelled = node("apu-1", extra_labels={"feature.node.kubernetes.io/pci-0300_1002_1586.present": "true"})
    assert _memory(labelled).memory["apu-1"].shared_pool_id == "uid-apu-1"


def test_a_node_feature_listing_a_discrete_gpu_wins_over_labels() -> None:
    labelled = node("apu-1", extra_labels={"feature.node.kubernetes.io/pci-0300_1002_1586.present": "true"})
    assert _memory(labelled, node_feature("apu-1", DISCRETE_AMD)).memory["apu-1"].unified is False


def test_a_vendor_level_pci_label_alone_says_nothing_about_unified_memory() -> None:
    assert "gpu-1" not in _memory(node("gpu-1", "amd")).memory
