"""The dashboard's memory figures are the program's: same estimator, same inputs, same verdict."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from api.models import LocalModelSpec
from api.validation import SpecError
from catalogs import Catalogs, PresetCatalog
from planning.hardware.memory import (
    DISCRETE,
    GPU_ACCESSIBLE_ANNOTATION,
    GPU_ALLOCATION_MODE_ANNOTATION,
    HostMemory,
    pool_for_target,
)
from planning.hardware.operators import observe_hardware
from planning.models import resolve
from planning.models.memory import MemoryRejected
from planning.models.resolve import resolve_admitted
from planning.snapshot import Snapshot
from services.dashboard.estimates import (
    KV_CACHE_FALLBACK_BYTES,
    LocalModelEstimate,
    LocalModelRequest,
    estimate_local_model,
    host_memory_for_target,
)
from tests.planning.builders import CATALOGS, plan_of, status_of, with_flux
from tests.planning.hardware.nodes import node, node_feature
from tests.planning.models.world import platform

MI = 1024 * 1024
SHARED_POOL = HostMemory(
    architecture="unified",
    shared_pool_id="uid-apu",
    gpu_allocation_mode="shared-gtt",
    physical_memory_mi=131072,
    gpu_accessible_mi=98304,
)
SMALL_FIRMWARE_POOL = HostMemory(
    architecture="unified", shared_pool_id="uid-apu", gpu_allocation_mode="firmware-reserved", physical_memory_mi=2048
)
STRIX_HALO = ("0300", "1002", "1586")


def _request(
    preset: str = "qwen2505bcpu", engine: str = "VLLM", target: str = "cpu", **fields: Any
) -> LocalModelRequest:
    return LocalModelRequest(preset=preset, engine=engine, compute_target=target, **fields)


def _spec(request: LocalModelRequest, estimate: LocalModelEstimate, *, allow_risk: bool) -> LocalModelSpec:
    """The ModelActivation spec.local the dashboard writes for `request`: its fields, the derived
    ones, and allowMemoryRisk as the warning button records it."""
    wire = {
        "preset": request.preset,
        "engine": request.engine,
        "computeTarget": request.compute_target,
        "artifact": request.artifact,
        "contextWindow": request.context_window,
        "maxNumSeqs": request.max_num_seqs,
        "kvCacheType": request.kv_cache_type,
        "memoryRequiredMi": request.memory_required_mi,
        "vramMi": request.vram_mi,
        "cpuOffloading": request.cpu_offloading or None,
        "kvCacheMemoryBytes": estimate.kv_cache_memory_bytes,
        "cpuOffloadMi": estimate.cpu_offload_mi,
        "allowMemoryRisk": allow_risk or None,
    }
    return LocalModelSpec.model_validate({key: value for key, value in wire.items() if value is not None})


PROGRAM_CASES: dict[str, tuple[LocalModelRequest, HostMemory]] = {
    "cpu vllm, defaults": (_request(), DISCRETE),
    "cpu vllm, long context and four sequences": (
        _request(context_window=32768, max_num_seqs=4, memory_required_mi=8192),
        DISCRETE,
    ),
    "cpu vllm, budget below the minimum": (
        _request(context_window=32768, max_num_seqs=4, memory_required_mi=2048),
        DISCRETE,
    ),
    "cpu vllm embedding": (_request("bgem3", context_window=8192), DISCRETE),
    "cpu ollama, quantized cache": (
        _request(engine="OLlama", artifact="q8-0", kv_cache_type="q4_0", context_window=16384),
        DISCRETE,
    ),
    "nvidia vllm, artifact budget": (_request("qwen3635b", target="nvidia-gpu"), DISCRETE),
    "nvidia vllm, vram below the minimum": (
        _request("qwen3635b", target="nvidia-gpu", artifact="bf16", vram_mi=24576),
        DISCRETE,
    ),
    "nvidia vllm, fp8 cache": (
        _request("qwen306b", target="nvidia-gpu", kv_cache_type="fp8", context_window=32768, max_num_seqs=8),
        DISCRETE,
    ),
    "nvidia vllm, offloading": (
        _request("qwen3635b", target="nvidia-gpu", cpu_offloading=True, memory_required_mi=65536, vram_mi=24576),
        DISCRETE,
    ),
    "nvidia vllm, offloading with too little ram": (
        _request("qwen3635b", target="nvidia-gpu", cpu_offloading=True, memory_required_mi=8192, vram_mi=24576),
        DISCRETE,
    ),
    "nvidia ollama, offloading": (
        _request("qwen306b", engine="OLlama", target="nvidia-gpu", cpu_offloading=True, memory_required_mi=4096),
        DISCRETE,
    ),
    "amd vllm on a shared-gtt pool": (_request("qwen306b", target="amd-gpu"), SHARED_POOL),
    "amd vllm beyond a small firmware pool": (
        _request("qwen306b", target="amd-gpu", memory_required_mi=4096),
        SMALL_FIRMWARE_POOL,
    ),
    "cpu model with a pool given": (_request(), SHARED_POOL),
}


@pytest.mark.parametrize("case", sorted(PROGRAM_CASES))
def test_the_dashboards_figures_equal_what_the_programs_planning_computes_for_the_same_activation(case: str) -> None:
    request, host = PROGRAM_CASES[case]
    estimate = estimate_local_model(request, CATALOGS, host=host)
    resolved = resolve_admitted(_spec(request, estimate, allow_risk=True), CATALOGS, host=host)
    program = resolved.memory_estimate
    assert program is not None
    assert (
        estimate.ram_minimum_mi,
        estimate.ram_recommended_mi,
        estimate.ram_maximum_mi,
        estimate.gpu_minimum_mi,
        estimate.gpu_recommended_mi,
        estimate.fits_vram,
        estimate.weights_mi,
        estimate.cache_mi,
        estimate.runtime_mi,
    ) == (
        program.ram_minimum_mi,
        program.ram_recommended_mi,
        program.ram_maximum_mi,
        program.gpu_minimum_mi,
        program.gpu_recommended_mi,
        program.fits_vram,
        program.weights_mi,
        program.cache_mi,
        program.runtime_mi,
    )
    assert (estimate.vram_mi, estimate.kv_cache_memory_bytes, estimate.cpu_offload_mi) == (
        resolved.vram_mi,
        resolved.kv_cache_memory_bytes,
        resolved.cpu_offload_mi,
    )


@pytest.mark.parametrize("case", sorted(PROGRAM_CASES))
def test_the_dashboard_sees_a_risk_exactly_where_the_program_refuses_the_activation_without_allow_memory_risk(
    case: str,
) -> None:
    request, host = PROGRAM_CASES[case]
    estimate = estimate_local_model(request, CATALOGS, host=host)
    try:
        resolve_admitted(_spec(request, estimate, allow_risk=False), CATALOGS, host=host)
    except MemoryRejected as refused:
        assert estimate.risk is not None
        assert (estimate.risk.field, estimate.risk.reason, estimate.risk.message) == (
            refused.field,
            refused.reason,
            str(refused),
        )
    else:
        assert estimate.risk is None


def test_the_dashboards_kv_cache_fallback_is_the_programs() -> None:
    assert KV_CACHE_FALLBACK_BYTES == resolve.KV_CACHE_FALLBACK_BYTES


@pytest.mark.parametrize(
    ("request_", "mebibytes", "engine_cache_mi"),
    [
        # 12 MiB per 1k tokens x 4096 tokens x 1 sequence = 49.152 MiB -> 50 -> 64 (16 MiB units)
        (_request(), 64, 1024),
        # 12 x 32768 x 4 / 1000 = 1572.864 MiB -> 1573 -> 1584 (99 units); the engine holds 2 GiB
        (_request(context_window=32768, max_num_seqs=4), 1584, 2048),
        # 96 x 8192 x 1 / 1000 = 786.432 MiB -> 787 -> 800 (50 units)
        (_request("bgem3", context_window=8192), 800, 1024),
        # 112 x 2048 x 2 / 1000 = 458.752 MiB -> 459 -> 464 (29 units)
        (_request("qwen306b", context_window=2048, max_num_seqs=2), 464, 1024),
        # 12 x 1000 x 16 / 1000 = 192 MiB exactly: already whole units
        (_request(context_window=1000, max_num_seqs=16), 192, 1024),
    ],
    ids=["defaults", "long-context-four-sequences", "bge-m3-8k", "qwen3-two-sequences", "exact-units"],
)
def test_a_cpu_vllm_models_kv_cache_memory_bytes_is_derived_from_the_catalog_context_and_sequences(
    request_: LocalModelRequest, mebibytes: int, engine_cache_mi: int
) -> None:
    """The estimate counts what CPU vLLM holds: the derived size in whole GiB (VLLM_CPU_KVCACHE_SPACE)."""
    estimate = estimate_local_model(request_, CATALOGS)
    assert estimate.kv_cache_memory_bytes == mebibytes * MI
    assert estimate.cache_mi == engine_cache_mi


@pytest.mark.parametrize(
    "request_",
    [
        _request(engine="OLlama"),
        _request(target="nvidia-gpu"),
        _request("qwen3635b", engine="FreeToken", target="nvidia-gpu"),
    ],
    ids=["cpu-ollama", "gpu-vllm", "freetoken"],
)
def test_kv_cache_memory_bytes_is_none_where_the_field_does_not_apply(request_: LocalModelRequest) -> None:
    assert estimate_local_model(request_, CATALOGS).kv_cache_memory_bytes is None


def _with_artifact(preset: str, engine: str, target: str, artifact: str, **update: object) -> Catalogs:
    """The shipped catalogs with one artifact changed, as a replaced presets.yaml would say (a
    new catalog, not a copy: a copy would keep the old one's index by name)."""

    def variant_of(v):
        if (v.engine, v.compute_target) != (engine, target):
            return v
        return v.model_copy(
            update={"artifacts": tuple(a.model_copy(update=update) if a.id == artifact else a for a in v.artifacts)}
        )

    presets = tuple(
        p.model_copy(update={"variants": tuple(variant_of(v) for v in p.variants)}) if p.name == preset else p
        for p in CATALOGS.presets.entries
    )
    return CATALOGS.model_copy(update={"presets": PresetCatalog(entries=presets)})


def test_without_a_cache_fact_nothing_is_derived_and_the_programs_fallback_is_counted() -> None:
    catalogs = _with_artifact("qwen2505bcpu", "VLLM", "cpu", "bf16", kv_cache_mi_per_1k_tokens=None)
    estimate = estimate_local_model(_request(), catalogs)
    assert estimate.kv_cache_memory_bytes is None
    assert estimate.cache_mi == 1024, "the 512 MiB fallback runs as one whole GiB"


def test_an_unknown_maximum_is_none_and_the_minimum_a_lower_bound() -> None:
    catalogs = _with_artifact("qwen2505bcpu", "VLLM", "cpu", "bf16", weights_mi=None)
    estimate = estimate_local_model(_request(), catalogs)
    assert estimate.ram_maximum_mi is None
    assert estimate.weights_mi is None
    assert estimate.ram_minimum_mi == 1536 + 1024
    assert estimate.to_wire()["ramMaximumMi"] is None


def test_an_unknown_maximum_with_offloading_is_none_and_a_risk_of_an_unknown_estimate() -> None:
    catalogs = _with_artifact("qwen3635b", "VLLM", "nvidia-gpu", "fp8", weights_mi=None)
    estimate = estimate_local_model(
        _request("qwen3635b", target="nvidia-gpu", cpu_offloading=True, memory_required_mi=65536), catalogs
    )
    assert (estimate.ram_maximum_mi, estimate.cpu_offload_mi) == (None, None)
    assert estimate.risk is not None
    assert (estimate.risk.kind, str(estimate.risk.reason), estimate.risk.field) == (
        "unknown",
        "MemoryEstimateUnknown",
        "spec.local.memoryRequiredMi",
    )


def test_offloading_without_any_vram_budget_is_a_risk_of_an_unknown_budget_naming_vram_mi() -> None:
    catalogs = _with_artifact("qwen3635b", "VLLM", "nvidia-gpu", "fp8", vram_mi=None)
    estimate = estimate_local_model(
        _request("qwen3635b", target="nvidia-gpu", cpu_offloading=True, memory_required_mi=65536), catalogs
    )
    assert estimate.risk is not None
    assert (estimate.risk.kind, str(estimate.risk.reason), estimate.risk.field) == (
        "unknown",
        "MemoryBudgetUnknown",
        "spec.local.vramMi",
    )
    assert estimate.cpu_offload_mi is None


@pytest.mark.parametrize(
    ("request_", "field", "reason", "numbers"),
    [
        (
            _request(memory_required_mi=1024),
            "spec.local.memoryRequiredMi",
            "InsufficientMemory",
            ("1024 MiB", "3520 MiB"),
        ),
        (
            _request("qwen3635b", target="nvidia-gpu", artifact="bf16", vram_mi=24576),
            "spec.local.vramMi",
            "InsufficientVRAM",
            ("24576 MiB", "68772 MiB"),
        ),
        (
            _request("qwen3635b", target="nvidia-gpu", vram_mi=24576, cpu_offloading=True, memory_required_mi=8192),
            "spec.local.memoryRequiredMi",
            "InsufficientMemory",
            ("8192 MiB", "12964 MiB"),
        ),
    ],
    ids=["cpu-ram", "gpu-vram", "offloading-ram"],
)
def test_an_oversized_model_gives_a_risk_naming_the_field_and_the_numbers(
    request_: LocalModelRequest, field: str, reason: str, numbers: tuple[str, str]
) -> None:
    estimate = estimate_local_model(request_, CATALOGS)
    assert estimate.risk is not None
    assert (estimate.risk.field, estimate.risk.kind, str(estimate.risk.reason)) == (field, "insufficient", reason)
    assert estimate.risk.message.startswith(f"{field}: ")
    assert all(number in estimate.risk.message for number in numbers)
    assert estimate.allow_memory_risk is True


@pytest.mark.parametrize(
    "request_",
    [
        _request(),
        _request(engine="OLlama"),
        _request("qwen3635b", target="nvidia-gpu"),
        _request("qwen306b", target="amd-gpu"),
    ],
    ids=["cpu-vllm", "cpu-ollama", "nvidia-vllm", "amd-vllm"],
)
def test_the_catalogs_default_budgets_cover_the_estimate_and_give_no_risk(request_: LocalModelRequest) -> None:
    estimate = estimate_local_model(request_, CATALOGS)
    assert (estimate.risk, estimate.allow_memory_risk) == (None, False)


@pytest.mark.parametrize(
    ("request_", "offload"),
    [
        # fp8 weights 35840 + cache ceil(40 x 4096 / 1000) = 164, on 24576 MiB of VRAM: 11428 MiB offloaded
        (
            _request("qwen3635b", target="nvidia-gpu", cpu_offloading=True, memory_required_mi=65536, vram_mi=24576),
            11428,
        ),
        # everything fits 40960 MiB: nothing offloaded
        (_request("qwen3635b", target="nvidia-gpu", cpu_offloading=True, memory_required_mi=65536), 0),
        # 100 MiB hold not even the cache: every weight is offloaded, never more
        (_request("qwen3635b", target="nvidia-gpu", cpu_offloading=True, memory_required_mi=65536, vram_mi=100), 35840),
        (
            _request(
                "qwen306b",
                engine="OLlama",
                target="nvidia-gpu",
                cpu_offloading=True,
                memory_required_mi=4096,
                vram_mi=256,
            ),
            0,
        ),
        (_request("qwen3635b", target="nvidia-gpu", vram_mi=24576), None),
        (_request(), None),
    ],
    ids=["vllm-spills", "vllm-fits", "vllm-below-the-cache", "ollama", "no-offloading", "cpu"],
)
def test_cpu_offload_mi_is_the_weight_budget_beyond_the_vram_budget_for_vllm_and_0_for_ollama(
    request_: LocalModelRequest, offload: int | None
) -> None:
    assert estimate_local_model(request_, CATALOGS).cpu_offload_mi == offload


def test_derived_values_are_not_fields_a_client_can_send() -> None:
    names = {field.name for field in dataclasses.fields(LocalModelRequest)}
    assert not names & {"kv_cache_memory_bytes", "cpu_offload_mi", "allow_memory_risk"}


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (_request("no-such-preset"), "spec.local.preset"),
        (_request(engine="NoSuchEngine"), "spec.local.engine"),
        (_request("qwen3635b"), "spec.local.computeTarget"),
        (_request(artifact="no-such-artifact"), "spec.local.artifact"),
        (_request(kv_cache_type="fp8"), "spec.local.kvCacheType"),
        (
            _request("qwen306b", target="amd-gpu", cpu_offloading=True, memory_required_mi=8192),
            "spec.local.cpuOffloading",
        ),
    ],
    ids=["preset", "engine", "variant", "artifact", "kv-cache-type", "offloading-target"],
)
def test_a_request_the_catalogs_cannot_serve_is_refused_naming_the_field(
    request_: LocalModelRequest, field: str
) -> None:
    with pytest.raises(SpecError) as refused:
        estimate_local_model(request_, CATALOGS)
    assert refused.value.field == field


