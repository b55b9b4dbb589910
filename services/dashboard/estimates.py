"""The memory figures of a local model the dashboard is about to add, by the program's own estimator. Pure.

The dashboard shows, and warns on, exactly what the program will admit the model against, so it
calls the program's pure estimator (`planning.models.memory`: `estimate_memory`, `cache_mi`,
`memory_problem`) with the memory layout type of `planning.hardware.memory` (`HostMemory`),
rather than keeping a second copy of either. These two modules are the one exception to "services
are not the program" (`pyproject.toml`, `[tool.importlinter]`), and this module is the only one
that imports them.

The inputs are those of `planning/models/resolve.py` (`_resolve` and `_with_memory`), taken the
same way, so the figures are the ones the program writes to `status.memoryEstimate`:

- the artifact (the variant's defaultArtifact when omitted) gives `weightsMi` and
  `kvCacheMiPer1kTokens`, and the default budgets `memoryRequiredMi` (CPU) and `vramMi` (GPU);
- the engine gives `runtimeMemoryMi`, `defaultMemoryMi` and the default kvCacheType;
- on CPU the RAM budget is memoryRequiredMi, else the artifact's, else the engine's, rounded up
  to 16 MiB; on a GPU the VRAM budget is vramMi, else the artifact's; on a unified pool the RAM
  request is memoryRequiredMi, else the recommended RAM, rounded up to 16 MiB;
- a CPU model never sits on a GPU pool.

**Derived fields**, computed here and never taken from the client:

- `kvCacheMemoryBytes` (CPU vLLM only; None elsewhere): the artifact's `kvCacheMiPer1kTokens` for
  `contextWindow` tokens (4096 when omitted) and `maxNumSeqs` sequences (1 when omitted),
  scaled by the cache precision: the program's `cache_mi`, rounded up to whole 16 MiB units
  (`round_up`), in bytes. The estimate then reads it back as the program will, so its cache is
  what CPU vLLM holds for it: whole GiB (`vllm_cpu_kv_cache_gib`). Without a
  `kvCacheMiPer1kTokens` nothing is derived (None), and the program's 512 MiB compatibility
  fallback is what is asked (`KV_CACHE_FALLBACK_BYTES`), one GiB what the estimate counts.
- `cpuOffloadMi` (cpuOffloading true only; None elsewhere): 0 for Ollama (GPU-first auto-fit);
  for vLLM on NVIDIA, the weights that do not fit the VRAM budget once the cache has its place
  there: weights + cache - VRAM budget, at least 0 and at most the weights. None when the estimate
  or the VRAM budget is unknown: there is nothing to derive it from, and `risk` says so.

**Risk**: None when the program's admission (`memory_problem`) finds the budgets cover the
estimate; else the first budget it refuses, with its field, Reason and message naming the numbers
(insufficient) or the missing fact (unknown). A risk is exactly what the program refuses without
`allowMemoryRisk: true`, so the form records that flag when, and only when, its warning button
is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from api.models import CPU_OFFLOADING_ENGINES, CPU_OFFLOADING_TARGET
from api.validation import SpecError
from api.vocabulary import Reason
from catalogs import ArtifactEntry, Catalogs, EngineEntry
from planning.hardware.memory import DISCRETE, GpuAllocationMode, HostMemory
from planning.models.memory import MemoryBudget, MemoryInputs, cache_mi, estimate_memory, memory_problem, round_up
from services.dashboard.offers import (
    ALLOCATABLE_RESOURCES,
    COMPATIBLE_NODE_COUNT,
    COMPATIBLE_NODES,
    CPU,
    HARDWARE_OPERATORS,
    RESOURCE_NAMES,
)

MI = 1024 * 1024
VLLM = "VLLM"
OLLAMA = "OLlama"
KV_CACHE_FALLBACK_BYTES = 512 * MI
"""The CPU vLLM KV cache the program runs when an activation gives no kvCacheMemoryBytes
(`planning/models/resolve.py` `KV_CACHE_FALLBACK_BYTES`, which this module may not import; a
test holds the two equal)."""

RiskKind = Literal["insufficient", "unknown"]
_UNKNOWN_REASONS = frozenset({Reason.MEMORY_ESTIMATE_UNKNOWN, Reason.MEMORY_BUDGET_UNKNOWN})


@dataclass(frozen=True)
class LocalModelRequest:
    """What the add-a-local-model form submits. Derived values (kvCacheMemoryBytes,
    cpuOffloadMi) are not fields: the client never supplies them."""

    preset: str
    engine: str
    compute_target: str
    artifact: str | None = None
    """None: the variant's defaultArtifact."""
    context_window: int | None = None
    max_num_seqs: int | None = None
    kv_cache_type: str | None = None
    """None: the engine's default (auto for vLLM, f16 for Ollama)."""
    memory_required_mi: int | None = None
    """spec.local.memoryRequiredMi: the RAM budget."""
    vram_mi: int | None = None
    """spec.local.vramMi: the GPU memory budget."""
    cpu_offloading: bool = False


