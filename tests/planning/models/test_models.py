"""Local and external models: resolution, KubeAI Models, lifecycle and status."""

from __future__ import annotations

import json

import pytest

from catalogs import Catalogs
from catalogs.types import ComputeTargetCatalog
from planning.frozen import thaw
from planning.models.resolve import KV_CACHE_FALLBACK_BYTES
from tests.planning.builders import CATALOGS, NOW, plan_of, runtime, status_of, with_flux
from tests.planning.models.world import (
    catalog_publishing,
    gpu_node,
    host_operation,
    later,
    local_model,
    observed_model,
    platform,
    pod,
)


def model_of(result, name):
    matches = [m for m in result.models.models if m.name == name]
    return matches[0] if matches else None


def spec_of(result, name):
    return thaw(model_of(result, name).body["spec"])


def status(result, name="m"):
    return status_of(result, "ModelActivation", name)


# Resolution ---------------------------------------------------------------------------------


def test_the_artifact_url_precision_and_memory_come_from_the_preset_catalog():
    result = plan_of(*platform(), local_model("m"))
    spec = spec_of(result, "m")
    variant = CATALOGS.presets.get("qwen2505bcpu").variant("VLLM", "cpu")
    assert spec["url"] == variant.artifact().url
    assert spec["engine"] == "VLLM"
    assert spec["features"] == ["TextGeneration"]
    assert status(result)["artifact"] == variant.default_artifact


def test_an_unknown_artifact_is_rejected_before_any_model_exists():
    result = plan_of(*platform(), local_model("m", artifact="q2-k"))
    assert model_of(result, "m") is None
    assert status(result)["phase"] == "Failed"
    assert status(result)["message"].startswith("spec.local.artifact: 'q2-k' is not an artifact of preset qwen2505bcpu")


def test_an_unknown_preset_is_rejected_naming_the_field():
    result = plan_of(*platform(), local_model("m", preset="no-such-preset"))
    assert status(result)["message"].startswith("spec.local.preset:")


def test_a_preset_without_a_variant_for_the_engine_and_target_is_rejected():
    result = plan_of(*platform(), local_model("m", preset="qwen352bvlembedding"))
    assert status(result)["message"].startswith("spec.local.computeTarget: preset qwen352bvlembedding has no variant")


def test_a_url_together_with_a_preset_is_rejected():
    result = plan_of(*platform(), local_model("m", url="hf://example/other"))
    assert status(result)["message"].startswith("spec.local.url: set either preset or url")


def test_an_ollama_model_uses_the_exact_engine_value_and_an_ollama_reference():
    result = plan_of(*platform(), local_model("m", engine="OLlama"))
    spec = model_of(result, "m").body["spec"]
    assert spec["engine"] == "OLlama"
    assert spec["url"].startswith("ollama://")


# CPU memory, KV cache, CPU profile ------------------------------------------------------------


@pytest.mark.parametrize(("engine", "expected"), [("VLLM", 4096), ("OLlama", 2048)])
def test_cpu_memory_defaults_to_the_engine_default(engine, expected):
    result = plan_of(
        *platform(),
        local_model(
            "m", engine=engine, preset=None, url="hf://example/m" if engine == "VLLM" else "ollama://example:1b"
        ),
    )
    assert status(result)["memoryRequiredMi"] == expected


def test_cpu_memory_is_rounded_up_to_16_mib_units_in_the_runtime_profile():
    result = plan_of(*platform(), local_model("m", memoryRequiredMi=4001))
    assert status(result)["memoryRequiredMi"] == 4016
    (profile,) = result.models.cpu_profiles
    assert profile.body["requests"]["memory"] == "4016Mi"


def test_a_cpu_budget_below_the_estimated_minimum_fails_the_activation_with_the_numbers():
    result = plan_of(*platform(), local_model("m", memoryRequiredMi=1000))
    failed = status(result)
    assert (failed["phase"], failed["reason"]) == ("Failed", "InsufficientMemory")
    assert "memoryRequiredMi" in failed["message"]
    assert model_of(result, "m") is None


