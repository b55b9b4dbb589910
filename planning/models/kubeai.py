"""The KubeAI Model (kubeai.org/v1) generated for one local activation, and its CPU profile.

Engine settings map as follows (docs/engine-arguments.md: where each engine reads each one):
- vLLM: `--kv-cache-dtype=<type>` (fp8 adds `--calculate-kv-scales`), on CPU the KV-cache
  size as VLLM_CPU_KVCACHE_SPACE in whole GiB (the CPU backend reads nothing else),
  `--max-model-len` and `--max-num-seqs` when set, and
  the vision-attention arguments and environment of the compute-target catalog when the
  activation chooses a value (`auto` sets none, so KubeAI's own choice applies; an omitted
  object leaves the arguments the Model already has);
- Ollama: OLLAMA_KV_CACHE_TYPE with OLLAMA_FLASH_ATTENTION=1, OLLAMA_CONTEXT_LENGTH and
  OLLAMA_NUM_PARALLEL when set.

CPU models run on a count-one profile materialised in the runtime-profile store: RAM is the
resolved memoryRequiredMi (whole 16 MiB units), CPU the resolved request and limit. Its name
is a hash of its content, so identical profiles are shared.

Accelerator models run on a count-one clone of their target's engine profile (ENGINE_PROFILES,
the catalog's resource profile for the published resource) in the same store: only the CPU
request and limit change, so what status.cpuResources reports is what runs. GPU resources,
image and tolerations stay as the engine profile has them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api import peer_kinds
from api.model_runtimes import MODEL_ACTIVATION_LABEL, activation_label_value
from catalogs import Catalogs
from planning.frozen import freeze, freeze_map, thaw
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE
from planning.models.resolve import ResolvedLocalModel
from planning.names import KUBEAI_MODEL_NAME_LIMIT, fit
from planning.objects import DesiredObject
from planning.snapshot import KubeAIModel, Snapshot

MODEL_API_VERSION = peer_kinds.KUBEAI_MODEL.api_version
ACTIVATION_LABEL = MODEL_ACTIVATION_LABEL
ACTIVATION_ANNOTATION = "appliance.magicstick.dev/activation"
VISION_ANNOTATION = "appliance.magicstick.dev/vision-attention"
MAX_CPU_PROFILES = 64
"""Bound of the runtime-profile store: at most this many profiles are the program's own."""
PROFILE_STORE_NAMESPACE = "flux-system"
PROFILE_STORE_CONFIG_MAP = "magicstick-runtime-profiles"
PROFILE_STORE_KEY = "values.json"
"""The runtime-profile store: a Helm values document `{"resourceProfiles": {<name>: <profile>}}`."""
CPU_PROFILE_PREFIX = "magicstick-cpu-"
OWNED_PROFILE_PREFIX = "magicstick-"
MODEL_SERVER_PORT = 8000
"""KubeAI's model server containers (vLLM and Ollama alike) listen on port 8000."""
CACHED_MODEL_IMMUTABLE = ("spec.url", "spec.cacheProfile")
"""What KubeAI's Model schema refuses to change once a Model has a cache profile."""
VLLM_CPU_KV_CACHE_VARIABLE = "VLLM_CPU_KVCACHE_SPACE"
SCALE_DOWN_DELAY_SECONDS = 30
TARGET_REQUESTS = 100


GPU_TOLERATIONS: Mapping[str, tuple[Mapping[str, str], ...]] = {
    resource: ({"key": resource, "operator": "Exists", "effect": "NoSchedule"},)
    for resource in ("nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/xe", "gpu.intel.com/i915")
}


def _engine_profile(image: str, resource: str) -> Mapping[str, Any]:
    return freeze_map(
        {
            "imageName": image,
            "requests": {resource: "1"},
            "limits": {resource: "1"},
            "tolerations": list(GPU_TOLERATIONS[resource]),
        }
    )


ENGINE_PROFILES: Mapping[str, Mapping[str, Any]] = freeze(
    {
        "magicstick-nvidia-gpu": _engine_profile("nvidia-gpu", "nvidia.com/gpu"),
        "magicstick-amd-gpu": _engine_profile("amd-gpu", "amd.com/gpu"),
        "magicstick-intel-gpu-xe": _engine_profile("intel-gpu", "gpu.intel.com/xe"),
        "magicstick-intel-gpu-i915": _engine_profile("intel-gpu", "gpu.intel.com/i915"),
    }
)
"""The engine profiles the compute-target catalog names, as the Git-owned inline values of the
KubeAI HelmRelease define them: one whole device, the vendor's image and toleration. The
program never writes these; it clones them (CPU policy, offloading)."""


@dataclass(frozen=True)
class CpuProfile:
    """A count-one KubeAI resource profile the program keeps in one of its stores.

    `name` is a hash of `body`, so identical profiles are shared. The runtime-profile store holds
    CPU models' profiles and accelerator models' CPU clones; the offloading store
    (planning/models/offloading.py) holds offloading profiles.
    """

    name: str
    body: Mapping[str, Any]


