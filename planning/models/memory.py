"""Memory estimates of local models, and the admission of their budgets. PURE.

The estimate splits a model's memory into weights (the artifact's `weightsMi`), cache (the
KV cache: on CPU vLLM the size the engine holds for `kvCacheMemoryBytes` (whole GiB, rounded up:
`vllm_cpu_kv_cache_gib`), else the artifact's `kvCacheMiPer1kTokens` for
`contextWindow` tokens (4096 when omitted) and `maxNumSeqs` sequences (1 when omitted), scaled
by the cache precision) and runtime (the engine's `runtimeMemoryMi`, always host RAM). Then:

- CPU: everything is host RAM; the minimum is weights + cache + runtime.
- Discrete GPU: weights and cache live in VRAM (`gpuMinimumMi`; with `cpuOffloading` only the
  cache must); host RAM holds the runtime plus, when offloading, what does not fit the VRAM
  budget (`ramMaximumMi`: every weight offloaded).
- Unified pool: the GPU memory is charged once. `firmware-reserved` memory lies outside Linux
  RAM, so the RAM request is the runtime alone; `shared-gtt` and `unknown` allocations come
  out of Linux RAM, so the request is runtime + weights + cache, never that plus the VRAM
  budget again. `fitsVram` compares with the pool's `gpuAccessibleMi` when known.

Recommended values add HEADROOM_PERCENT. A part that needs an unknown fact leaves the minimum
a lower bound and `ramMaximumMi` None (never 0).

Admission rejects, with a Reason and a message naming the field and the numbers: a RAM
budget below `ramMinimumMi` (host coverage: CPU models, CPU offloading, unified pools), a
unified-pool request beyond the pool's `physicalMemoryMi`, a VRAM budget below `gpuMinimumMi`,
and, for CPU offloading, an unknown estimate or VRAM budget.
`allowMemoryRisk: true` skips exactly these estimate checks; it changes no request, limit or
cache setting, and the structural rules of the API still apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Any

from api.status import MemoryEstimateStatus
from api.validation import SpecError
from planning.hardware.memory import DISCRETE, HostMemory
from planning.reasons import Reason

DEFAULT_CONTEXT_TOKENS = 4096
DEFAULT_SEQUENCES = 1
HEADROOM_PERCENT = 20
MEMORY_UNIT_MI = 16
_MI = 1024 * 1024
_GI = 1024 * _MI
CACHE_PRECISION_SCALE = {"auto": 1.0, "f16": 1.0, "fp8": 0.5, "q8_0": 0.5, "q4_0": 0.25}
"""Size of a KV-cache type relative to 16-bit."""


class MemoryRejected(SpecError):
    """A budget the estimate does not cover; `reason` says which check refused it."""

    def __init__(self, field: str, rule: str, reason: Reason) -> None:
        super().__init__(field, rule)
        self.reason = reason


@dataclass(frozen=True)
class MemoryInputs:
    """What the estimate is computed from: catalog facts and the resolved activation."""

    weights_mi: int | None
    kv_cache_mi_per_1k_tokens: int | None
    runtime_mi: int
    kv_cache_type: str | None
    on_cpu: bool
    kv_cache_memory_bytes: int | None = None
    context_window: int | None = None
    max_num_seqs: int | None = None
    cpu_offloading: bool = False
    vram_mi: int | None = None
    host: HostMemory = DISCRETE


@dataclass(frozen=True)
class MemoryEstimate:
    """The estimator object: RAM and GPU bounds and their weight/cache/runtime split, in MiB."""

    weights_mi: int | None
    cache_mi: int | None
    runtime_mi: int
    ram_minimum_mi: int
    ram_recommended_mi: int
    ram_maximum_mi: int | None
    gpu_minimum_mi: int | None
    gpu_recommended_mi: int | None
    fits_vram: bool | None
    host: HostMemory = DISCRETE

    @property
    def known(self) -> bool:
        """True when every part is known, so the minimum is an estimate, not a lower bound."""
        return self.weights_mi is not None and self.cache_mi is not None

    def to_status(self) -> dict[str, Any]:
        """The camelCase status object (`status.memoryEstimate`); unknown values omitted. Pure."""
        return MemoryEstimateStatus(
            ram_minimum_mi=self.ram_minimum_mi,
            ram_recommended_mi=self.ram_recommended_mi,
            ram_maximum_mi=self.ram_maximum_mi,
            gpu_minimum_mi=self.gpu_minimum_mi,
            gpu_recommended_mi=self.gpu_recommended_mi,
            fits_vram=self.fits_vram,
            weights_mi=self.weights_mi,
            cache_mi=self.cache_mi,
            runtime_mi=self.runtime_mi,
        ).to_wire()


def round_up(mi: int) -> int:
    """MiB rounded up to whole 16 MiB units. Pure."""
    return -(-mi // MEMORY_UNIT_MI) * MEMORY_UNIT_MI


def with_headroom(mi: int) -> int:
    """`mi` plus HEADROOM_PERCENT, in whole 16 MiB units. Pure."""
    return round_up(ceil(mi * (100 + HEADROOM_PERCENT) / 100))


def vllm_cpu_kv_cache_gib(requested_bytes: int) -> int:
    """The KV cache vLLM's CPU backend holds for `requested_bytes`, in GiB. Pure.

    That backend sizes its cache from VLLM_CPU_KVCACHE_SPACE alone, a whole number of GiB (0 would
    leave no cache, unset means 4), and ignores --kv-cache-memory-bytes (docs/engine-arguments.md);
    so the request is rounded up to whole GiB, at least one.
    """
    return max(1, ceil(requested_bytes / _GI))


def cache_mi(inputs: MemoryInputs) -> int | None:
    """The KV cache in MiB, or None when the artifact gives no cache fact. Pure."""
    if inputs.on_cpu and inputs.kv_cache_memory_bytes is not None:
        return vllm_cpu_kv_cache_gib(inputs.kv_cache_memory_bytes) * 1024
    if inputs.kv_cache_mi_per_1k_tokens is None:
        return None
    tokens = (inputs.context_window or DEFAULT_CONTEXT_TOKENS) * (inputs.max_num_seqs or DEFAULT_SEQUENCES)
    scale = CACHE_PRECISION_SCALE.get(inputs.kv_cache_type, 1.0) if inputs.kv_cache_type is not None else 1.0
    return ceil(inputs.kv_cache_mi_per_1k_tokens * scale * tokens / 1000)


def _sum(*parts: int | None) -> int | None:
    return None if any(part is None for part in parts) else sum(part for part in parts if part is not None)


def estimate_memory(inputs: MemoryInputs) -> MemoryEstimate:
    """The memory estimate of one model (module docstring: the rules). Pure."""
    weights, cache, runtime = inputs.weights_mi, cache_mi(inputs), inputs.runtime_mi
    model = _sum(weights, cache)
    lower = (weights or 0) + (cache or 0)
    if inputs.on_cpu:
        ram_min, ram_max = runtime + lower, _sum(runtime, model)
        gpu_min = gpu_rec = fits = None
    else:
        gpu_min = cache if inputs.cpu_offloading else model
        gpu_rec = with_headroom(model) if model is not None else None
        ram_min, ram_max = _gpu_host_ram(inputs, weights, model, lower)
        capacity = (
            inputs.host.gpu_accessible_mi if inputs.host.unified and inputs.host.gpu_accessible_mi else inputs.vram_mi
        )
        fits = model <= capacity if model is not None and capacity is not None else None
    return MemoryEstimate(
        weights_mi=weights,
        cache_mi=cache,
        runtime_mi=runtime,
        ram_minimum_mi=ram_min,
        ram_recommended_mi=with_headroom(ram_min),
        ram_maximum_mi=ram_max,
        gpu_minimum_mi=gpu_min,
        gpu_recommended_mi=gpu_rec,
        fits_vram=fits,
        host=inputs.host,
    )


def _gpu_host_ram(inputs: MemoryInputs, weights: int | None, model: int | None, lower: int) -> tuple[int, int | None]:
    """(ramMinimumMi, ramMaximumMi) of a GPU model: the host side only, GPU memory once. Pure."""
    runtime, host = inputs.runtime_mi, inputs.host
    if host.unified:
        if not host.gpu_charged_to_ram:
            return runtime, runtime
        return runtime + lower, _sum(runtime, model)
    if not inputs.cpu_offloading:
        return runtime, runtime
    spill = max(0, model - inputs.vram_mi) if model is not None and inputs.vram_mi is not None else 0
    return runtime + spill, _sum(runtime, weights)


@dataclass(frozen=True)
class MemoryBudget:
    """The budgets an activation gives, with the fields that carry them."""

    ram_mi: int | None
    vram_mi: int | None
    covers_host: bool
    """The RAM budget must cover ramMinimumMi: CPU models, CPU offloading, unified pools."""
    cpu_offloading: bool = False
    ram_field: str = "spec.local.memoryRequiredMi"
    vram_field: str = "spec.local.vramMi"
    request_mi: int | None = None
    """The RAM the Pod will request; on a unified pool it must fit the pool's physical memory."""