def test_allow_memory_risk_lets_a_budget_below_the_estimate_through_unchanged():
    result = plan_of(*platform(), local_model("m", memoryRequiredMi=1000, allowMemoryRisk=True))
    assert status(result)["memoryRequiredMi"] == 1008
    assert status(result)["memoryEstimate"]["ramMinimumMi"] > 1008


def test_cpu_resources_take_engine_defaults_then_overrides_into_a_count_one_profile():
    defaults = CATALOGS.engines.get("VLLM").cpu_defaults
    result = plan_of(*platform(), local_model("m", cpuResources={"limitMillicores": 8000}))
    (profile,) = result.models.cpu_profiles
    assert profile.body["requests"]["cpu"] == f"{defaults.request_millicores}m"
    assert profile.body["limits"] == {"cpu": "8000m"}
    assert status(result)["cpuResources"] == {"requestMillicores": defaults.request_millicores, "limitMillicores": 8000}
    assert model_of(result, "m").body["spec"]["resourceProfile"] == f"{profile.name}:1"
    assert status(result)["resolvedResourceProfile"] == f"{profile.name}:1"


def test_a_limit_of_zero_sets_no_cpu_quota():
    result = plan_of(*platform(), local_model("m", cpuResources={"requestMillicores": 3000, "limitMillicores": 0}))
    (profile,) = result.models.cpu_profiles
    assert "limits" not in profile.body


def test_identical_cpu_configurations_share_one_profile():
    result = plan_of(*platform(), local_model("a"), local_model("b"))
    assert len(result.models.cpu_profiles) == 1


GIB = 1024**3


def test_vllm_cpu_gets_the_kv_cache_fallback_in_whole_gib_and_auto_cache_type():
    spec = model_of(plan_of(*platform(), local_model("m")), "m").body["spec"]
    assert KV_CACHE_FALLBACK_BYTES < GIB
    assert "--kv-cache-dtype=auto" in spec["args"]
    assert spec["env"]["VLLM_CPU_KVCACHE_SPACE"] == "1"


@pytest.mark.parametrize(
    ("requested", "gib"),
    [(1, 1), (GIB, 1), (GIB + 1, 2), (3 * GIB - 1, 3), (16 * 1024 * 1024 * 100, 2)],
    ids=["one-byte", "one-gib", "just-over", "just-under-three", "1600-mib"],
)
def test_cpu_vllm_is_given_its_kv_cache_size_as_the_variable_it_reads_rounded_up_to_whole_gib(requested, gib):
    local = local_model("m", kvCacheMemoryBytes=requested, memoryRequiredMi=16384)
    spec = model_of(plan_of(*platform(), local), "m").body["spec"]
    assert spec["env"]["VLLM_CPU_KVCACHE_SPACE"] == str(gib)
    assert not any(arg.startswith("--kv-cache-memory-bytes") for arg in spec["args"]), "CPU vLLM ignores the flag"


def test_the_kv_cache_size_is_reported_as_requested_and_once_ready_as_the_engine_holds_it():
    local = local_model("m", kvCacheMemoryBytes=600 * 1024 * 1024)
    waiting = status(plan_of(*platform(), local, observed_model("m", ready=0), pod("m-0", "m", ready=False)))
    assert waiting["requestedKvCacheMemoryBytes"] == 600 * 1024 * 1024
    assert "effectiveKvCacheMemoryBytes" not in waiting
    ready = status(
        plan_of(*platform(), local, observed_model("m", ready=1, all_=1), pod("m-0", "m"), catalog_publishing("m"))
    )
    assert (ready["requestedKvCacheMemoryBytes"], ready["effectiveKvCacheMemoryBytes"]) == (600 * 1024 * 1024, GIB)