StoreProfile = CpuProfile
"""The general name of a store entry; CpuProfile is kept for existing callers."""


def content_name(prefix: str, body: Mapping[str, Any]) -> str:
    """`<prefix><10 hex digits of the body's hash>`. Pure and deterministic."""
    digest = hashlib.sha256(json.dumps(thaw(body), sort_keys=True).encode()).hexdigest()[:10]
    return f"{prefix}{digest}"


def with_cpu(body: Mapping[str, Any], *, request_millicores: int, limit_millicores: int) -> dict[str, Any]:
    """`body` with its CPU request and limit set (limit 0: none); nothing else changes. Pure."""
    clone: dict[str, Any] = thaw(body)
    requests = dict(clone.get("requests") or {})
    limits = dict(clone.get("limits") or {})
    requests["cpu"] = f"{request_millicores}m"
    limits.pop("cpu", None)
    if limit_millicores > 0:
        limits["cpu"] = f"{limit_millicores}m"
    clone["requests"] = requests
    if limits:
        clone["limits"] = limits
    else:
        clone.pop("limits", None)
    return clone


def accelerator_profile(resolved: ResolvedLocalModel, engine_profile: str) -> CpuProfile | None:
    """The count-one clone of `engine_profile` with the resolved CPU policy; None for a profile
    ENGINE_PROFILES does not know (then the Model names the engine profile itself). Pure."""
    body = ENGINE_PROFILES.get(engine_profile)
    if body is None:
        return None
    clone = with_cpu(
        body, request_millicores=resolved.cpu_request_millicores, limit_millicores=resolved.cpu_limit_millicores
    )
    return CpuProfile(name=content_name(f"{engine_profile}-", clone), body=freeze(clone))


def model_name(activation: str) -> str:
    return fit(activation, KUBEAI_MODEL_NAME_LIMIT)


def cpu_profile(resolved: ResolvedLocalModel) -> CpuProfile:
    requests: dict[str, str] = {
        "cpu": f"{resolved.cpu_request_millicores}m",
        "memory": f"{resolved.memory_required_mi}Mi",
    }
    limits: dict[str, str] = {}
    if resolved.cpu_limit_millicores > 0:
        limits["cpu"] = f"{resolved.cpu_limit_millicores}m"
    body: dict[str, Any] = {"imageName": "cpu", "requests": requests}
    if limits:
        body["limits"] = limits
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:10]
    return CpuProfile(name=f"{CPU_PROFILE_PREFIX}{resolved.engine.lower()}-{digest}", body=freeze(body))


def applied_cpu_profile(observed: KubeAIModel, *, snapshot: Snapshot) -> CpuProfile | None:
    """The profile of ours the observed Model runs on, as the runtime-profile store holds it, or
    None (not a profile of ours, or not in the store). Pure.

    A Model kept as it runs (invariant 6, deferrals) keeps its profile: without it the store
    entry would be removed and KubeAI could no longer schedule the Model.
    """
    return stored_profile(
        observed, snapshot=snapshot, namespace=PROFILE_STORE_NAMESPACE, config_map=PROFILE_STORE_CONFIG_MAP
    )


def stored_profile(observed: KubeAIModel, *, snapshot: Snapshot, namespace: str, config_map: str) -> CpuProfile | None:
    """The store entry (ConfigMap `namespace/config_map`, key values.json) the observed Model
    names, when it is one of ours (`magicstick-`, not an engine profile). Pure."""
    reference = observed.spec.get("resourceProfile")
    name = reference.partition(":")[0] if isinstance(reference, str) else ""
    if not name.startswith(OWNED_PROFILE_PREFIX) or name in ENGINE_PROFILES:
        return None
    return observed_store_profiles(snapshot, namespace=namespace, config_map=config_map).get(name)


def observed_store_profiles(snapshot: Snapshot, *, namespace: str, config_map: str) -> dict[str, CpuProfile]:
    """Every entry of one profile store as the snapshot shows it; empty when absent or malformed. Pure."""
    store = snapshot.config_map(namespace, config_map)
    text = store.data.get(PROFILE_STORE_KEY) if store is not None else None
    try:
        document = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        return {}
    profiles = document.get("resourceProfiles") if isinstance(document, dict) else None
    if not isinstance(profiles, dict):
        return {}
    return {name: CpuProfile(name=name, body=freeze(body)) for name, body in profiles.items() if isinstance(body, dict)}


