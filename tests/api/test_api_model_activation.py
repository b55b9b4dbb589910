"""ModelActivation: sections per type, engine/target/cache combinations, offloading, CPU."""

from __future__ import annotations

import pytest
from spec_cases import local_model, rejection

from api.models import CpuResources, ModelActivationSpec
from api.validation import SpecError, parse_spec, validate_cpu_resources

ALL_TARGETS = ("cpu", "nvidia-gpu", "amd-gpu", "intel-gpu")
OLLAMA_TARGETS = ("cpu", "nvidia-gpu", "amd-gpu")
OLLAMA_CACHE_TYPES = ("f16", "q8_0", "q4_0")


def parse_local(**local: object) -> ModelActivationSpec:
    spec = parse_spec("ModelActivation", local_model(**local))
    assert isinstance(spec, ModelActivationSpec)
    assert spec.local is not None
    return spec


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_vllm_accepts_auto_kv_cache_on_every_target(target: str) -> None:
    assert parse_local(engine="VLLM", computeTarget=target, kvCacheType="auto").local.kv_cache_type == "auto"


@pytest.mark.parametrize("target", ["nvidia-gpu", "amd-gpu"])
def test_vllm_accepts_fp8_kv_cache_on_nvidia_and_amd_gpus(target: str) -> None:
    assert parse_local(engine="VLLM", computeTarget=target, kvCacheType="fp8").local.kv_cache_type == "fp8"


@pytest.mark.parametrize("target", ["cpu", "intel-gpu"])
def test_vllm_rejects_fp8_kv_cache_on_cpu_and_intel_gpu(target: str) -> None:
    error = rejection("ModelActivation", local_model(engine="VLLM", computeTarget=target, kvCacheType="fp8"))
    assert error.field == "spec.local.kvCacheType"
    assert "fp8" in error.rule and "nvidia-gpu or amd-gpu" in error.rule


@pytest.mark.parametrize("kv", OLLAMA_CACHE_TYPES)
def test_vllm_rejects_ollama_kv_cache_types(kv: str) -> None:
    error = rejection("ModelActivation", local_model(engine="VLLM", computeTarget="nvidia-gpu", kvCacheType=kv))
    assert error.field == "spec.local.kvCacheType"
    assert "engine VLLM" in error.rule


@pytest.mark.parametrize("target", OLLAMA_TARGETS)
@pytest.mark.parametrize("kv", OLLAMA_CACHE_TYPES)
def test_ollama_accepts_f16_q8_0_and_q4_0_on_each_supported_target(target: str, kv: str) -> None:
    assert parse_local(engine="OLlama", computeTarget=target, kvCacheType=kv).local.kv_cache_type == kv


@pytest.mark.parametrize("kv", ["auto", "fp8"])
def test_ollama_rejects_vllm_kv_cache_types(kv: str) -> None:
    error = rejection("ModelActivation", local_model(engine="OLlama", computeTarget="nvidia-gpu", kvCacheType=kv))
    assert error.field == "spec.local.kvCacheType"
    assert "f16, q8_0, q4_0" in error.rule


@pytest.mark.parametrize("kv", ["bf16", "fp16", "int8", ""])
def test_kv_cache_type_rejects_values_no_engine_knows(kv: str) -> None:
    assert rejection("ModelActivation", local_model(kvCacheType=kv)).field == "spec.local.kvCacheType"


@pytest.mark.parametrize(("engine", "expected"), [("VLLM", "auto"), ("OLlama", "f16"), ("FreeToken", None)])
def test_omitted_kv_cache_type_resolves_to_the_engine_default(engine: str, expected: str | None) -> None:
    spec = parse_local(engine=engine, computeTarget="nvidia-gpu")
    assert spec.local.kv_cache_type is None
    assert spec.local.requested_kv_cache_type() == expected


def test_ollama_is_rejected_on_intel_gpu() -> None:
    error = rejection("ModelActivation", local_model(engine="OLlama", computeTarget="intel-gpu"))
    assert error.field == "spec.local.engine"
    assert "intel-gpu" in error.rule