def memory_problem(estimate: MemoryEstimate, budget: MemoryBudget) -> MemoryRejected | None:
    """The first budget the estimate does not cover, or None. Pure."""
    if budget.cpu_offloading and not estimate.known:
        return MemoryRejected(
            budget.ram_field,
            "the memory estimate is unknown (the artifact gives no weightsMi or kvCacheMiPer1kTokens), so host "
            "coverage of CPU offloading cannot be checked; set allowMemoryRisk: true to accept the risk",
            Reason.MEMORY_ESTIMATE_UNKNOWN,
        )
    if budget.cpu_offloading and budget.vram_mi is None:
        return MemoryRejected(
            budget.vram_field,
            "CPU offloading needs a GPU memory budget (vram or vramMi) to know what is offloaded; "
            "set one, or allowMemoryRisk: true to accept the risk",
            Reason.MEMORY_BUDGET_UNKNOWN,
        )
    if budget.covers_host and budget.ram_mi is not None and budget.ram_mi < estimate.ram_minimum_mi:
        return MemoryRejected(
            budget.ram_field,
            f"{budget.ram_mi} MiB is below the estimated minimum of {estimate.ram_minimum_mi} MiB "
            f"({_split(estimate)}; recommended {estimate.ram_recommended_mi} MiB); "
            "raise it, or set allowMemoryRisk: true to accept the risk",
            Reason.INSUFFICIENT_MEMORY,
        )
    return _pool_problem(estimate, budget) or _vram_problem(estimate, budget)


