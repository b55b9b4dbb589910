"""CPU offloading on one NVIDIA GPU, and the CPU policy of accelerator runtimes (issue #12)."""

from __future__ import annotations

import json

import pytest

from planning.frozen import thaw
from planning.models.kubeai import ENGINE_PROFILES
from planning.models.offloading import (
    MAX_OFFLOADING_PROFILES,
    OFFLOADING_CONFIG_MAP,
    OFFLOADING_NAMESPACE,
    OFFLOADING_PROFILE_PREFIX,
    cpu_offload_gib,
)
from tests.planning.builders import CATALOGS, plan_of, status_of
from tests.planning.models.world import gpu_node, local_model, observed_model, platform

GPU = "nvidia.com/gpu"


def offloaded(name: str = "m", **local) -> dict:
    spec = {
        "computeTarget": "nvidia-gpu",
        "engine": "VLLM",
        "cpuOffloading": True,
        "memoryRequiredMi": 24576,
        "cpuOffloadMi": 8192,
    }
    spec.update(local)
    return local_model(name, **spec)


def store_holding(*profiles) -> dict:
    document = {"resourceProfiles": {p.name: thaw(p.body) for p in profiles}}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": OFFLOADING_CONFIG_MAP, "namespace": OFFLOADING_NAMESPACE},
        "data": {"values.json": json.dumps(document)},
    }


def first_run(*objects):
    return plan_of(*platform("gpu"), gpu_node(GPU), *objects)


def second_run(*objects):
    """The run after the first wrote its offloading profiles into the store."""
    first = first_run(*objects)
    return plan_of(*platform("gpu"), gpu_node(GPU), *objects, store_holding(*first.models.offloading_profiles))


def model_of(result, name="m"):
    return next((m for m in result.models.models if m.name == name), None)


def status(result, name="m"):
    return status_of(result, "ModelActivation", name)


# Offloading ---------------------------------------------------------------------------------


def test_cpu_offloading_true_is_not_an_ordinary_gpu_model():
    result = second_run(offloaded())
    assert model_of(result).body["spec"]["resourceProfile"].startswith(OFFLOADING_PROFILE_PREFIX)


def test_an_offloading_profile_clones_the_engine_profile_with_the_ram_budget_as_request_and_limit():
    (profile,) = first_run(offloaded(memoryRequiredMi=20000)).models.offloading_profiles
    body = thaw(profile.body)
    engine = ENGINE_PROFILES["magicstick-nvidia-gpu"]
    assert body["requests"]["memory"] == body["limits"]["memory"] == "20000Mi"
    assert body["requests"][GPU] == body["limits"][GPU] == "1"
    assert body["imageName"] == engine["imageName"]
    assert body["tolerations"] == thaw(engine["tolerations"])


def test_an_offloading_profile_keeps_the_resolved_cpu_request_and_limit():
    (profile,) = first_run(
        offloaded(cpuResources={"requestMillicores": 3000, "limitMillicores": 6000})
    ).models.offloading_profiles
    assert profile.body["requests"]["cpu"] == "3000m"
    assert profile.body["limits"]["cpu"] == "6000m"


def test_the_model_waits_for_its_offloading_profile_until_the_store_holds_it():
    result = first_run(offloaded())
    assert model_of(result) is None
    assert status(result)["phase"] == "Pending"
    assert status(result)["reason"] == "WaitingForOffloadingProfile"
    assert len(result.models.offloading_profiles) == 1


def test_the_model_is_declared_once_the_store_holds_its_offloading_profile():
    result = second_run(offloaded())
    assert model_of(result) is not None
    assert status(result)["reason"] == "WaitingForPod"
    assert len(result.models.offloading_profiles) == 1


def test_a_waiting_model_keeps_the_model_it_runs():
    observed = observed_model(
        "m",
        spec={
            "url": "hf://x/y",
            "engine": "VLLM",
            "features": ["TextGeneration"],
            "resourceProfile": "magicstick-nvidia-gpu:1",
        },
    )
    result = first_run(offloaded(), observed)
    assert model_of(result).body["spec"]["resourceProfile"] == "magicstick-nvidia-gpu:1"
    assert status(result)["reason"] == "WaitingForOffloadingProfile"


def test_identical_offloading_budgets_share_one_profile():
    result = first_run(offloaded("a"), offloaded("b"))
    assert len(result.models.offloading_profiles) == 1


def test_the_status_reports_the_applied_offloading_intent():
    result = second_run(offloaded())
    (profile,) = result.models.offloading_profiles
    assert status(result)["cpuOffloading"] is True
    assert status(result)["memoryRequiredMi"] == 24576
    assert status(result)["resolvedResourceProfile"] == f"{profile.name}:1"


def test_vllm_gets_its_weight_offload_budget_in_gib():
    args = model_of(second_run(offloaded(cpuOffloadMi=8192))).body["spec"]["args"]
    assert "--cpu-offload-gb=8" in args


@pytest.mark.parametrize(
    ("mi", "gib"), [(0, "0"), (1024, "1"), (1536, "1.5"), (1000, "0.98"), (1, "0.01"), (10241, "10.01")]
)
def test_the_offload_budget_is_rounded_up_to_a_hundredth_of_a_gib(mi, gib):
    assert cpu_offload_gib(mi) == gib


def test_ollama_offloading_is_gpu_first_auto_fit_with_no_layer_count():
    result = second_run(offloaded(engine="OLlama", cpuOffloadMi=None, ollamaGpuLayers=20))
    spec = model_of(result).body["spec"]
    assert "OLLAMA_NUM_GPU" not in spec.get("env", {})
    assert not any("gpu" in arg for arg in spec.get("args", ()))
    assert "ollamaGpuLayers is ignored" in status(result)["message"]