@pytest.mark.parametrize("engine", ["Ollama", "ollama", "vllm", "llama.cpp"])
def test_engine_accepts_only_the_exact_kubeai_spellings(engine: str) -> None:
    error = rejection("ModelActivation", local_model(engine=engine))
    assert error.field == "spec.local.engine"
    assert "'OLlama'" in error.rule


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("kvCacheType", "auto"),
        ("kvCacheMemoryBytes", 536870912),
        ("cpuOffloading", False),
        ("cpuOffloadMi", 1024),
        ("ollamaGpuLayers", 10),
    ],
)
def test_freetoken_rejects_vllm_and_ollama_offloading_and_kv_cache_fields(field: str, value: object) -> None:
    error = rejection("ModelActivation", local_model(engine="FreeToken", computeTarget="nvidia-gpu", **{field: value}))
    assert error.field == f"spec.local.{field}"
    assert "FreeToken" in error.rule


@pytest.mark.parametrize("engine", ["VLLM", "OLlama"])
def test_freetoken_settings_require_engine_freetoken(engine: str) -> None:
    error = rejection("ModelActivation", local_model(engine=engine, freetoken={"gpuCount": 1}))
    assert error.field == "spec.local.freetoken"
    assert "engine FreeToken" in error.rule


def test_freetoken_settings_are_accepted_with_engine_freetoken_and_default_memory_strategy_to_auto() -> None:
    spec = parse_local(
        engine="FreeToken",
        computeTarget="nvidia-gpu",
        contextWindow=32768,
        maxNumSeqs=4,
        freetoken={
            "gpuDevice": "gpu-0",
            "gpuCount": 2,
            "gpuMemoryMi": 40960,
            "systemMemoryMi": 65536,
            "advanced": {"anyKey": {"nested": [1, 2]}},
            "restartNonce": "2",
        },
    )
    assert spec.local.freetoken is not None
    assert spec.local.freetoken.memory_strategy == "auto"
    assert spec.local.freetoken.advanced == {"anyKey": {"nested": [1, 2]}}


@pytest.mark.parametrize("engine", ["OLlama", "FreeToken"])
def test_vllm_settings_require_engine_vllm(engine: str) -> None:
    error = rejection("ModelActivation", local_model(engine=engine, computeTarget="nvidia-gpu", vllm={}))
    assert error.field == "spec.local.vllm"
    assert "engine VLLM" in error.rule


def test_vllm_settings_without_a_value_mean_triton() -> None:
    spec = parse_local(engine="VLLM", computeTarget="amd-gpu", vllm={})
    assert spec.local.vllm is not None
    assert spec.local.vllm.vision_attention == "triton"


def test_omitted_vllm_settings_stay_omitted() -> None:
    assert parse_local(engine="VLLM", computeTarget="amd-gpu").local.vllm is None


@pytest.mark.parametrize("value", ["auto", "aotriton", "triton", "flash-attn-triton"])
def test_vision_attention_accepts_each_documented_backend(value: str) -> None:
    spec = parse_local(computeTarget="amd-gpu", vllm={"visionAttention": value})
    assert spec.local.vllm.vision_attention == value


@pytest.mark.parametrize("value", ["flash-attn", "xformers", ""])
def test_vision_attention_rejects_other_backends(value: str) -> None:
    error = rejection("ModelActivation", local_model(computeTarget="amd-gpu", vllm={"visionAttention": value}))
    assert error.field == "spec.local.vllm.visionAttention"


@pytest.mark.parametrize("missing", ["profile", "gpuNode"])
def test_realtime_requires_profile_and_gpu_node(missing: str) -> None:
    realtime = {"profile": "omni-cuda", "gpuNode": "worker-1"}
    del realtime[missing]
    error = rejection("ModelActivation", local_model(computeTarget="nvidia-gpu", realtime=realtime))
    assert error.field == f"spec.local.realtime.{missing}"
    assert error.rule == "is required"