@dataclass(frozen=True)
class MemoryRisk:
    """Why the budgets do not cover the estimate: the program refuses this without allowMemoryRisk."""

    field: str
    """The wire path of the budget: spec.local.memoryRequiredMi or spec.local.vramMi."""
    kind: RiskKind
    reason: Reason
    message: str
    """`<field>: <rule>`, the rule naming the numbers, as the program's status would say it."""


@dataclass(frozen=True)
class LocalModelEstimate:
    """The estimator's figures in MiB (None: unknown, never 0), the derived fields, the risk."""

    ram_minimum_mi: int
    """A lower bound when a part is unknown."""
    ram_recommended_mi: int
    ram_maximum_mi: int | None
    gpu_minimum_mi: int | None
    gpu_recommended_mi: int | None
    fits_vram: bool | None
    weights_mi: int | None
    cache_mi: int | None
    runtime_mi: int
    vram_mi: int | None
    """The GPU memory budget the figures are judged against: the request's, else the artifact's."""
    kv_cache_memory_bytes: int | None
    cpu_offload_mi: int | None
    risk: MemoryRisk | None

    @property
    def allow_memory_risk(self) -> bool:
        """What the form records as spec.local.allowMemoryRisk when its Add button is used."""
        return self.risk is not None

    def to_wire(self) -> dict[str, object]:
        """The camelCase JSON object of the API; unknown values are null, never 0. Pure."""
        risk = None
        if self.risk is not None:
            risk = {
                "field": self.risk.field,
                "kind": self.risk.kind,
                "reason": str(self.risk.reason),
                "message": self.risk.message,
            }
        return {
            "ramMinimumMi": self.ram_minimum_mi,
            "ramRecommendedMi": self.ram_recommended_mi,
            "ramMaximumMi": self.ram_maximum_mi,
            "gpuMinimumMi": self.gpu_minimum_mi,
            "gpuRecommendedMi": self.gpu_recommended_mi,
            "fitsVram": self.fits_vram,
            "weightsMi": self.weights_mi,
            "cacheMi": self.cache_mi,
            "runtimeMi": self.runtime_mi,
            "vramMi": self.vram_mi,
            "kvCacheMemoryBytes": self.kv_cache_memory_bytes,
            "cpuOffloadMi": self.cpu_offload_mi,
            "allowMemoryRisk": self.allow_memory_risk,
            "risk": risk,
        }


@dataclass(frozen=True)
class _Selection:
    engine: EngineEntry
    artifact: ArtifactEntry
    kv_cache_type: str | None
    on_cpu: bool