def _pool_problem(estimate: MemoryEstimate, budget: MemoryBudget) -> MemoryRejected | None:
    physical = estimate.host.physical_memory_mi if estimate.host.unified else None
    if physical is None or budget.request_mi is None or budget.request_mi <= physical:
        return None
    return MemoryRejected(
        budget.ram_field,
        f"the request of {budget.request_mi} MiB exceeds the {physical} MiB of the shared memory pool "
        f"{estimate.host.shared_pool_id}; lower it, or set allowMemoryRisk: true to accept the risk",
        Reason.INSUFFICIENT_MEMORY,
    )


def _vram_problem(estimate: MemoryEstimate, budget: MemoryBudget) -> MemoryRejected | None:
    if budget.cpu_offloading or estimate.fits_vram is not False:
        return None
    unified = estimate.host.unified and estimate.host.gpu_accessible_mi
    capacity = (
        f"the GPU-accessible {estimate.host.gpu_accessible_mi} MiB of the shared pool"
        if unified
        else f"{budget.vram_mi} MiB"
    )
    return MemoryRejected(
        budget.vram_field,
        f"{capacity} is below the estimated GPU minimum of {estimate.gpu_minimum_mi} MiB ({_split(estimate)}); "
        "raise it, or set allowMemoryRisk: true to accept the risk",
        Reason.INSUFFICIENT_VRAM,
    )


def _split(estimate: MemoryEstimate) -> str:
    def part(name: str, mi: int | None) -> str:
        return f"{name} {mi} MiB" if mi is not None else f"{name} unknown"

    return ", ".join(
        (part("weights", estimate.weights_mi), part("cache", estimate.cache_mi), part("runtime", estimate.runtime_mi))
    )


def admit_memory(estimate: MemoryEstimate, budget: MemoryBudget, *, allow_risk: bool) -> None:
    """Raises MemoryRejected when a budget is insufficient or unknown, unless `allow_risk`
    (allowMemoryRisk: true), which skips exactly these estimate checks. Pure."""
    problem = memory_problem(estimate, budget)
    if problem is not None and not allow_risk:
        raise problem