def test_realtime_accepts_its_typed_settings() -> None:
    spec = parse_local(
        computeTarget="nvidia-gpu",
        realtime={
            "profile": "omni-cuda",
            "gpuNode": "worker-1",
            "gpuCount": 1,
            "systemMemoryMi": 32768,
            "gpuMemoryFraction": 0.9,
            "thinkerCpuOffloadGiB": 8,
            "runtimeImage": "",
            "restartNonce": "1",
        },
    )
    assert spec.local.realtime is not None
    assert spec.local.realtime.thinker_cpu_offload_gib == 8


@pytest.mark.parametrize("fraction", [0, 1.5, -0.1])
def test_realtime_gpu_memory_fraction_is_a_share_of_one(fraction: float) -> None:
    realtime = {"profile": "omni-cuda", "gpuNode": "worker-1", "gpuMemoryFraction": fraction}
    assert rejection("ModelActivation", local_model(realtime=realtime)).field == "spec.local.realtime.gpuMemoryFraction"


@pytest.mark.parametrize("engine", ["OLlama", "FreeToken"])
def test_realtime_settings_require_engine_vllm(engine: str) -> None:
    realtime = {"profile": "omni-cuda", "gpuNode": "worker-1"}
    error = rejection("ModelActivation", local_model(engine=engine, computeTarget="nvidia-gpu", realtime=realtime))
    assert error.field == "spec.local.realtime"


@pytest.mark.parametrize("target", ["cpu", "amd-gpu", "intel-gpu"])
def test_cpu_offloading_true_requires_nvidia_gpu(target: str) -> None:
    error = rejection("ModelActivation", local_model(computeTarget=target, cpuOffloading=True, memoryRequiredMi=65536))
    assert error.field == "spec.local.cpuOffloading"
    assert "nvidia-gpu" in error.rule


@pytest.mark.parametrize(("engine", "offload"), [("VLLM", 20480), ("OLlama", 0)])
def test_cpu_offloading_true_accepts_one_nvidia_vllm_or_ollama_replica(engine: str, offload: int) -> None:
    spec = parse_local(
        engine=engine,
        computeTarget="nvidia-gpu",
        cpuOffloading=True,
        memoryRequiredMi=65536,
        cpuOffloadMi=offload,
        replicas=1,
        vram="24Gi",
    )
    assert spec.local.cpu_offloading is True


def test_cpu_offloading_true_rejects_more_than_one_replica() -> None:
    error = rejection(
        "ModelActivation",
        local_model(computeTarget="nvidia-gpu", cpuOffloading=True, memoryRequiredMi=65536, cpuOffloadMi=1, replicas=2),
    )
    assert error.field == "spec.local.cpuOffloading"
    assert "one replica" in error.rule


def test_cpu_offloading_true_requires_a_host_ram_budget() -> None:
    error = rejection("ModelActivation", local_model(computeTarget="nvidia-gpu", cpuOffloading=True, cpuOffloadMi=1024))
    assert error.field == "spec.local.cpuOffloading"
    assert "memoryRequiredMi" in error.rule


def test_cpu_offloading_true_with_vllm_requires_the_weight_offload_budget() -> None:
    error = rejection(
        "ModelActivation", local_model(computeTarget="nvidia-gpu", cpuOffloading=True, memoryRequiredMi=65536)
    )
    assert error.field == "spec.local.cpuOffloading"
    assert "cpuOffloadMi" in error.rule


def test_cpu_offloading_true_with_ollama_rejects_a_positive_weight_offload_budget() -> None:
    error = rejection(
        "ModelActivation",
        local_model(
            engine="OLlama", computeTarget="nvidia-gpu", cpuOffloading=True, memoryRequiredMi=65536, cpuOffloadMi=512
        ),
    )
    assert error.field == "spec.local.cpuOffloading"
    assert "cpuOffloadMi 0" in error.rule


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_cpu_offloading_false_is_accepted_on_every_target(target: str) -> None:
    assert parse_local(computeTarget=target, cpuOffloading=False).local.cpu_offloading is False