def estimate_local_model(
    request: LocalModelRequest, catalogs: Catalogs, *, host: HostMemory = DISCRETE
) -> LocalModelEstimate:
    """The figures, derived fields and risk of `request` (module docstring: the rules). `host`:
    the memory layout of the node the model would run on (`host_memory_for_target`). Raises
    SpecError naming the field when the catalogs cannot serve the request. Pure."""
    selected = _select(request, catalogs)
    engine, artifact, on_cpu = selected.engine, selected.artifact, selected.on_cpu
    host = DISCRETE if on_cpu else host
    offloading = request.cpu_offloading
    kv_bytes = _kv_cache_memory_bytes(request, selected)
    memory = (
        round_up(request.memory_required_mi or artifact.memory_required_mi or engine.default_memory_mi)
        if on_cpu
        else None
    )
    vram = None if on_cpu else (request.vram_mi or artifact.vram_mi)
    estimate = estimate_memory(
        MemoryInputs(
            weights_mi=artifact.weights_mi,
            kv_cache_mi_per_1k_tokens=artifact.kv_cache_mi_per_1k_tokens,
            runtime_mi=engine.runtime_memory_mi,
            kv_cache_type=selected.kv_cache_type,
            on_cpu=on_cpu,
            kv_cache_memory_bytes=(kv_bytes or KV_CACHE_FALLBACK_BYTES) if on_cpu and engine.name == VLLM else None,
            context_window=request.context_window,
            max_num_seqs=request.max_num_seqs,
            cpu_offloading=offloading,
            vram_mi=vram,
            host=host,
        )
    )
    unified = host.unified and not on_cpu
    if unified:
        memory = round_up(request.memory_required_mi or estimate.ram_recommended_mi)
    problem = memory_problem(
        estimate,
        MemoryBudget(
            ram_mi=request.memory_required_mi if offloading or unified else memory,
            vram_mi=vram,
            covers_host=on_cpu or offloading or host.unified,
            cpu_offloading=offloading,
            request_mi=memory,
        ),
    )
    offload = None
    if offloading:
        offload = 0 if engine.name == OLLAMA else _weights_beyond_vram(estimate.weights_mi, estimate.cache_mi, vram)
    return LocalModelEstimate(
        ram_minimum_mi=estimate.ram_minimum_mi,
        ram_recommended_mi=estimate.ram_recommended_mi,
        ram_maximum_mi=estimate.ram_maximum_mi or None,
        gpu_minimum_mi=estimate.gpu_minimum_mi,
        gpu_recommended_mi=estimate.gpu_recommended_mi,
        fits_vram=estimate.fits_vram,
        weights_mi=estimate.weights_mi,
        cache_mi=estimate.cache_mi,
        runtime_mi=estimate.runtime_mi,
        vram_mi=vram,
        kv_cache_memory_bytes=kv_bytes,
        cpu_offload_mi=offload,
        risk=None if problem is None else _risk(problem.field, problem.reason, str(problem)),
    )


def _risk(field: str, reason: Reason, message: str) -> MemoryRisk:
    return MemoryRisk(
        field=field, kind="unknown" if reason in _UNKNOWN_REASONS else "insufficient", reason=reason, message=message
    )


def _kv_cache_memory_bytes(request: LocalModelRequest, selected: _Selection) -> int | None:
    """kvCacheMemoryBytes of a CPU vLLM model, derived from the catalog (module docstring). Pure."""
    if not selected.on_cpu or selected.engine.name != VLLM:
        return None
    mi = cache_mi(
        MemoryInputs(
            weights_mi=selected.artifact.weights_mi,
            kv_cache_mi_per_1k_tokens=selected.artifact.kv_cache_mi_per_1k_tokens,
            runtime_mi=selected.engine.runtime_memory_mi,
            kv_cache_type=selected.kv_cache_type,
            on_cpu=True,
            context_window=request.context_window,
            max_num_seqs=request.max_num_seqs,
        )
    )
    return round_up(mi) * MI if mi is not None else None


def _weights_beyond_vram(weights: int | None, cache: int | None, vram: int | None) -> int | None:
    """The vLLM weight-offload budget: the weights the VRAM budget cannot hold beside the cache. Pure."""
    if weights is None or cache is None or vram is None:
        return None
    return min(weights, max(0, weights + cache - vram))