def test_the_memory_estimate_counts_the_kv_cache_the_engine_holds_not_the_one_requested():
    result = plan_of(*platform(), local_model("m", kvCacheMemoryBytes=1, memoryRequiredMi=8192))
    assert status(result)["memoryEstimate"]["cacheMi"] == 1024


@pytest.mark.parametrize("target", ["nvidia-gpu", "amd-gpu", "intel-gpu"])
def test_no_accelerator_vllm_model_is_given_the_cpu_kv_cache_variable(target):
    vendor = {"nvidia-gpu": ("gpu", "nvidia.com/gpu"), "amd-gpu": ("amd-gpu", "amd.com/gpu")}.get(
        target, ("intel-gpu", "gpu.intel.com/xe")
    )
    result = plan_of(*platform(vendor[0]), gpu_node(vendor[1]), local_model("m", computeTarget=target))
    assert "VLLM_CPU_KVCACHE_SPACE" not in (model_of(result, "m").body["spec"].get("env") or {})


def test_fp8_kv_cache_on_nvidia_also_enables_scale_calculation():
    result = plan_of(
        *platform("gpu"), gpu_node("nvidia.com/gpu"), local_model("m", computeTarget="nvidia-gpu", kvCacheType="fp8")
    )
    args = model_of(result, "m").body["spec"]["args"]
    assert "--kv-cache-dtype=fp8" in args and "--calculate-kv-scales" in args


def test_ollama_kv_cache_type_maps_to_its_environment_with_flash_attention():
    env = model_of(plan_of(*platform(), local_model("m", engine="OLlama", kvCacheType="q8_0")), "m").body["spec"]["env"]
    assert env["OLLAMA_KV_CACHE_TYPE"] == "q8_0"
    assert env["OLLAMA_FLASH_ATTENTION"] == "1"


def test_requested_kv_cache_type_is_always_reported_and_effective_only_once_ready():
    waiting = plan_of(
        *platform(), local_model("m", engine="OLlama"), observed_model("m", ready=0), pod("m-0", "m", ready=False)
    )
    assert status(waiting)["requestedKvCacheType"] == "f16"
    assert "effectiveKvCacheType" not in status(waiting)
    ready = plan_of(
        *platform(), local_model("m"), observed_model("m", ready=1, all_=1), pod("m-0", "m"), catalog_publishing("m")
    )
    assert status(ready)["effectiveKvCacheType"] == "auto"


# Vision attention --------------------------------------------------------------------------------


def _amd_engine(version: str) -> Catalogs:
    """The shipped catalogs with the amd-gpu vLLM image at `version`, as an administrator who sets a
    newer image and its release in catalogs/compute-targets.yaml has them."""
    targets = tuple(
        t.model_copy(update={"engine_versions": {**t.engine_versions, "VLLM": version}}) if t.name == "amd-gpu" else t
        for t in CATALOGS.compute_targets.entries
    )
    return CATALOGS.model_copy(update={"compute_targets": ComputeTargetCatalog(entries=targets)})


NEWER_AMD_ENGINE = _amd_engine("0.11.1")


def _amd(catalogs: Catalogs = NEWER_AMD_ENGINE, **local):
    return plan_of(
        *platform("amd-gpu"),
        gpu_node("amd.com/gpu"),
        local_model("m", computeTarget="amd-gpu", **local),
        catalogs=catalogs,
    )


@pytest.mark.parametrize("value", ["aotriton", "triton", "flash-attn-triton"])
def test_a_vision_attention_the_shipped_amd_engine_lacks_is_refused_naming_the_argument_and_the_release(value):
    result = _amd(CATALOGS, vllm={"visionAttention": value})
    message = status(result)["message"]
    assert status(result)["phase"] == "Failed"
    assert message.startswith("spec.local.vllm.visionAttention:")
    assert "--mm-encoder-attn-backend=" in message and "vLLM 0.10.1" in message and "0.11.1 or newer" in message
    assert "modelServers.VLLM.images.amd-gpu" in message
    assert model_of(result, "m") is None


