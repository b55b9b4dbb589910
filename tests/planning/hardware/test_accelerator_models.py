"""Accelerator models and vendor operators: an operator is installed where its hardware is.

An accelerator model requests its vendor's operator module only where the hardware preflight
found that vendor's GPU, or where a ModuleActivation asks for the module; otherwise it waits
for a GPU (WaitingForGPU) naming the missing hardware, and Appliance.status.hardwareOperators
says no operator runs.
"""

from __future__ import annotations

import pytest

from tests.planning.builders import (
    CATALOGS,
    activation,
    appliance,
    crd,
    gpu_model,
    kustomization_for,
    plan_of,
    status_of,
)
from tests.planning.hardware.nodes import node
from tests.planning.models.world import platform

TARGETS = {
    # compute target: (vendor module, node vendor, resource, PCI vendor)
    "nvidia-gpu": ("gpu", "nvidia", "nvidia.com/gpu", "10de"),
    "amd-gpu": ("amd-gpu", "amd", "amd.com/gpu", "1002"),
    "intel-gpu": ("intel-gpu", "intel", "gpu.intel.com/xe", "8086"),
}


def operator(result, module: str) -> dict:
    return status_of(result, "Appliance", "local")["hardwareOperators"][module]


def kustomization_names(result) -> set[str]:
    return {k.name for k in result.modules.kustomizations}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_an_accelerator_model_on_a_machine_without_its_hardware_installs_no_operator(target):
    module, _, _, _ = TARGETS[target]
    result = plan_of(*platform(), node("cpu-1"), gpu_model("m", target))
    assert result.modules.outcome(module) is None
    assert CATALOGS.modules.get(module).kustomization not in kustomization_names(result)
    assert module not in status_of(result, "ModelActivation", "m").get("requiredModules", [])


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_an_accelerator_model_without_its_hardware_waits_for_a_gpu_naming_what_is_missing(target):
    module, _, _, pci_vendor = TARGETS[target]
    status = status_of(plan_of(*platform(), node("cpu-1"), gpu_model("m", target)), "ModelActivation", "m")
    assert (status["phase"], status["reason"]) == ("WaitingForGPU", "WaitingForGPU")
    assert CATALOGS.compute_targets.get(target).display_name in status["message"]
    assert pci_vendor in status["message"]
    assert f"ModuleActivation of module {module}" in status["message"]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_hardware_status_says_no_operator_runs_where_a_model_waits_for_absent_hardware(target):
    module, _, _, _ = TARGETS[target]
    gpu = operator(plan_of(*platform(), node("cpu-1"), gpu_model("m", target)), module)
    assert gpu["operatorActive"] is False
    assert gpu["managedBy"] == "none"
    assert gpu["phase"] == "NotRequired"
    assert "kept" not in gpu["message"]
    assert "ModelActivation/m" in gpu["message"]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_an_accelerator_model_requests_its_operator_where_the_preflight_found_the_vendor(target):
    module, vendor, _, _ = TARGETS[target]
    result = plan_of(*platform(), node("gpu-1", vendor), gpu_model("m", target))
    assert module in status_of(result, "ModelActivation", "m")["requiredModules"]
    assert CATALOGS.modules.get(module).kustomization in kustomization_names(result)


def test_an_explicit_activation_installs_the_operator_a_model_asks_for_without_hardware():
    result = plan_of(*platform(), node("cpu-1"), activation("gpu"), gpu_model("m"))
    assert "platform-gpu" in kustomization_names(result)
    assert "gpu" in status_of(result, "ModelActivation", "m")["requiredModules"]
    gpu = operator(result, "gpu")
    assert gpu["operatorActive"] is False
    assert gpu["phase"] == "Installing"
    assert "kept" not in gpu["message"]


def test_a_gpu_that_fails_the_preflight_makes_the_model_wait_naming_the_node():
    status = status_of(
        plan_of(*platform(), node("win", "nvidia", os="windows"), gpu_model("m")), "ModelActivation", "m"
    )
    assert status["phase"] == "WaitingForGPU"
    assert "win" in status["message"] and "not linux" in status["message"]


def test_a_foreign_operator_serves_models_with_no_operator_of_ours():
    foreign = (node("gpu-1", "nvidia", allocatable={"nvidia.com/gpu": "1"}), crd("clusterpolicies.nvidia.com"))
    result = plan_of(*platform(), *foreign, gpu_model("m"))
    assert "platform-gpu" not in kustomization_names(result)
    assert [m.body["spec"]["resourceProfile"].rsplit("-", 1)[0] for m in result.models.models] == [
        "magicstick-nvidia-gpu"
    ]
    assert operator(result, "gpu")["phase"] == "Conflict"


@pytest.mark.parametrize(
    ("observed", "active"),
    [
        pytest.param((), False, id="requested-not-yet-created"),
        pytest.param((kustomization_for("gpu", None),), False, id="kustomization-created-crd-not-served"),
        pytest.param((kustomization_for("gpu"), crd("clusterpolicies.nvidia.com")), True, id="installed"),
    ],
)
def test_an_operator_is_active_only_once_it_is_installed(observed, active):
    result = plan_of(appliance(), node("gpu-1", "nvidia"), *observed)
    assert operator(result, "gpu")["operatorActive"] is active