def _select(request: LocalModelRequest, catalogs: Catalogs) -> _Selection:
    """The engine, artifact and cache precision of `request`; SpecError naming the field when
    the catalogs do not offer it. Pure."""
    engine = catalogs.engines.get(request.engine)
    if engine is None:
        raise SpecError("spec.local.engine", f"'{request.engine}' is not in the engine catalog")
    if not engine.supports(request.compute_target):
        raise SpecError(
            "spec.local.computeTarget",
            f"engine {engine.name} does not run on {request.compute_target} (it runs on {', '.join(engine.compute_targets)})",
        )
    preset = catalogs.presets.get(request.preset)
    if preset is None:
        raise SpecError("spec.local.preset", f"'{request.preset}' is not in the preset catalog")
    variant = preset.variant(engine.name, request.compute_target)
    if variant is None:
        offered = ", ".join(f"{v.engine}/{v.compute_target}" for v in preset.variants)
        raise SpecError(
            "spec.local.computeTarget",
            f"preset {preset.name} has no variant for engine {engine.name} on {request.compute_target} (it has {offered})",
        )
    artifact = variant.artifact(request.artifact)
    if artifact is None:
        known = ", ".join(a.id for a in variant.artifacts)
        raise SpecError(
            "spec.local.artifact",
            f"'{request.artifact}' is not an artifact of preset {preset.name} for {engine.name} on {request.compute_target} (known: {known})",
        )
    kv_cache_type = request.kv_cache_type or engine.default_kv_cache_type
    allowed = engine.allowed_kv_cache_types(request.compute_target)
    if kv_cache_type is not None and kv_cache_type not in allowed:
        raise SpecError(
            "spec.local.kvCacheType",
            f"'{kv_cache_type}' is not supported by {engine.name} on {request.compute_target} (supported: {', '.join(allowed) or 'none'})",
        )
    if request.cpu_offloading and (
        request.compute_target != CPU_OFFLOADING_TARGET or engine.name not in CPU_OFFLOADING_ENGINES
    ):
        raise SpecError(
            "spec.local.cpuOffloading",
            f"cpuOffloading true requires computeTarget {CPU_OFFLOADING_TARGET} and engine {' or '.join(CPU_OFFLOADING_ENGINES)}",
        )
    return _Selection(
        engine=engine, artifact=artifact, kv_cache_type=kv_cache_type, on_cpu=request.compute_target == CPU
    )


def host_memory_for_target(
    appliance_status: Mapping[str, object] | None, compute_target: str, catalogs: Catalogs
) -> HostMemory:
    """The memory layout a model of `compute_target` would run on, read from Appliance/local.status
    as the API returns it. The program's rule (`planning.hardware.memory.pool_for_target`): a
    unified pool only when exactly one node publishes the target's resource and that node is
    unified; else discrete, since the model may land on any of several nodes. In the status's
    words: the target's hardware operator publishes one of its resources (allocatableResources
    above 0, resourceNames) on exactly one compatible node, and that node's listed devices carry
    memoryArchitecture unified, whose pool facts (sharedPoolId, gpuAllocationMode,
    physicalMemoryMi, gpuAccessibleMi) are the pool's. Anything less is DISCRETE. Pure."""
    target = catalogs.compute_targets.get(compute_target)
    operators = appliance_status.get(HARDWARE_OPERATORS) if appliance_status is not None else None
    if target is None or target.module is None or not isinstance(operators, Mapping):
        return DISCRETE
    entry = operators.get(target.module)
    if not isinstance(entry, Mapping) or not _publishes(entry, target.resource_names):
        return DISCRETE
    nodes = entry.get(COMPATIBLE_NODES)
    if _positive(entry.get(COMPATIBLE_NODE_COUNT)) != 1 or not isinstance(nodes, list) or len(nodes) != 1:
        return DISCRETE
    devices = entry.get("devices")
    for device in devices if isinstance(devices, list) else ():
        if (
            isinstance(device, Mapping)
            and device.get("node") == nodes[0]
            and device.get("memoryArchitecture") == "unified"
        ):
            return _pool(device)
    return DISCRETE


def _publishes(entry: Mapping[object, object], resource_names: tuple[str, ...]) -> bool:
    allocatable, names = entry.get(ALLOCATABLE_RESOURCES), entry.get(RESOURCE_NAMES)
    if (
        not isinstance(allocatable, int)
        or isinstance(allocatable, bool)
        or allocatable <= 0
        or not isinstance(names, list)
    ):
        return False
    return any(name in resource_names for name in names)


def _pool(device: Mapping[object, object]) -> HostMemory:
    mode = device.get("gpuAllocationMode")
    pool_id = device.get("sharedPoolId")
    return HostMemory(
        architecture="unified",
        shared_pool_id=pool_id if isinstance(pool_id, str) else None,
        gpu_allocation_mode=_allocation_mode(mode),
        physical_memory_mi=_positive(device.get("physicalMemoryMi")),
        gpu_accessible_mi=_positive(device.get("gpuAccessibleMi")),
    )


def _allocation_mode(value: object) -> GpuAllocationMode:
    """The pool's allocation mode; anything else reads as unknown, as the program reads it. Pure."""
    modes: tuple[GpuAllocationMode, ...] = get_args(GpuAllocationMode)
    return next((mode for mode in modes if mode == value), "unknown")


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