def _vision_overrides(
    resolved: ResolvedLocalModel, catalogs: Catalogs
) -> tuple[list[str], dict[str, str], set[str], set[str]]:
    """(args, env) the chosen value sets, and every managed arg/env name of the target."""
    target = catalogs.compute_targets.get(resolved.compute_target)
    mappings = (target.vision_attention or {}) if target is not None else {}
    managed_args = {a for m in mappings.values() for a in m.args}
    managed_env = {k for m in mappings.values() for k in m.env}
    if resolved.vision_attention is None or resolved.vision_attention not in mappings:
        return [], {}, managed_args, managed_env
    chosen = mappings[resolved.vision_attention]
    return list(chosen.args), dict(chosen.env), managed_args, managed_env


def engine_settings(
    resolved: ResolvedLocalModel, catalogs: Catalogs, observed: KubeAIModel | None
) -> tuple[list[str], dict[str, str]]:
    args: list[str] = []
    env: dict[str, str] = {}
    if resolved.engine == "VLLM":
        args.append(f"--kv-cache-dtype={resolved.kv_cache_type}")
        if resolved.kv_cache_type == "fp8":
            args.append("--calculate-kv-scales")
        if resolved.effective_kv_cache_gib is not None:
            env[VLLM_CPU_KV_CACHE_VARIABLE] = str(resolved.effective_kv_cache_gib)
        if resolved.context_window is not None:
            args.append(f"--max-model-len={resolved.context_window}")
        if resolved.max_num_seqs is not None:
            args.append(f"--max-num-seqs={resolved.max_num_seqs}")
        vision_args, vision_env, managed_args, managed_env = _vision_overrides(resolved, catalogs)
        if resolved.vision_attention is None and observed is not None:
            vision_args = [a for a in observed.spec.get("args") or () if a in managed_args]
            vision_env = {k: v for k, v in (observed.spec.get("env") or {}).items() if k in managed_env}
        args += vision_args
        env.update(vision_env)
    elif resolved.engine == "OLlama":
        if resolved.kv_cache_type is not None:
            env["OLLAMA_KV_CACHE_TYPE"] = resolved.kv_cache_type
        env["OLLAMA_FLASH_ATTENTION"] = "1"
        if resolved.context_window is not None:
            env["OLLAMA_CONTEXT_LENGTH"] = str(resolved.context_window)
        if resolved.max_num_seqs is not None:
            env["OLLAMA_NUM_PARALLEL"] = str(resolved.max_num_seqs)
    return args, env


def kubeai_model(
    *,
    activation: str,
    system_namespace: str,
    namespace: str,
    resolved: ResolvedLocalModel,
    resource_profile: str,
    catalogs: Catalogs,
    observed: KubeAIModel | None,
    field_manager: str,
    extra_args: tuple[str, ...] = (),
    cache_profile: str | None = None,
) -> DesiredObject:
    """`extra_args` are appended to the engine's (the offloading arguments). With a
    `cache_profile` (planning/models/model_cache.py) KubeAI refuses a new URL, so a new URL
    replaces the Model. Pure."""
    name = model_name(activation)
    args, env = engine_settings(resolved, catalogs, observed)
    args = [*args, *extra_args]
    annotations = {ACTIVATION_ANNOTATION: f"{system_namespace}/{activation}", FIELD_MANAGER_ANNOTATION: field_manager}
    if resolved.vision_attention is not None:
        annotations[VISION_ANNOTATION] = resolved.vision_attention
    spec: dict[str, Any] = {
        "url": resolved.url,
        "engine": resolved.engine,
        "features": [resolved.feature],
        "resourceProfile": resource_profile,
        "minReplicas": resolved.replicas,
        "maxReplicas": resolved.replicas,
        "scaleDownDelaySeconds": SCALE_DOWN_DELAY_SECONDS,
        "targetRequests": TARGET_REQUESTS,
    }
    if cache_profile is not None:
        spec["cacheProfile"] = cache_profile
    if args:
        spec["args"] = args
    if env:
        spec["env"] = env
    body = {
        "apiVersion": MODEL_API_VERSION,
        "kind": "Model",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE, ACTIVATION_LABEL: activation_label_value(activation)},
            "annotations": annotations,
        },
        "spec": spec,
    }
    return DesiredObject.of(body, replace_on_changes=CACHED_MODEL_IMMUTABLE if cache_profile is not None else ())


def kept_model(observed: KubeAIModel) -> DesiredObject:
    """The observed Model declared exactly as it is (invariant 6, deferrals)."""
    metadata: dict[str, Any] = {"name": observed.meta.name, "namespace": observed.meta.namespace}
    if observed.meta.labels:
        metadata["labels"] = thaw(observed.meta.labels)
    if observed.meta.annotations:
        metadata["annotations"] = thaw(observed.meta.annotations)
    body = {"apiVersion": MODEL_API_VERSION, "kind": "Model", "metadata": metadata, "spec": thaw(observed.spec)}
    return DesiredObject.of(
        body, replace_on_changes=CACHED_MODEL_IMMUTABLE if observed.spec.get("cacheProfile") else ()
    )