def test_cpu_offloading_has_no_default() -> None:
    assert parse_local(computeTarget="nvidia-gpu").local.cpu_offloading is None


@pytest.mark.parametrize("memory", [15, 0, -1])
def test_memory_required_mi_rejects_values_below_sixteen(memory: int) -> None:
    error = rejection("ModelActivation", local_model(memoryRequiredMi=memory))
    assert (error.field, error.rule) == ("spec.local.memoryRequiredMi", "must be at least 16")


def test_cpu_resources_reject_an_explicit_limit_below_the_explicit_request() -> None:
    error = rejection("ModelActivation", local_model(cpuResources={"requestMillicores": 2000, "limitMillicores": 1500}))
    assert error.field == "spec.local.cpuResources.limitMillicores"
    assert "at least the request" in error.rule


@pytest.mark.parametrize(
    "cpu",
    [
        {"requestMillicores": 2000, "limitMillicores": 0},
        {"requestMillicores": 2000, "limitMillicores": 2000},
        {"requestMillicores": 500},
        {"limitMillicores": 1},
        {},
    ],
)
def test_cpu_resources_accept_consistent_or_partial_overrides(cpu: dict) -> None:
    assert parse_local(cpuResources=cpu).local.cpu_resources == CpuResources.model_validate(cpu)


@pytest.mark.parametrize(("field", "value"), [("requestMillicores", 0), ("limitMillicores", -1)])
def test_cpu_resources_bound_request_and_limit(field: str, value: int) -> None:
    error = rejection("ModelActivation", local_model(cpuResources={field: value}))
    assert error.field == f"spec.local.cpuResources.{field}"


def test_cpu_resources_may_be_null_to_remove_the_override() -> None:
    assert parse_local(cpuResources=None).local.cpu_resources is None


def test_validate_cpu_resources_checks_a_limit_against_the_inherited_request() -> None:
    with pytest.raises(SpecError) as caught:
        validate_cpu_resources(CpuResources(limit_millicores=500), default_request_millicores=1000)
    assert caught.value.field == "spec.local.cpuResources.limitMillicores"
    assert "inherited" in caught.value.rule


def test_validate_cpu_resources_prefers_the_explicit_request_over_the_inherited_one() -> None:
    # The same limit against the same inherited request of 1000: refused without a request of
    # its own, accepted with an explicit 250, so the explicit request is the one compared.
    with pytest.raises(SpecError) as caught:
        validate_cpu_resources(CpuResources(limit_millicores=500), default_request_millicores=1000)
    assert "below the inherited engine default request of 1000 millicores" in caught.value.rule

    validate_cpu_resources(CpuResources(request_millicores=250, limit_millicores=500), default_request_millicores=1000)


@pytest.mark.parametrize(
    "cpu",
    [None, CpuResources(), CpuResources(limit_millicores=0), CpuResources(request_millicores=4000)],
)
def test_validate_cpu_resources_accepts_no_positive_limit(cpu: CpuResources | None) -> None:
    validate_cpu_resources(cpu, default_request_millicores=1000)


def test_local_type_requires_the_local_section() -> None:
    error = rejection("ModelActivation", {"type": "local"})
    assert (error.field, error.rule) == ("spec.local", "local is required when type is local")


def test_external_type_requires_the_external_section() -> None:
    error = rejection("ModelActivation", {"type": "external"})
    assert (error.field, error.rule) == ("spec.external", "external is required when type is external")


def test_local_type_rejects_an_external_section() -> None:
    error = rejection("ModelActivation", {"type": "local", "local": {}, "external": {"model": "openai/example"}})
    assert error.field == "spec.external"


def test_external_type_rejects_a_local_section() -> None:
    error = rejection("ModelActivation", {"type": "external", "local": {}, "external": {"model": "openai/example"}})
    assert error.field == "spec.local"