def test_vision_attention_auto_runs_on_the_shipped_amd_engine():
    body = model_of(_amd(CATALOGS, vllm={"visionAttention": "auto"}), "m").body
    assert not any(a.startswith("--mm-encoder-attn-backend") for a in body["spec"].get("args") or ())


def test_an_explicit_vision_attention_owns_its_argument_environment_and_annotation():
    result = _amd(vllm={"visionAttention": "flash-attn-triton"})
    body = model_of(result, "m").body
    mapping = CATALOGS.compute_targets.get("amd-gpu").vision_attention["flash-attn-triton"]
    assert set(mapping.args) <= set(body["spec"]["args"])
    assert dict(mapping.env).items() <= dict(body["spec"]["env"]).items()
    assert body["metadata"]["annotations"]["appliance.magicstick.dev/vision-attention"] == "flash-attn-triton"


def test_vision_attention_auto_removes_managed_overrides():
    body = model_of(_amd(vllm={"visionAttention": "auto"}), "m").body
    managed = {a for m in CATALOGS.compute_targets.get("amd-gpu").vision_attention.values() for a in m.args}
    assert not managed & set(body["spec"].get("args") or ())


def test_an_omitted_vision_attention_leaves_the_arguments_the_model_has():
    managed_arg = CATALOGS.compute_targets.get("amd-gpu").vision_attention["triton"].args[0]
    observed = observed_model(
        "m",
        spec={
            "url": "hf://x/y",
            "engine": "VLLM",
            "features": ["TextGeneration"],
            "args": [managed_arg, "--other"],
            "scaleDownDelaySeconds": 30,
            "targetRequests": 100,
        },
    )
    result = plan_of(
        *platform("amd-gpu"),
        gpu_node("amd.com/gpu"),
        local_model("m", computeTarget="amd-gpu"),
        observed,
        catalogs=NEWER_AMD_ENGINE,
    )
    args = model_of(result, "m").body["spec"]["args"]
    assert managed_arg in args and "--other" not in args


def test_vision_attention_on_a_target_without_it_is_rejected():
    result = plan_of(*platform(), local_model("m", vllm={"visionAttention": "triton"}))
    assert status(result)["message"].startswith("spec.local.vllm.visionAttention:")


# GPU gating and profiles ------------------------------------------------------------------------


def test_an_accelerator_model_waits_for_gpu_until_a_resource_is_allocatable():
    result = plan_of(*platform("gpu"), local_model("m", computeTarget="nvidia-gpu"))
    assert model_of(result, "m") is None
    assert status(result)["phase"] == "WaitingForGPU"
    ready = plan_of(*platform("gpu"), gpu_node("nvidia.com/gpu"), local_model("m", computeTarget="nvidia-gpu"))
    assert model_of(ready, "m").body["spec"]["resourceProfile"].startswith("magicstick-nvidia-gpu-")


@pytest.mark.parametrize("resource", ["gpu.intel.com/xe", "gpu.intel.com/i915"])
def test_intel_models_use_the_profile_of_the_resource_the_node_publishes(resource):
    result = plan_of(*platform("intel-gpu"), gpu_node(resource), local_model("m", computeTarget="intel-gpu"))
    expected = CATALOGS.compute_targets.get("intel-gpu").resource_profile(engine="VLLM", resource=resource)
    (profile,) = result.models.cpu_profiles
    assert profile.name.startswith(f"{expected}-")
    assert model_of(result, "m").body["spec"]["resourceProfile"] == f"{profile.name}:1"


def test_a_cpu_model_never_looks_at_accelerators():
    result = plan_of(*platform(), local_model("m"))
    assert status(result)["phase"] == "WaitingForPod"


# Names -------------------------------------------------------------------------------------------


def test_a_long_activation_name_fits_the_kubeai_40_character_limit():
    name = "qwen3-coder-30b-a3b-instruct-awq-int4-on-cpu-for-the-team"
    result = plan_of(*platform(), local_model(name))
    (model,) = result.models.models
    assert len(model.name) <= 40
    assert status_of(result, "ModelActivation", name)["modelRef"] == f"ai/{model.name}"