def test_explicit_false_asks_for_no_offloading():
    result = first_run(offloaded(cpuOffloading=False, cpuOffloadMi=None))
    assert result.models.offloading_profiles == ()
    assert "--cpu-offload-gb=0" in model_of(result).body["spec"]["args"]
    assert status(result)["cpuOffloading"] is False


def test_an_omitted_cpu_offloading_keeps_the_legacy_runtime():
    result = first_run(local_model("m", computeTarget="nvidia-gpu"))
    assert result.models.offloading_profiles == ()
    assert not any(arg.startswith("--cpu-offload-gb") for arg in model_of(result).body["spec"]["args"])
    assert "cpuOffloading" not in status(result)


def test_an_offloading_profile_beyond_the_store_bound_fails_its_activation_not_the_run():
    activations = [offloaded(f"m{i:03d}", memoryRequiredMi=20000 + 16 * i) for i in range(MAX_OFFLOADING_PROFILES + 1)]
    result = first_run(*activations)
    assert len(result.models.offloading_profiles) == MAX_OFFLOADING_PROFILES
    assert status(result, f"m{MAX_OFFLOADING_PROFILES:03d}")["reason"] == "OffloadingProfileStoreFull"


# CPU policy on accelerator runtimes -------------------------------------------------------------


def test_a_gpu_model_runs_on_a_clone_of_its_engine_profile_with_only_cpu_changed():
    result = first_run(
        local_model("m", computeTarget="nvidia-gpu", cpuResources={"requestMillicores": 4000, "limitMillicores": 8000})
    )
    (profile,) = result.models.cpu_profiles
    body = thaw(profile.body)
    expected = thaw(ENGINE_PROFILES["magicstick-nvidia-gpu"])
    expected["requests"]["cpu"] = "4000m"
    expected.setdefault("limits", {})["cpu"] = "8000m"
    assert body == expected
    assert model_of(result).body["spec"]["resourceProfile"] == f"{profile.name}:1"


def test_what_the_status_reports_as_cpu_resources_is_what_the_gpu_profile_runs():
    result = first_run(local_model("m", computeTarget="nvidia-gpu", cpuResources={"requestMillicores": 1500}))
    (profile,) = result.models.cpu_profiles
    reported = status(result)["cpuResources"]
    assert profile.body["requests"]["cpu"] == f"{reported['requestMillicores']}m"
    assert "cpu" not in profile.body.get("limits", {})
    assert reported["limitMillicores"] == 0


@pytest.mark.parametrize(
    ("target", "resource"),
    [("amd-gpu", "amd.com/gpu"), ("intel-gpu", "gpu.intel.com/xe"), ("intel-gpu", "gpu.intel.com/i915")],
)
def test_every_accelerator_target_gets_a_cpu_only_clone_of_its_engine_profile(target, resource):
    result = plan_of(*platform(target), gpu_node(resource), local_model("m", computeTarget=target))
    (profile,) = result.models.cpu_profiles
    engine_profile = CATALOGS.compute_targets.get(target).resource_profile(engine="VLLM", resource=resource)
    assert profile.name.startswith(f"{engine_profile}-")
    assert {k: v for k, v in thaw(profile.body).items() if k not in ("requests", "limits")} == {
        k: v for k, v in thaw(ENGINE_PROFILES[engine_profile]).items() if k not in ("requests", "limits")
    }
    assert profile.body["requests"][resource] == "1"


def test_gpu_models_with_the_same_cpu_policy_share_one_profile():
    cpu = {"requestMillicores": 2000, "limitMillicores": 0}
    result = first_run(
        local_model("a", computeTarget="nvidia-gpu", cpuResources=cpu),
        local_model("b", computeTarget="nvidia-gpu", engine="OLlama", cpuResources=cpu),
    )
    assert len(result.models.cpu_profiles) == 1


def runtime_store_holding(*profiles) -> dict:
    store = store_holding(*profiles)
    store["metadata"]["name"] = "magicstick-runtime-profiles"
    return store


def test_a_rejected_edit_keeps_the_gpu_model_and_the_cpu_clone_it_runs_on():
    (clone,) = first_run(local_model("m", computeTarget="nvidia-gpu")).models.cpu_profiles
    observed = observed_model(
        "m",
        spec={
            "url": "hf://x/y",
            "engine": "VLLM",
            "features": ["TextGeneration"],
            "resourceProfile": f"{clone.name}:1",
        },
    )
    result = first_run(
        local_model("m", computeTarget="nvidia-gpu", artifact="no-such-artifact"),
        observed,
        runtime_store_holding(clone),
    )
    assert status(result)["phase"] == "Failed"
    assert result.models.cpu_profiles == (clone,)
    assert model_of(result).body["spec"]["resourceProfile"] == f"{clone.name}:1"


def test_a_rejected_edit_keeps_the_offloading_profile_the_model_runs_on():
    (profile,) = first_run(offloaded()).models.offloading_profiles
    observed = observed_model(
        "m",
        spec={
            "url": "hf://x/y",
            "engine": "VLLM",
            "features": ["TextGeneration"],
            "resourceProfile": f"{profile.name}:1",
        },
    )
    result = first_run(offloaded(artifact="no-such-artifact"), observed, store_holding(profile))
    assert status(result)["phase"] == "Failed"
    assert result.models.offloading_profiles == (profile,)
