"""The memory estimator: weight/cache/runtime split, RAM and GPU bounds, unified pools."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planning.hardware.memory import HostMemory
from planning.models.memory import (
    MemoryBudget,
    MemoryInputs,
    MemoryRejected,
    admit_memory,
    estimate_memory,
    memory_problem,
    with_headroom,
)
from planning.reasons import Reason

FIRMWARE = HostMemory(
    architecture="unified",
    shared_pool_id="uid-apu",
    gpu_allocation_mode="firmware-reserved",
    physical_memory_mi=131072,
    gpu_accessible_mi=98304,
)
SHARED = HostMemory(
    architecture="unified",
    shared_pool_id="uid-apu",
    gpu_allocation_mode="shared-gtt",
    physical_memory_mi=131072,
    gpu_accessible_mi=98304,
)


def _inputs(**changes: object) -> MemoryInputs:
    fields: dict[str, object] = {
        "weights_mi": 1000,
        "kv_cache_mi_per_1k_tokens": 10,
        "runtime_mi": 500,
        "kv_cache_type": "auto",
        "on_cpu": False,
        "vram_mi": 4096,
    }
    fields.update(changes)
    return MemoryInputs(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "ram_minimum", "ram_maximum", "gpu_minimum", "fits"),
    [
        ({"on_cpu": True, "vram_mi": None}, 1000 + 41 + 500, 1541, None, None),
        # CPU vLLM holds whole GiB of KV cache (VLLM_CPU_KVCACHE_SPACE): 512 MiB asked, 1 GiB held
        ({"on_cpu": True, "kv_cache_memory_bytes": 512 * 1024 * 1024}, 1000 + 1024 + 500, 2524, None, None),
        ({}, 500, 500, 1041, True),
        ({"vram_mi": 1024}, 500, 500, 1041, False),
        ({"cpu_offloading": True, "vram_mi": 541}, 500 + 500, 1500, 41, False),
        ({"kv_cache_type": "q4_0"}, 500, 500, 1011, True),
        ({"context_window": 8000, "max_num_seqs": 2}, 500, 500, 1160, True),
        ({"host": FIRMWARE}, 500, 500, 1041, True),
        ({"host": SHARED}, 500 + 1041, 1541, 1041, True),
    ],
    ids=[
        "cpu",
        "cpu-vllm-cache-bytes",
        "gpu",
        "gpu-too-small",
        "offloading",
        "q4-cache",
        "long-context",
        "unified-firmware",
        "unified-shared-gtt",
    ],
)
def test_the_estimate_splits_weights_cache_and_runtime_and_bounds_ram_and_gpu(
    changes, ram_minimum, ram_maximum, gpu_minimum, fits
) -> None:
    estimate = estimate_memory(_inputs(**changes))
    assert (estimate.ram_minimum_mi, estimate.ram_maximum_mi, estimate.gpu_minimum_mi, estimate.fits_vram) == (
        ram_minimum,
        ram_maximum,
        gpu_minimum,
        fits,
    )
    assert estimate.ram_recommended_mi == with_headroom(ram_minimum)


def test_an_unknown_weight_leaves_the_maximum_null_never_zero_and_the_minimum_a_lower_bound() -> None:
    estimate = estimate_memory(_inputs(weights_mi=None, on_cpu=True))
    assert estimate.ram_maximum_mi is None
    assert estimate.ram_minimum_mi == 541
    assert "ramMaximumMi" not in estimate.to_status()
    assert estimate.known is False


def test_a_unified_pool_charges_the_gpu_budget_to_linux_ram_once_never_on_top_of_the_vram_budget() -> None:
    estimate = estimate_memory(_inputs(host=SHARED, vram_mi=8192))
    assert estimate.ram_minimum_mi == 500 + 1000 + 41
    assert estimate.ram_minimum_mi < 500 + 1041 + 8192


def test_a_unified_pool_compares_the_model_with_its_gpu_accessible_bound_not_the_vram_budget() -> None:
    small_pool = HostMemory(
        architecture="unified", shared_pool_id="u", gpu_allocation_mode="unknown", gpu_accessible_mi=1024
    )
    assert estimate_memory(_inputs(host=small_pool, vram_mi=65536)).fits_vram is False


def test_the_status_object_carries_the_seed_field_names() -> None:
    assert set(estimate_memory(_inputs()).to_status()) == {
        "ramMinimumMi",
        "ramRecommendedMi",
        "ramMaximumMi",
        "gpuMinimumMi",
        "gpuRecommendedMi",
        "fitsVram",
        "weightsMi",
        "cacheMi",
        "runtimeMi",
    }


@given(
    weights=st.integers(1, 200_000),
    per_1k=st.integers(1, 500),
    runtime=st.integers(1, 8192),
    context=st.integers(1, 131072),
    seqs=st.integers(1, 64),
    host=st.sampled_from([HostMemory(), FIRMWARE, SHARED]),
    on_cpu=st.booleans(),
)
def test_bounds_are_ordered_and_positive_for_every_known_estimate(
    weights, per_1k, runtime, context, seqs, host, on_cpu
) -> None:
    estimate = estimate_memory(
        _inputs(
            weights_mi=weights,
            kv_cache_mi_per_1k_tokens=per_1k,
            runtime_mi=runtime,
            context_window=context,
            max_num_seqs=seqs,
            host=host,
            on_cpu=on_cpu,
        )
    )
    assert 0 < estimate.ram_minimum_mi <= estimate.ram_recommended_mi
    assert estimate.ram_maximum_mi is not None and estimate.ram_maximum_mi >= estimate.ram_minimum_mi
    if not on_cpu:
        assert estimate.gpu_minimum_mi is not None and estimate.gpu_recommended_mi is not None
        assert 0 < estimate.gpu_minimum_mi <= estimate.gpu_recommended_mi
        assert estimate.ram_minimum_mi <= runtime + weights + estimate.cache_mi


@pytest.mark.parametrize(
    ("inputs", "budget", "reason", "field"),
    [
        (
            _inputs(on_cpu=True),
            MemoryBudget(ram_mi=1024, vram_mi=None, covers_host=True),
            Reason.INSUFFICIENT_MEMORY,
            "spec.local.memoryRequiredMi",
        ),
        (
            _inputs(vram_mi=512),
            MemoryBudget(ram_mi=None, vram_mi=512, covers_host=False),
            Reason.INSUFFICIENT_VRAM,
            "spec.local.vramMi",
        ),
        (
            _inputs(weights_mi=None, cpu_offloading=True),
            MemoryBudget(ram_mi=8192, vram_mi=4096, covers_host=True, cpu_offloading=True),
            Reason.MEMORY_ESTIMATE_UNKNOWN,
            "spec.local.memoryRequiredMi",
        ),
        (
            _inputs(cpu_offloading=True, vram_mi=None),
            MemoryBudget(ram_mi=8192, vram_mi=None, covers_host=True, cpu_offloading=True),
            Reason.MEMORY_BUDGET_UNKNOWN,
            "spec.local.vramMi",
        ),
        (
            _inputs(host=SHARED),
            MemoryBudget(ram_mi=1024, vram_mi=4096, covers_host=True),
            Reason.INSUFFICIENT_MEMORY,
            "spec.local.memoryRequiredMi",
        ),
    ],
    ids=["cpu-ram", "vram", "offloading-unknown-estimate", "offloading-unknown-vram", "unified-ram"],
)
def test_insufficient_or_unknown_budgets_are_refused_with_a_typed_reason_unless_the_risk_is_allowed(
    inputs, budget, reason, field
) -> None:
    estimate = estimate_memory(inputs)
    problem = memory_problem(estimate, budget)
    assert isinstance(problem, MemoryRejected)
    assert problem.reason is reason
    assert str(problem).startswith(f"{field}: ")
    with pytest.raises(MemoryRejected):
        admit_memory(estimate, budget, allow_risk=False)
    admit_memory(estimate, budget, allow_risk=True)


def test_an_insufficient_budget_message_names_the_budget_and_the_estimate() -> None:
    problem = memory_problem(
        estimate_memory(_inputs(on_cpu=True)), MemoryBudget(ram_mi=1024, vram_mi=None, covers_host=True)
    )
    assert "1024 MiB is below the estimated minimum of 1541 MiB" in str(problem)
    assert "weights 1000 MiB, cache 41 MiB, runtime 500 MiB" in str(problem)


def test_a_covered_budget_is_admitted_without_the_risk_flag() -> None:
    admit_memory(
        estimate_memory(_inputs(on_cpu=True)),
        MemoryBudget(ram_mi=4096, vram_mi=None, covers_host=True),
        allow_risk=False,
    )