# Lifecycle ---------------------------------------------------------------------------------------


def test_a_model_without_pods_waits_then_degrades_after_two_minutes():
    first = status(plan_of(*platform(), local_model("m"), observed_model("m")))
    assert first["phase"] == "WaitingForPod"
    since = first["podCreation"]["since"]
    activation = local_model("m")
    activation["status"] = first
    still = status(plan_of(*platform(), activation, observed_model("m"), now=later(1)))
    assert still["phase"] == "WaitingForPod" and still["podCreation"]["since"] == since
    stalled = status(plan_of(*platform(), activation, observed_model("m"), now=later(2)))
    assert stalled["phase"] == "Degraded"
    assert stalled["reason"] == "ModelPodCreationStalled"


def test_a_new_model_generation_restarts_the_pod_creation_timer():
    activation = local_model("m")
    activation["status"] = status(plan_of(*platform(), local_model("m"), observed_model("m")))
    changed = status(plan_of(*platform(), activation, observed_model("m", generation=2), now=later(5)))
    assert changed["phase"] == "WaitingForPod"
    assert changed["podCreation"]["since"] == "2026-01-01T00:05:00Z"


def test_an_existing_pod_clears_the_timer_and_the_model_is_starting():
    result = status(plan_of(*platform(), local_model("m"), observed_model("m", all_=1), pod("m-0", "m", ready=False)))
    assert result["phase"] == "Starting"
    assert "podCreation" not in result


def test_ready_needs_a_ready_replica_and_the_model_catalog():
    unpublished = status(plan_of(*platform(), local_model("m"), observed_model("m", ready=1, all_=1), pod("m-0", "m")))
    assert unpublished["phase"] == "Starting"
    assert unpublished["reason"] == "WaitingForModelCatalog"
    ready = status(
        plan_of(
            *platform(),
            local_model("m"),
            observed_model("m", ready=1, all_=1),
            pod("m-0", "m"),
            catalog_publishing("m"),
        )
    )
    assert ready["phase"] == "Ready"
    assert "1/1 replicas ready (VLLM)" in ready["message"]


def test_a_disappearing_ready_replica_returns_the_model_to_starting():
    result = status(
        plan_of(
            *platform(),
            local_model("m"),
            observed_model("m", ready=0, all_=1),
            pod("m-0", "m", ready=False),
            catalog_publishing("m"),
        )
    )
    assert result["phase"] == "Starting"


def test_a_terminal_pod_of_the_exact_model_is_recovered_with_preconditions():
    result = plan_of(
        *platform(), local_model("m"), observed_model("m"), pod("m-0", "m", phase="Failed", ready=False, reason="Error")
    )
    (outcome,) = result.models.outcomes
    assert outcome.pod_deletion.pod.name == "m-0"
    assert outcome.pod_deletion.pod.uid == "pod-uid-m-0"
    assert outcome.pod_deletion.pod.resource_version == "7"
    assert status(result)["podRecovery"]["attempts"] == 1


def test_pending_running_and_foreign_pods_are_never_recovered():
    result = plan_of(
        *platform(),
        local_model("m"),
        observed_model("m"),
        pod("m-0", "m", phase="Pending", ready=False),
        pod("m-1", "m", phase="Failed", ready=False, model_uid="another-model"),
    )
    assert result.models.outcomes[0].pod_deletion is None


def test_recovery_is_exhausted_after_five_attempts():
    activation = local_model("m")
    failed = pod("m-0", "m", phase="Failed", ready=False)
    previous = status(plan_of(*platform(), activation, observed_model("m"), failed))
    for attempt in range(5):
        activation["status"] = previous
        previous = status(plan_of(*platform(), activation, observed_model("m"), failed, now=later(10 * (attempt + 1))))
    assert previous["phase"] == "Degraded"
    assert previous["reason"] == "ModelPodRecoveryExhausted"


