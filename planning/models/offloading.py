"""CPU offloading on one NVIDIA GPU: the offloading profile and the engine controls.

Rules:
- `spec.local.cpuOffloading: true` (one NVIDIA vLLM or Ollama replica, validated by the API)
  runs on a count-one offloading profile in the offloading store
  `flux-system/magicstick-offloading-profiles` (`values.json`), which the KubeAI HelmRelease
  reads through an optional `valuesFrom`. The profile clones the target's engine profile
  (ENGINE_PROFILES): image, tolerations and the single GPU stay, the CPU request and limit are
  the resolved CPU policy, and host RAM request = limit = `memoryRequiredMi`, the whole budget.
  A GPU profile is never multiplied to get more RAM; no Pod is patched; the Git-owned inline
  values are never changed. Its name is a hash of its content: equal budgets share it;
- vLLM gets `--cpu-offload-gb=<cpuOffloadMi in GiB>`, rounded up to a hundredth of a GiB
  (rounding down would leave weights planned for the host on the GPU);
- Ollama is GPU-first auto-fit: no layer count is set, and `ollamaGpuLayers` is ignored (the
  status message says so when it is set);
- explicit `false` asks for no offloading: an ordinary GPU profile, and vLLM gets
  `--cpu-offload-gb=0`; omission keeps the legacy runtime (no argument at all);
- a new profile makes Helm reconcile KubeAI before a Model can use it: the Model is declared
  only once the observed store holds the profile (WaitingForOffloadingProfile until then; a
  Model that already runs is kept as it is meanwhile).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from api.models import LocalModelSpec
from planning.frozen import freeze
from planning.models.kubeai import (
    ENGINE_PROFILES,
    CpuProfile,
    content_name,
    observed_store_profiles,
    stored_profile,
    with_cpu,
)
from planning.models.resolve import ResolvedLocalModel
from planning.snapshot import KubeAIModel, Snapshot

OFFLOADING_NAMESPACE = "flux-system"
OFFLOADING_CONFIG_MAP = "magicstick-offloading-profiles"
OFFLOADING_KEY = "values.json"
OFFLOADING_PROFILE_PREFIX = "magicstick-offload-"
MAX_OFFLOADING_PROFILES = 16
"""Bound of the offloading store: at most this many profiles are the program's own."""
MI_PER_GIB = 1024


@dataclass(frozen=True)
class Offloading:
    """What one activation's cpuOffloading asks for."""

    requested: bool | None
    """The spec's value: None when omitted (legacy runtime)."""
    profile: CpuProfile | None = None
    """The offloading profile, when offloading is on."""
    args: tuple[str, ...] = ()
    note: str = ""
    """A sentence the status message ends with, or ''."""

    @property
    def enabled(self) -> bool:
        return self.profile is not None


def cpu_offload_gib(mi: int) -> str:
    """`mi` MiB in GiB, rounded up to a hundredth, without trailing zeros. Pure."""
    hundredths = math.ceil(mi * 100 / MI_PER_GIB)
    whole, rest = divmod(hundredths, 100)
    return str(whole) if rest == 0 else f"{whole}.{rest:02d}".rstrip("0")


def offloading_profile(resolved: ResolvedLocalModel, engine_profile: str, budget_mi: int) -> CpuProfile | None:
    """The clone of `engine_profile` with the CPU policy and host RAM request = limit = the
    budget; None for an engine profile ENGINE_PROFILES does not know. Pure."""
    body = ENGINE_PROFILES.get(engine_profile)
    if body is None:
        return None
    clone = with_cpu(
        body, request_millicores=resolved.cpu_request_millicores, limit_millicores=resolved.cpu_limit_millicores
    )
    clone["requests"]["memory"] = f"{budget_mi}Mi"
    clone.setdefault("limits", {})["memory"] = f"{budget_mi}Mi"
    return CpuProfile(name=content_name(OFFLOADING_PROFILE_PREFIX, clone), body=freeze(clone))


def decide_offloading(local: LocalModelSpec, resolved: ResolvedLocalModel, engine_profile: str | None) -> Offloading:
    """What `local.cpuOffloading` asks for once the engine profile is known. Pure."""
    requested = local.cpu_offloading
    vllm = resolved.engine == "VLLM"
    if requested is None:
        return Offloading(requested=None)
    if not requested:
        return Offloading(requested=False, args=("--cpu-offload-gb=0",) if vllm else ())
    profile = offloading_profile(resolved, engine_profile, local.memory_required_mi or 0) if engine_profile else None
    if vllm:
        return Offloading(
            requested=True, profile=profile, args=(f"--cpu-offload-gb={cpu_offload_gib(resolved.cpu_offload_mi or 0)}",)
        )
    note = (
        " ollamaGpuLayers is ignored: Ollama offloads by GPU-first auto-fit."
        if local.ollama_gpu_layers is not None
        else ""
    )
    return Offloading(requested=True, profile=profile, note=note)


def observed_offloading_profiles(snapshot: Snapshot) -> frozenset[str]:
    """The profile names the offloading store holds, as observed. Pure."""
    return frozenset(
        observed_store_profiles(snapshot, namespace=OFFLOADING_NAMESPACE, config_map=OFFLOADING_CONFIG_MAP)
    )


def applied_offloading_profile(observed: KubeAIModel, *, snapshot: Snapshot) -> CpuProfile | None:
    """The offloading profile the observed Model runs on, as the store holds it, or None. Pure."""
    return stored_profile(observed, snapshot=snapshot, namespace=OFFLOADING_NAMESPACE, config_map=OFFLOADING_CONFIG_MAP)