def test_the_wire_form_is_camel_case_with_null_for_what_does_not_apply() -> None:
    wire = estimate_local_model(_request(), CATALOGS).to_wire()
    assert wire["kvCacheMemoryBytes"] == 64 * MI
    assert (wire["gpuMinimumMi"], wire["fitsVram"], wire["cpuOffloadMi"], wire["risk"]) == (None, None, None, None)
    assert (wire["weightsMi"], wire["cacheMi"], wire["runtimeMi"]) == (960, 1024, 1536)


def _apu(annotations: dict[str, str], *, name: str = "apu-1") -> list[dict]:
    obj = node(name, "amd", allocatable={"memory": "128Gi", "amd.com/gpu": "1"})
    obj["status"]["capacity"]["memory"] = "128Gi"
    obj["metadata"]["annotations"] = annotations
    return [obj, node_feature(name, STRIX_HALO)]


HOST_WORLDS: dict[str, list[dict]] = {
    "one shared-gtt apu": [
        *platform("amd-gpu"),
        *_apu({GPU_ALLOCATION_MODE_ANNOTATION: "shared-gtt", GPU_ACCESSIBLE_ANNOTATION: "98304"}),
    ],
    "one apu without host evidence": [*platform("amd-gpu"), *_apu({})],
    "two apus": [*platform("amd-gpu"), *_apu({}), *_apu({}, name="apu-2")],
    "one discrete amd gpu": [
        *platform("amd-gpu"),
        node("gpu-1", "amd", allocatable={"amd.com/gpu": "1"}),
        node_feature("gpu-1", ("0300", "1002", "744c")),
    ],
}


@pytest.mark.parametrize("world", sorted(HOST_WORLDS))
@pytest.mark.parametrize("target", ["amd-gpu", "nvidia-gpu", "cpu"])
def test_the_memory_layout_read_from_the_appliance_status_is_the_one_the_program_uses(world: str, target: str) -> None:
    objects = HOST_WORLDS[world]
    status = status_of(plan_of(*objects), "Appliance", "local")
    hardware = observe_hardware(Snapshot.from_objects(with_flux(objects)), CATALOGS)
    program = pool_for_target(capacity=hardware.capacity, memory=hardware.memory, compute_target=target)
    assert host_memory_for_target(status, target, CATALOGS) == program


def test_a_missing_status_gives_discrete_memory() -> None:
    assert host_memory_for_target(None, "amd-gpu", CATALOGS) == DISCRETE
