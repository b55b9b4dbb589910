"""GPU detection, vendor operator requests and Appliance.status.hardwareOperators, by scenario."""

from __future__ import annotations

import pytest

from planning.hardware.amd import ELIGIBLE_LABEL
from planning.hardware.capacity import published_resource
from planning.labels import SEEDED
from tests.planning.builders import CATALOGS, activation, appliance, crd, kustomization_for, plan_of, status_of
from tests.planning.hardware.nodes import node, node_feature

PROVIDERS = ("gpu", "amd-gpu", "intel-gpu")


def operators(result) -> dict:
    return status_of(result, "Appliance", "local")["hardwareOperators"]


def seeded_modules(result) -> set[str]:
    return {s.body["spec"]["module"] for s in result.modules.seeded_activations}


def hardware_activation(module: str) -> dict:
    obj = activation(module, labels={SEEDED: "true", "app.kubernetes.io/managed-by": "magicstick"})
    obj["metadata"]["annotations"] = {"appliance.magicstick.dev/seeded-from": "hardware-detection"}
    return obj


def installed(module: str) -> list[dict]:
    """The provider requested, its Kustomization Ready and its CRD served."""
    return [
        hardware_activation(module),
        kustomization_for(module),
        *[crd(n) for n in CATALOGS.modules.get(module).required_crds],
    ]


def test_a_cpu_only_appliance_reports_all_three_providers_as_not_required():
    result = plan_of(appliance(), node("cpu-1"))
    statuses = operators(result)
    assert set(statuses) == set(PROVIDERS)
    for provider in PROVIDERS:
        assert statuses[provider]["phase"] == "NotRequired"
        assert statuses[provider]["needed"] is False
        assert statuses[provider]["operatorActive"] is False
        assert statuses[provider]["managedBy"] == "none"
        assert statuses[provider]["allocatableResources"] == 0
    assert seeded_modules(result) == set()


def test_one_nvidia_node_requests_only_the_nvidia_operator():
    result = plan_of(appliance(), node("gpu-1", "nvidia"))
    assert seeded_modules(result) == {"gpu"}
    (seeded,) = result.modules.seeded_activations
    assert seeded.body["metadata"]["annotations"]["appliance.magicstick.dev/seeded-from"] == "hardware-detection"
    assert result.modules.outcome("gpu").kustomization.body["spec"]["wait"] is True
    statuses = operators(result)
    assert statuses["gpu"]["detectedNodes"] == ["gpu-1"]
    assert statuses["gpu"]["needed"] is True
    assert statuses["amd-gpu"]["phase"] == "NotRequired"
    assert statuses["intel-gpu"]["phase"] == "NotRequired"


def test_an_nvidia_provider_is_ready_once_a_compatible_node_publishes_nvidia_gpus():
    result = plan_of(appliance(), node("gpu-1", "nvidia", allocatable={"nvidia.com/gpu": "2"}), *installed("gpu"))
    gpu = operators(result)["gpu"]
    assert gpu["phase"] == "Ready"
    assert gpu["allocatableResources"] == 2
    assert gpu["resourceNames"] == ["nvidia.com/gpu"]
    assert gpu["managedBy"] == "magicstick"
    assert gpu["operatorActive"] is True
    assert gpu["operatorVersion"] == CATALOGS.modules.get("gpu").operator_version
    assert gpu["message"] == "2 allocatable GPU resource(s) are ready."


def test_an_operator_whose_controller_runs_but_publishes_no_resource_is_not_ready():
    result = plan_of(appliance(), node("gpu-1", "nvidia"), *installed("gpu"))
    gpu = operators(result)["gpu"]
    assert gpu["phase"] == "Installing"
    assert "nvidia.com/gpu" in gpu["message"]


def test_a_3d_controller_counts_as_a_gpu_and_a_network_card_does_not():
    result = plan_of(appliance(), node("gpu-1", "nvidia", pci_class="0302"))
    assert seeded_modules(result) == {"gpu"}
    only_network = plan_of(
        appliance(), node("n", extra_labels={"feature.node.kubernetes.io/pci-0200_8086.present": "true"})
    )
    assert seeded_modules(only_network) == set()


def test_amd_only_requests_the_amd_operator_and_labels_the_eligible_node():
    result = plan_of(appliance(), node("halo", "amd"))
    assert seeded_modules(result) == {"amd-gpu"}
    assert operators(result)["amd-gpu"]["detectedNodes"] == ["halo"]
    (provider,) = result.hardware_providers
    assert provider.module == "amd-gpu"
    (patch,) = provider.objects
    assert patch.patch and patch.kind == "Node" and patch.name == "halo"
    assert patch.body["metadata"]["labels"] == {ELIGIBLE_LABEL: "true"}


def test_the_amd_device_config_waits_for_its_crd_then_selects_eligible_nodes_with_the_device_plugin():
    without_crd = plan_of(
        appliance(), node("halo", "amd"), hardware_activation("amd-gpu"), kustomization_for("amd-gpu")
    )
    assert [o.kind for o in without_crd.hardware_providers[0].objects] == ["Node"]
    result = plan_of(appliance(), node("halo", "amd", allocatable={"amd.com/gpu": "1"}), *installed("amd-gpu"))
    device_config = next(o for o in result.hardware_providers[0].objects if o.kind == "DeviceConfig")
    spec = device_config.body["spec"]
    assert dict(spec["selector"]) == {ELIGIBLE_LABEL: "true"}
    assert spec["devicePlugin"]["enableDevicePlugin"] is True
    assert spec["draDriver"]["enable"] is False
    assert spec["driver"]["enable"] is False
    assert operators(result)["amd-gpu"]["phase"] == "Ready"


