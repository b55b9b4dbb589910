"""An omitted computeTarget or engine is chosen, said in status, and kept once a model runs."""

from __future__ import annotations

from typing import Any

import pytest

from api.crdgen import CRD_DIRECTORY
from tests.planning.builders import CATALOGS, runtime, status_of
from tests.planning.hardware.nodes import node
from tests.planning.models.direct_world import plan_with
from tests.planning.models.world import gpu_node, platform
from tests.support.crd_defaults import with_defaults
from tests.support.crd_schema import CrdSchemaRegistry

OWN_CRDS = CrdSchemaRegistry(CRD_DIRECTORY)


def preset_only(name: str, preset: str, *, status: dict | None = None, **local: Any) -> dict:
    """A ModelActivation naming only its preset (and `local`), as the API server stores it."""
    obj = runtime(
        "ModelActivation",
        name,
        {"type": "local", "targetNamespace": "ai", "local": {"preset": preset, **local}},
        status=status,
    )
    return with_defaults(obj, registry=OWN_CRDS)


WORLDS = {
    "cpu only": lambda: [*platform(), node("cpu-1")],
    "nvidia publishing": lambda: [*platform("gpu"), gpu_node("nvidia.com/gpu")],
    "amd publishing": lambda: [*platform("amd-gpu"), gpu_node("amd.com/gpu")],
    "nvidia detected, not yet publishing": lambda: [*platform("gpu"), node("gpu-1", "nvidia")],
}


@pytest.mark.parametrize(
    ("preset", "world", "target", "engine", "choice"),
    [
        ("qwen3635b", "nvidia publishing", "nvidia-gpu", "VLLM", "PresetDefault"),
        ("qwen3635b", "amd publishing", "amd-gpu", "VLLM", "OfferedAccelerator"),
        ("qwen3635b", "cpu only", "nvidia-gpu", "VLLM", "PresetDefaultNotOffered"),
        ("qwen2505bcpu", "nvidia publishing", "cpu", "VLLM", "PresetDefault"),
        ("qwen306b", "nvidia publishing", "nvidia-gpu", "VLLM", "OfferedAccelerator"),
        ("qwen306b", "amd publishing", "amd-gpu", "VLLM", "OfferedAccelerator"),
        ("qwen306b", "nvidia detected, not yet publishing", "nvidia-gpu", "VLLM", "OfferedAccelerator"),
        ("qwen306b", "cpu only", "cpu", "VLLM", "CpuVariant"),
        ("qwen352bvlembedding", "nvidia publishing", "nvidia-gpu", "VLLM", "OfferedAccelerator"),
    ],
)
def test_an_omitted_compute_target_is_chosen_from_the_preset_and_the_hardware_and_said_in_status(
    preset, world, target, engine, choice
):
    result = plan_with(*WORLDS[world](), preset_only("m", preset))
    status = status_of(result, "ModelActivation", "m")
    assert status["reason"] != "InvalidSpec", status["message"]
    assert (status["computeTarget"], status["engine"], status["computeTargetChoice"]) == (target, engine, choice)
    assert f"computeTarget {target}" in status["message"]


def test_the_seeds_preset_only_activation_is_not_rejected_on_a_cpu_only_cluster():
    result = plan_with(*WORLDS["cpu only"](), preset_only("qwen3635b", "qwen3635b"))
    status = status_of(result, "ModelActivation", "qwen3635b")
    assert (status["phase"], status["computeTarget"]) == ("WaitingForGPU", "nvidia-gpu")


def test_a_preset_nothing_can_serve_here_is_an_invalid_spec_naming_the_field_and_what_the_preset_offers():
    result = plan_with(*WORLDS["cpu only"](), preset_only("m", "qwen352bvlembedding"))
    status = status_of(result, "ModelActivation", "m")
    assert status["reason"] == "InvalidSpec"
    assert status["message"].startswith("spec.local.computeTarget")
    assert "VLLM on nvidia-gpu" in status["message"]


@pytest.mark.parametrize("world", ["cpu only", "amd publishing"])
def test_an_explicit_compute_target_always_wins(world):
    result = plan_with(*WORLDS[world](), preset_only("m", "qwen306b", computeTarget="nvidia-gpu"))
    status = status_of(result, "ModelActivation", "m")
    assert status["computeTarget"] == "nvidia-gpu"
    assert "computeTargetChoice" not in status