# Ollama alias and memory ---------------------------------------------------------------------------


def _ollama(*observations, published=True):
    from planning.plan import plan
    from planning.snapshot import Snapshot

    objects = [
        *platform(),
        local_model("m", engine="OLlama"),
        observed_model("m", ready=1, all_=1, engine="OLlama"),
        pod("m-0", "m"),
    ]
    if published:
        objects.append(catalog_publishing("m"))
    return plan(snapshot=Snapshot.from_objects(with_flux(objects), ollama=observations), catalogs=CATALOGS, now=NOW)


def test_an_ollama_model_waits_for_its_alias_on_every_ready_pod():
    from planning.snapshot import OllamaObservation

    result = _ollama(OllamaObservation(namespace="ai", pod="m-0", tags=frozenset({"qwen2.5:0.5b"})))
    assert status(result)["reason"] == "WaitingForOllamaAlias"
    alias = result.models.outcomes[0].alias
    assert alias.pods == ("m-0",) and alias.alias == "m:latest"


def test_an_ollama_model_with_its_alias_is_ready_and_reports_memory():
    from planning.snapshot import OllamaObservation

    seen = OllamaObservation(
        namespace="ai", pod="m-0", tags=frozenset({"m:latest"}), ram_mi=100, vram_mi=0, total_mi=100
    )
    result = _ollama(seen)
    assert status(result)["phase"] == "Ready"
    assert result.models.outcomes[0].alias is None
    assert status(result)["memoryUsage"] == {
        "ramMi": 100,
        "vramMi": 0,
        "totalMi": 100,
        "source": "ollama /api/ps",
        "sampledAt": "2026-01-01T00:00:00Z",
        "replicas": 1,
    }


def test_memory_usage_is_cleared_when_no_sample_exists():
    from planning.snapshot import OllamaObservation

    result = _ollama(OllamaObservation(namespace="ai", pod="m-0", tags=frozenset({"m:latest"})))
    assert "memoryUsage" not in status(result)


# Host operations and removal -------------------------------------------------------------------


def test_a_pending_clear_model_cache_defers_a_new_local_runtime():
    result = plan_of(*platform(), local_model("m"), host_operation("clear-1"))
    assert model_of(result, "m") is None
    assert status(result)["reason"] == "DeferredByHostOperation"


def test_a_deferred_existing_runtime_is_kept_as_it_is():
    observed = observed_model("m")
    result = plan_of(*platform(), local_model("m"), observed, host_operation("clear-1", phase="Running"))
    assert spec_of(result, "m") == observed["spec"]


def test_a_finished_clear_model_cache_defers_nothing():
    result = plan_of(*platform(), local_model("m"), host_operation("clear-1", phase="Succeeded"))
    assert model_of(result, "m") is not None


def test_a_disabled_activation_removes_its_runtime_even_during_a_cache_clear():
    disabled = local_model("m")
    disabled["spec"]["enabled"] = False
    result = plan_of(*platform(), disabled, observed_model("m"), host_operation("clear-1"))
    assert model_of(result, "m") is None
    assert status(result)["phase"] == "Disabled"


def test_an_invalid_edit_keeps_the_model_as_it_runs():
    broken = local_model("m", artifact="q2-k")
    observed = observed_model("m")
    result = plan_of(*platform(), broken, observed)
    assert spec_of(result, "m") == observed["spec"]


# External models ---------------------------------------------------------------------------------


def _external(name="gpt"):
    return runtime(
        "ModelActivation",
        name,
        {
            "type": "external",
            "external": {
                "model": "openai/gpt-4o-mini",
                "apiBase": "https://api.example.com/v1",
                "modelType": "chat",
                "apiKeySecretRef": {"name": "external-api-key", "key": "api-key"},
            },
        },
    )


