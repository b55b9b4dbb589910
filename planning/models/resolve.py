"""Resolve a local ModelActivation against the catalogs: what exactly will run, or why not.

Everything that reaches the runtime comes from the catalogs or from a validated field of the
activation, never from arbitrary runtime flags: the preset's variant is chosen by engine and
compute target, the artifact (defaultArtifact when omitted) gives the URL, precision,
quantization and memory defaults; the engine gives the KV-cache types and CPU defaults; the
compute target gives the vision-attention mapping. An unsupported combination fails here,
before any KubeAI Model exists, naming the field and the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from api.models import LocalModelSpec
from api.validation import SpecError
from catalogs import ArtifactEntry, Catalogs, EngineEntry
from planning.hardware.memory import DISCRETE, HostMemory
from planning.models.memory import (
    MemoryBudget,
    MemoryEstimate,
    MemoryInputs,
    admit_memory,
    estimate_memory,
    vllm_cpu_kv_cache_gib,
)
from planning.models.model_url import ModelUrlError, ollama_model, parse_model_url
from planning.requirements import check_cpu_resources

MEMORY_UNIT_MI = 16
"""KubeAI resource-profile multiplier unit for CPU model RAM."""
KV_CACHE_FALLBACK_BYTES = 512 * 1024 * 1024
"""CPU vLLM KV-cache size when the activation gives none (direct and legacy resources)."""

_FEATURES = {
    "chat": "TextGeneration",
    "completion": "TextGeneration",
    "embedding": "TextEmbedding",
    "rerank": "Reranking",
    "transcription": "SpeechToText",
}


@dataclass(frozen=True)
class ResolvedLocalModel:
    preset: str | None
    artifact: str | None
    url: str
    precision: str | None
    quantization: str | None
    feature: str
    engine: str
    compute_target: str
    kv_cache_type: str | None
    """None for an engine without KV-cache choices (FreeToken)."""
    memory_required_mi: int | None
    kv_cache_memory_bytes: int | None
    cpu_request_millicores: int
    cpu_limit_millicores: int
    vision_attention: str | None
    vram_mi: int | None
    replicas: int
    context_window: int | None
    max_num_seqs: int | None
    memory_estimate: MemoryEstimate | None = None
    """The estimator object (planning.models.memory); status.memoryEstimate carries it."""
    cpu_offload_mi: int | None = None
    """The vLLM weight-offload budget with cpuOffloading, recomputed from the estimate (a
    client's value only when the estimate is unknown); 0 for Ollama; None without offloading."""

    @property
    def on_cpu(self) -> bool:
        return self.compute_target == "cpu"

    @property
    def effective_kv_cache_gib(self) -> int | None:
        """The KV cache CPU vLLM holds for kv_cache_memory_bytes (VLLM_CPU_KVCACHE_SPACE); None elsewhere."""
        if self.kv_cache_memory_bytes is None:
            return None
        return vllm_cpu_kv_cache_gib(self.kv_cache_memory_bytes)

    @property
    def effective_kv_cache_memory_bytes(self) -> int | None:
        """effective_kv_cache_gib in bytes: what status.effectiveKvCacheMemoryBytes reports."""
        gib = self.effective_kv_cache_gib
        return None if gib is None else gib * 1024**3

    def status_fields(self, *, model_ref: str, catalog_id: str) -> dict[str, Any]:
        """The ModelActivation status fields of what the activation resolves to, every runtime
        alike: where it runs, its engine, CPU policy, preset and memory estimate. Pure."""
        fields: dict[str, Any] = {
            "modelRef": model_ref,
            "catalogId": catalog_id,
            "computeTarget": self.compute_target,
            "engine": self.engine,
            "cpuResources": {
                "requestMillicores": self.cpu_request_millicores,
                "limitMillicores": self.cpu_limit_millicores,
            },
        }
        if self.preset is not None:
            fields["preset"] = self.preset
            fields["artifact"] = self.artifact
        return fields | self.memory_status()

    def memory_status(self) -> dict[str, Any]:
        """ModelActivation status fields of the estimate: memoryEstimate and, on a unified pool,
        memoryArchitecture, sharedPoolId and gpuAllocationMode. Pure."""
        if self.memory_estimate is None:
            return {}
        host = self.memory_estimate.host.to_status()
        pool: dict[str, object] = {
            key: host[key] for key in ("memoryArchitecture", "sharedPoolId", "gpuAllocationMode") if key in host
        }
        return {"memoryEstimate": self.memory_estimate.to_status(), **pool}


def round_up_memory(memory_mi: int) -> int:
    """RAM in MiB rounded up to whole 16 MiB resource-profile units."""
    return -(-memory_mi // MEMORY_UNIT_MI) * MEMORY_UNIT_MI


def resolve_local(local: LocalModelSpec, catalogs: Catalogs, *, host: HostMemory = DISCRETE) -> ResolvedLocalModel:
    """Raises SpecError naming the field and the rule when the catalogs cannot serve `local`.
    The result carries the memory estimate, not yet admitted (resolve_admitted). `host`: the
    memory layout of the node the model runs on. Pure."""
    resolved, _estimate, _budget = _with_memory(_resolve(local, catalogs), local, catalogs, host)
    return resolved


def resolve_admitted(local: LocalModelSpec, catalogs: Catalogs, *, host: HostMemory = DISCRETE) -> ResolvedLocalModel:
    """resolve_local, then memory admission: raises MemoryRejected (a SpecError with a
    memory Reason) when a budget is insufficient or unknown and allowMemoryRisk is not true. Pure."""
    resolved, estimate, budget = _with_memory(_resolve(local, catalogs), local, catalogs, host)
    admit_memory(estimate, budget, allow_risk=bool(local.allow_memory_risk))
    return resolved


def _resolve(local: LocalModelSpec, catalogs: Catalogs) -> ResolvedLocalModel:
    engine = _engine(local, catalogs)
    url, feature, entry = _source(local, engine, catalogs)
    precision, quantization = (entry.precision, entry.quantization) if entry else (None, None)
    artifact_memory, artifact_vram, artifact_id = (
        (entry.memory_required_mi, entry.vram_mi, entry.id) if entry else (None, None, None)
    )
    kv_cache_type = local.kv_cache_type or engine.default_kv_cache_type
    allowed = engine.allowed_kv_cache_types(local.compute_target)
    if kv_cache_type is not None and kv_cache_type not in allowed:
        raise SpecError(
            "spec.local.kvCacheType",
            f"'{kv_cache_type}' is not supported by {engine.name} on {local.compute_target} (supported: {', '.join(allowed) or 'none'})",
        )
    check_cpu_resources(local.cpu_resources, engine)
    cpu = local.cpu_resources
    request = (
        cpu.request_millicores if cpu and cpu.request_millicores is not None else engine.cpu_defaults.request_millicores
    )
    limit = cpu.limit_millicores if cpu and cpu.limit_millicores is not None else engine.cpu_defaults.limit_millicores
    on_cpu = local.compute_target == "cpu"
    memory = local.memory_required_mi or artifact_memory or engine.default_memory_mi
    return ResolvedLocalModel(
        preset=local.preset,
        artifact=artifact_id,
        url=url,
        precision=precision,
        quantization=quantization,
        feature=feature,
        engine=engine.name,
        compute_target=local.compute_target,
        kv_cache_type=kv_cache_type,
        memory_required_mi=round_up_memory(memory) if on_cpu else None,
        kv_cache_memory_bytes=(local.kv_cache_memory_bytes or KV_CACHE_FALLBACK_BYTES)
        if on_cpu and engine.name == "VLLM"
        else None,
        cpu_request_millicores=request,
        cpu_limit_millicores=limit,
        vision_attention=_vision_attention(local, catalogs),
        vram_mi=None if on_cpu else (local.vram_mi or _quantity_mi(local.vram) or artifact_vram),
        replicas=local.replicas or 1,
        context_window=local.context_window,
        max_num_seqs=local.max_num_seqs,
    )


def _with_memory(
    resolved: ResolvedLocalModel, local: LocalModelSpec, catalogs: Catalogs, host: HostMemory
) -> tuple[ResolvedLocalModel, MemoryEstimate, MemoryBudget]:
    """`resolved` with its memory estimate (on a unified pool, one RAM request) and the
    budgets admission checks. A CPU model never sits on a GPU pool. Pure."""
    host = DISCRETE if resolved.on_cpu else host
    engine = catalogs.engines.get(resolved.engine)
    entry = _artifact_entry(local, catalogs)
    offloading = bool(local.cpu_offloading)
    estimate = estimate_memory(
        MemoryInputs(
            weights_mi=entry.weights_mi if entry else None,
            kv_cache_mi_per_1k_tokens=entry.kv_cache_mi_per_1k_tokens if entry else None,
            runtime_mi=engine.runtime_memory_mi if engine else 0,
            kv_cache_type=resolved.kv_cache_type,
            on_cpu=resolved.on_cpu,
            kv_cache_memory_bytes=resolved.kv_cache_memory_bytes,
            context_window=resolved.context_window,
            max_num_seqs=resolved.max_num_seqs,
            cpu_offloading=offloading,
            vram_mi=resolved.vram_mi,
            host=host,
        )
    )
    memory = resolved.memory_required_mi
    if host.unified and not resolved.on_cpu:
        memory = round_up_memory(local.memory_required_mi or estimate.ram_recommended_mi)
    budget = MemoryBudget(
        ram_mi=local.memory_required_mi if offloading or (host.unified and not resolved.on_cpu) else memory,
        vram_mi=resolved.vram_mi,
        covers_host=resolved.on_cpu or offloading or host.unified,
        cpu_offloading=offloading,
        vram_field="spec.local.vram" if local.vram_mi is None and local.vram else "spec.local.vramMi",
        request_mi=memory,
    )
    offload = _offload(resolved, local) if offloading else None
    return (
        replace(resolved, memory_required_mi=memory, memory_estimate=estimate, cpu_offload_mi=offload),
        estimate,
        budget,
    )


def _offload(resolved: ResolvedLocalModel, local: LocalModelSpec) -> int:
    """The weight-offload budget with cpuOffloading: 0 for Ollama (GPU-first auto-fit); for
    vLLM the administrator's `cpuOffloadMi`, which the API requires of a CR with offloading
    (only the dashboard's API derives it, and the program is not that API). Pure."""
    return 0 if resolved.engine == "OLlama" else (local.cpu_offload_mi or 0)


def _artifact_entry(local: LocalModelSpec, catalogs: Catalogs) -> ArtifactEntry | None:
    """The catalog artifact `local` runs, or None for a url model (already resolved). Pure."""
    preset = catalogs.presets.get(local.preset) if local.preset else None
    variant = preset.variant(local.engine, local.compute_target) if preset else None
    return variant.artifact(local.artifact) if variant else None


def _engine(local: LocalModelSpec, catalogs: Catalogs) -> EngineEntry:
    engine = catalogs.engines.get(local.engine)
    if engine is None:
        raise SpecError("spec.local.engine", f"'{local.engine}' is not in the engine catalog")
    if not engine.supports(local.compute_target):
        raise SpecError(
            "spec.local.computeTarget",
            f"engine {engine.name} does not run on {local.compute_target} (it runs on {', '.join(engine.compute_targets)})",
        )
    return engine


def _source(local: LocalModelSpec, engine: EngineEntry, catalogs: Catalogs) -> tuple[str, str, ArtifactEntry | None]:
    if local.preset is None:
        if local.url is None:
            raise SpecError("spec.local.preset", "a local model needs a preset or a url")
        if not any(local.url.startswith(f"{scheme}://") for scheme in engine.url_schemes):
            schemes = " or ".join(f"{scheme}://" for scheme in engine.url_schemes)
            raise SpecError("spec.local.url", f"engine {engine.name} loads {schemes} references, not '{local.url}'")
        try:
            parse_model_url(local.url)
            if engine.name == "OLlama":
                ollama_model(local.url)
        except ModelUrlError as error:
            raise SpecError("spec.local.url", str(error)) from error
        return local.url, _FEATURES["chat"], None
    if local.url is not None:
        raise SpecError("spec.local.url", "set either preset or url, not both: a preset's artifact decides the url")
    preset = catalogs.presets.get(local.preset)
    if preset is None:
        raise SpecError("spec.local.preset", f"'{local.preset}' is not in the preset catalog")
    variant = preset.variant(engine.name, local.compute_target)
    if variant is None:
        offered = ", ".join(f"{v.engine}/{v.compute_target}" for v in preset.variants)
        raise SpecError(
            "spec.local.computeTarget",
            f"preset {preset.name} has no variant for engine {engine.name} on {local.compute_target} (it has {offered})",
        )
    artifact = variant.artifact(local.artifact)
    if artifact is None:
        known = ", ".join(a.id for a in variant.artifacts)
        raise SpecError(
            "spec.local.artifact",
            f"'{local.artifact}' is not an artifact of preset {preset.name} for {engine.name} on {local.compute_target} (known: {known})",
        )
    return artifact.url, _FEATURES[preset.model_type], artifact


def _vision_attention(local: LocalModelSpec, catalogs: Catalogs) -> str | None:
    if local.vllm is None:
        return None
    value = local.vllm.vision_attention
    target = catalogs.compute_targets.get(local.compute_target)
    choices = (target.vision_attention or {}) if target is not None else {}
    if value not in choices:
        where = ", ".join(sorted(choices)) or "none on this target"
        raise SpecError(
            "spec.local.vllm.visionAttention",
            f"'{value}' is not available on computeTarget {local.compute_target} (choices: {where})",
        )
    mapping = choices[value]
    older = target.engine_lacks(mapping, engine=local.engine) if target is not None else None
    if older is not None:
        raise SpecError(
            "spec.local.vllm.visionAttention",
            f"'{value}' passes {' '.join(mapping.args)}, which vLLM {older} (the {local.compute_target} image of "
            f"KubeAI's release) does not accept: it needs vLLM {mapping.minimum_engine_version} or newer. Choose "
            f"auto, or run a newer image (modelServers.VLLM.images.{local.compute_target} in "
            f"magic-cluster/apps/ai/kubeai/helmrelease.yaml, and its release in engineVersions of "
            f"catalogs/compute-targets.yaml)",
        )
    return value


_BINARY_UNITS = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}


def _quantity_mi(quantity: str | None) -> int | None:
    if not quantity:
        return None
    for suffix, factor in _BINARY_UNITS.items():
        if quantity.endswith(suffix):
            return int(float(quantity[: -len(suffix)]) * factor)
    return int(int(quantity) / (1024 * 1024))