def test_an_accelerator_once_chosen_stays_while_the_gpu_resource_blinks_away():
    earlier = {
        "computeTarget": "nvidia-gpu",
        "computeTargetChoice": "OfferedAccelerator",
        "preset": "qwen306b",
        "engine": "VLLM",
    }
    result = plan_with(*WORLDS["cpu only"](), preset_only("m", "qwen306b", status=earlier))
    status = status_of(result, "ModelActivation", "m")
    assert (status["computeTarget"], status["computeTargetChoice"], status["phase"]) == (
        "nvidia-gpu",
        "OfferedAccelerator",
        "WaitingForGPU",
    )


def test_a_cpu_fallback_moves_to_an_accelerator_that_appears():
    earlier = {"computeTarget": "cpu", "computeTargetChoice": "CpuVariant", "preset": "qwen306b", "engine": "VLLM"}
    result = plan_with(*WORLDS["nvidia publishing"](), preset_only("m", "qwen306b", status=earlier))
    assert status_of(result, "ModelActivation", "m")["computeTarget"] == "nvidia-gpu"


def test_an_earlier_choice_of_another_preset_is_not_kept():
    earlier = {
        "computeTarget": "amd-gpu",
        "computeTargetChoice": "OfferedAccelerator",
        "preset": "qwen3635b",
        "engine": "VLLM",
    }
    result = plan_with(*WORLDS["nvidia publishing"](), preset_only("m", "qwen306b", status=earlier))
    assert status_of(result, "ModelActivation", "m")["computeTarget"] == "nvidia-gpu"


def test_an_omitted_engine_is_the_engine_of_the_presets_variant_on_the_chosen_target():
    presets = CATALOGS.presets
    ollama_only = presets.get("qwen306b").model_copy(
        update={
            "name": "ollamaonly",
            "variants": tuple(v for v in presets.get("qwen306b").variants if v.engine == "OLlama"),
        }
    )
    catalogs = CATALOGS.model_copy(update={"presets": type(presets)(entries=(*presets.entries, ollama_only))})
    result = plan_with(*WORLDS["cpu only"](), preset_only("m", "ollamaonly"), catalogs=catalogs)
    status = status_of(result, "ModelActivation", "m")
    assert (status["engine"], status["computeTarget"]) == ("OLlama", "cpu")
    assert "engine OLlama" in status["message"]


def test_the_choice_is_the_same_from_run_to_run():
    amd = node("amd-1", "amd", allocatable={"amd.com/gpu": "1"})
    objects = [*WORLDS["nvidia publishing"](), node("cpu-1"), amd, preset_only("m", "qwen306b")]
    first = status_of(plan_with(*objects), "ModelActivation", "m")
    again = status_of(plan_with(*reversed(objects)), "ModelActivation", "m")
    assert first == again


def url_only(name: str, **local: Any) -> dict:
    obj = runtime("ModelActivation", name, {"type": "local", "targetNamespace": "ai", "local": local})
    return with_defaults(obj, registry=OWN_CRDS)


@pytest.mark.parametrize(
    ("local", "target", "engine", "choice"),
    [
        (
            {"url": "hf://Qwen/Qwen2.5-Omni-7B", "realtime": {"profile": "omni-cuda", "gpuNode": "gpu-1"}},
            "nvidia-gpu",
            "VLLM",
            "ImpliedTarget",
        ),
        ({"url": "hf://example/moe-35b", "engine": "FreeToken"}, "nvidia-gpu", "FreeToken", "ImpliedTarget"),
        ({"url": "ollama://qwen3:0.6b-q4_K_M"}, "cpu", "OLlama", "CpuVariant"),
    ],
)
def test_without_a_preset_the_engine_or_realtime_profile_decides_and_a_single_target_is_waited_for(
    local, target, engine, choice
):
    result = plan_with(*WORLDS["cpu only"](), url_only("m", **local))
    status = status_of(result, "ModelActivation", "m")
    assert status["reason"] != "InvalidSpec", status["message"]
    assert (status["computeTarget"], status["engine"], status["computeTargetChoice"]) == (target, engine, choice)
