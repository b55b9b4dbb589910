"""Fields the API accepts that a KubeAI runtime of this combination does not apply.

Rule: nothing is dropped silently. Each accepted field that has no effect for the activation's
engine, target and offloading choice is named in its status message (rule 7 of the models
issue), so what the status says is what runs. Pure.
"""

from __future__ import annotations

from api.models import LocalModelSpec


def ignored_fields_note(local: LocalModelSpec) -> str:
    """` <field> ...; not applied.` for every accepted field without effect here; "" when none. Pure."""
    notes: list[str] = []
    on_cpu = local.compute_target == "cpu"
    if local.kv_cache_memory_bytes is not None and not (on_cpu and local.engine == "VLLM"):
        notes.append("kvCacheMemoryBytes applies to vLLM on CPU only")
    if on_cpu and (local.vram is not None or local.vram_mi is not None):
        notes.append("vram/vramMi apply to GPU targets only")
    if local.cpu_offload_mi is not None and local.cpu_offloading is not True:
        notes.append("cpuOffloadMi applies only with cpuOffloading: true")
    if local.ollama_gpu_layers is not None and local.cpu_offloading is not True:
        notes.append("ollamaGpuLayers is deprecated")
    return "".join(f" spec.local.{note}; not applied." for note in notes)