@pytest.mark.parametrize("kind", ["remote", "Local", ""])
def test_type_is_local_or_external(kind: str) -> None:
    assert rejection("ModelActivation", {"type": kind}).field == "spec.type"


def test_local_defaults_select_vllm_on_cpu_in_namespace_ai() -> None:
    spec = parse_local(preset="qwen3635b")
    assert (spec.enabled, spec.target_namespace) == (True, "ai")
    assert (spec.local.compute_target, spec.local.engine) == ("cpu", "VLLM")


@pytest.mark.parametrize("namespace", ["AI", "ai_ns", "-ai", "a" * 64])
def test_target_namespace_must_be_a_dns_label(namespace: str) -> None:
    spec = {**local_model(), "targetNamespace": namespace}
    assert rejection("ModelActivation", spec).field == "spec.targetNamespace"


@pytest.mark.parametrize("vram", ["5Gi", "512Mi", "4G", "1.5Gi", "8589934592"])
def test_vram_accepts_kubernetes_quantities(vram: str) -> None:
    assert parse_local(computeTarget="nvidia-gpu", vram=vram).local.vram == vram


@pytest.mark.parametrize("vram", ["5 GB", "lots", "-1Gi", "5gi"])
def test_vram_rejects_other_text(vram: str) -> None:
    assert rejection("ModelActivation", local_model(vram=vram)).field == "spec.local.vram"


@pytest.mark.parametrize("api_base", ["ftp://api.example.com", "api.example.com/v1", "https://", "http://"])
def test_external_api_base_must_be_an_http_or_https_url(api_base: str) -> None:
    spec = {"type": "external", "external": {"model": "openai/example", "apiBase": api_base}}
    assert rejection("ModelActivation", spec).field == "spec.external.apiBase"


def test_a_keyless_local_endpoint_may_be_reached_over_plain_http() -> None:
    spec = {"type": "external", "external": {"model": "openai/local", "apiBase": "http://llm.example.local:8080/v1"}}
    assert parse_spec("ModelActivation", spec).external.api_base == "http://llm.example.local:8080/v1"


def test_an_api_key_is_never_sent_over_plain_http() -> None:
    secret = {"name": "external-openai-api-key", "key": "api-key"}
    spec = {
        "type": "external",
        "external": {"model": "openai/example", "apiBase": "http://api.example.com/v1", "apiKeySecretRef": secret},
    }
    error = rejection("ModelActivation", spec)
    assert error.field == "spec.external"
    assert "https://" in error.rule and "clear text" in error.rule


@pytest.mark.parametrize("field", ["apiKey", "api_key"])
def test_external_model_rejects_a_plain_api_key(field: str) -> None:
    spec = {"type": "external", "external": {"model": "openai/example", field: "CHANGEME"}}
    error = rejection("ModelActivation", spec)
    assert error.field == "spec.external"
    assert "apiKeySecretRef" in error.rule


@pytest.mark.parametrize("missing", ["name", "key"])
def test_external_api_key_secret_ref_names_a_secret_and_a_key(missing: str) -> None:
    ref = {"name": "external-example-api-key", "key": "api-key"}
    del ref[missing]
    spec = {"type": "external", "external": {"model": "openai/example", "apiKeySecretRef": ref}}
    assert rejection("ModelActivation", spec).field == f"spec.external.apiKeySecretRef.{missing}"


@pytest.mark.parametrize("model_type", ["chat", "embedding", "rerank"])
def test_external_model_type_accepts_litellm_modes(model_type: str) -> None:
    spec = parse_spec(
        "ModelActivation", {"type": "external", "external": {"model": "openai/example", "modelType": model_type}}
    )
    assert spec.external.model_type == model_type


def test_external_model_type_rejects_unknown_modes() -> None:
    spec = {"type": "external", "external": {"model": "openai/example", "modelType": "telepathy"}}
    assert rejection("ModelActivation", spec).field == "spec.external.modelType"