@pytest.mark.parametrize("resource", ["gpu.intel.com/xe", "gpu.intel.com/i915"])
def test_intel_is_ready_with_whichever_resource_the_node_publishes(resource):
    result = plan_of(appliance(), node("arc", "intel", allocatable={resource: "1"}), *installed("intel-gpu"))
    intel = operators(result)["intel-gpu"]
    assert intel["phase"] == "Ready"
    assert intel["resourceNames"] == [resource]
    assert published_resource(result.hardware.capacity, "intel-gpu", CATALOGS) == resource


def test_intel_prefers_xe_when_both_resources_are_published():
    result = plan_of(
        appliance(),
        node("a", "intel", allocatable={"gpu.intel.com/i915": "1"}),
        node("b", "intel", allocatable={"gpu.intel.com/xe": "1"}),
    )
    assert published_resource(result.hardware.capacity, "intel-gpu", CATALOGS) == "gpu.intel.com/xe"


def test_the_capacity_view_lists_each_node_target_and_resource():
    result = plan_of(
        appliance(),
        node("a", "nvidia", allocatable={"nvidia.com/gpu": "2"}),
        node("b", "intel", allocatable={"gpu.intel.com/i915": "1"}),
    )
    assert [(c.node, c.compute_target, c.resource_name, c.allocatable) for c in result.hardware.capacity] == [
        ("a", "nvidia-gpu", "nvidia.com/gpu", 2),
        ("b", "intel-gpu", "gpu.intel.com/i915", 1),
    ]
    assert published_resource(result.hardware.capacity, "amd-gpu", CATALOGS) is None


def test_a_mixed_node_set_requests_each_vendor_present_and_no_other():
    result = plan_of(appliance(), node("n1", "nvidia"), node("n2", "amd", "intel"), node("cpu"))
    assert seeded_modules(result) == {"gpu", "amd-gpu", "intel-gpu"}
    statuses = operators(result)
    assert statuses["gpu"]["detectedNodes"] == ["n1"]
    assert statuses["amd-gpu"]["detectedNodes"] == ["n2"]
    assert statuses["intel-gpu"]["detectedNodes"] == ["n2"]


def test_labels_that_vanish_for_one_run_keep_the_requested_operator():
    result = plan_of(
        appliance(),
        node("gpu-1", nfd=False, extra_labels={}),
        *installed("gpu"),
    )
    assert result.modules.outcome("gpu").kustomization is not None
    assert [s.name for s in result.modules.seeded_activations] == ["gpu"]
    gpu = operators(result)["gpu"]
    assert gpu["phase"] == "Unknown"
    assert "kept" in gpu["message"]


def test_amd_eligibility_survives_a_run_in_which_nfd_reports_nothing():
    silent = node("halo", nfd=False, extra_labels={ELIGIBLE_LABEL: "true"})
    result = plan_of(appliance(), silent, *installed("amd-gpu"))
    patches = [o for o in result.hardware_providers[0].objects if o.kind == "Node"]
    assert [p.name for p in patches] == ["halo"]


def test_a_pre_existing_foreign_nvidia_operator_is_a_conflict_and_is_not_requested():
    result = plan_of(appliance(), node("gpu-1", "nvidia"), crd("clusterpolicies.nvidia.com"))
    assert seeded_modules(result) == set()
    assert result.modules.outcome("gpu") is None
    gpu = operators(result)["gpu"]
    assert gpu["phase"] == "Conflict"
    assert "clusterpolicies.nvidia.com" in gpu["message"]
    assert gpu["managedBy"] == "external"
    assert gpu["operatorActive"] is True


def test_an_operator_of_ours_whose_crd_exists_is_not_a_conflict():
    result = plan_of(appliance(), node("gpu-1", "nvidia"), *installed("gpu"))
    assert operators(result)["gpu"]["phase"] != "Conflict"


def test_an_explicit_disabled_activation_wins_over_detected_hardware():
    result = plan_of(appliance(), node("gpu-1", "nvidia"), activation("gpu", enabled=False))
    assert seeded_modules(result) == set()
    assert result.modules.outcome("gpu").kustomization is None
    gpu = operators(result)["gpu"]
    assert gpu["phase"] == "Disabled"


def test_a_gpu_on_a_node_that_fails_the_preflight_is_unsupported():
    result = plan_of(appliance(), node("win", "nvidia", os="windows"))
    assert seeded_modules(result) == set()
    gpu = operators(result)["gpu"]
    assert gpu["phase"] == "Unsupported"
    assert gpu["detectedNodes"] == ["win"] and gpu["compatibleNodes"] == []
    assert "not linux" in gpu["message"]


def test_devices_list_physical_gpus_with_node_identity_and_never_sharing_slots():
    result = plan_of(
        appliance(),
        node("gpu-1", "nvidia", allocatable={"nvidia.com/gpu": "8"}),
        node_feature("gpu-1", ("0300", "10de", "2684"), ("0302", "10de", "2330"), ("0200", "10ec", "8125")),
        *installed("gpu"),
    )
    gpu = operators(result)["gpu"]
    assert gpu["allocatableResources"] == 8
    assert [(d["node"], d["nodeUID"], d["device"], d["class"]) for d in gpu["devices"]] == [
        ("gpu-1", "uid-gpu-1", "2330", "0302"),
        ("gpu-1", "uid-gpu-1", "2684", "0300"),
    ]


def test_a_failing_operator_kustomization_makes_its_provider_degraded():
    result = plan_of(
        appliance(),
        node("gpu-1", "nvidia"),
        hardware_activation("gpu"),
        kustomization_for("gpu", "False", reason="HealthCheckFailed", message="driver daemonset not ready"),
    )
    gpu = operators(result)["gpu"]
    assert gpu["phase"] == "Degraded"
    assert "driver daemonset not ready" in gpu["message"]