def test_an_external_model_is_listed_for_litellm_with_its_key_as_a_secret_reference_only():
    result = plan_of(*platform(), _external())
    config_map = result.models.external_models
    (entry,) = json.loads(config_map.body["data"]["models.json"])
    assert entry["apiKeySecretRef"] == {"name": "external-api-key", "key": "api-key", "namespace": "ai"}
    assert set(entry) == {"id", "model", "modelType", "apiBase", "apiKeySecretRef"}


def test_an_external_model_is_ready_once_the_catalog_publishes_it_and_ignores_accelerators():
    assert status(plan_of(*platform(), _external()), "gpt")["phase"] == "Starting"
    assert status(plan_of(*platform(), _external(), catalog_publishing("gpt")), "gpt")["phase"] == "Ready"


def test_external_models_are_not_deferred_by_a_cache_clear():
    result = plan_of(*platform(), _external(), catalog_publishing("gpt"), host_operation("clear-1"))
    assert status(result, "gpt")["phase"] == "Ready"


def test_an_unchanged_memory_sample_keeps_its_sampled_at_so_a_converged_run_writes_nothing():
    from planning.plan import plan
    from planning.snapshot import OllamaObservation, Snapshot

    seen = OllamaObservation(
        namespace="ai", pod="m-0", tags=frozenset({"m:latest"}), ram_mi=100, vram_mi=0, total_mi=100
    )
    first = status(_ollama(seen))
    activation = local_model("m", engine="OLlama")
    activation["status"] = first
    objects = [
        *platform(),
        activation,
        observed_model("m", ready=1, all_=1, engine="OLlama"),
        pod("m-0", "m"),
        catalog_publishing("m"),
    ]
    again = plan(snapshot=Snapshot.from_objects(with_flux(objects), ollama=(seen,)), catalogs=CATALOGS, now=later(30))
    assert status(again)["memoryUsage"]["sampledAt"] == first["memoryUsage"]["sampledAt"]
    changed = OllamaObservation(
        namespace="ai", pod="m-0", tags=frozenset({"m:latest"}), ram_mi=120, vram_mi=0, total_mi=120
    )
    moved = plan(
        snapshot=Snapshot.from_objects(with_flux(objects), ollama=(changed,)), catalogs=CATALOGS, now=later(30)
    )
    assert status(moved)["memoryUsage"]["sampledAt"] == "2026-01-01T00:30:00Z"


def test_a_cpu_profile_beyond_the_store_bound_fails_its_activation_not_the_run():
    from planning.models.kubeai import MAX_CPU_PROFILES

    activations = [local_model(f"m{i:03d}", memoryRequiredMi=4096 + 16 * i) for i in range(MAX_CPU_PROFILES + 1)]
    result = plan_of(*platform(), *activations)
    assert len(result.models.cpu_profiles) == MAX_CPU_PROFILES
    last = status_of(result, "ModelActivation", f"m{MAX_CPU_PROFILES:03d}")
    assert last["reason"] == "RuntimeProfileStoreFull"
    assert model_of(result, f"m{MAX_CPU_PROFILES:03d}") is None
    shared = plan_of(*platform(), *activations, local_model("zz-shares", memoryRequiredMi=4096))
    assert status_of(shared, "ModelActivation", "zz-shares")["phase"] == "WaitingForPod"


def test_the_appliance_status_lists_every_model_with_its_resolved_runtime():
    result = plan_of(
        *platform(), local_model("m"), observed_model("m", ready=1, all_=1), pod("m-0", "m"), catalog_publishing("m")
    )
    entry = status_of(result, "Appliance", "local")["models"]["m"]
    assert entry["phase"] == "Ready"
    assert (entry["modelRef"], entry["catalogId"], entry["computeTarget"], entry["engine"]) == (
        "ai/m",
        "m",
        "cpu",
        "VLLM",
    )
    assert entry["resolvedResourceProfile"].startswith("magicstick-cpu-vllm-")
    assert "1/1 replicas ready" in entry["message"]
