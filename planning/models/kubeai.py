"""The KubeAI Model (kubeai.org/v1) generated for one local activation, and its CPU profile.

Engine settings map as follows:
- vLLM: `--kv-cache-dtype=<type>` (fp8 adds `--calculate-kv-scales`), on CPU the KV-cache
  size `--kv-cache-memory-bytes=<n>`, `--max-model-len` and `--max-num-seqs` when set, and
  the vision-attention arguments and environment of the compute-target catalog when the
  activation chooses a value (`auto` sets none, so KubeAI's own choice applies; an omitted
  object leaves the arguments the Model already has);
- Ollama: OLLAMA_KV_CACHE_TYPE with OLLAMA_FLASH_ATTENTION=1, OLLAMA_CONTEXT_LENGTH and
  OLLAMA_NUM_PARALLEL when set.

CPU models run on a count-one profile materialised in the runtime-profile store: RAM is the
resolved memoryRequiredMi (whole 16 MiB units), CPU the resolved request and limit. Its name
is a hash of its content, so identical profiles are shared.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from catalogs import Catalogs
from planning.frozen import freeze, thaw
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE
from planning.models.resolve import ResolvedLocalModel
from planning.names import KUBEAI_MODEL_NAME_LIMIT, LABEL_VALUE_LIMIT, fit
from planning.objects import DesiredObject
from planning.snapshot import KubeAIModel, Snapshot

MODEL_API_VERSION = "kubeai.org/v1"
ACTIVATION_LABEL = "appliance.magicstick.dev/model-activation"
ACTIVATION_ANNOTATION = "appliance.magicstick.dev/activation"
VISION_ANNOTATION = "appliance.magicstick.dev/vision-attention"
MAX_CPU_PROFILES = 64
"""Bound of the runtime-profile store: at most this many profiles are the program's own."""
PROFILE_STORE_NAMESPACE = "flux-system"
PROFILE_STORE_CONFIG_MAP = "magicstick-runtime-profiles"
PROFILE_STORE_KEY = "values.json"
"""The runtime-profile store: a Helm values document `{"resourceProfiles": {<name>: <profile>}}`."""
CPU_PROFILE_PREFIX = "magicstick-cpu-"
MODEL_SERVER_PORT = 8000
"""KubeAI's model server containers (vLLM and Ollama alike) listen on port 8000."""
SCALE_DOWN_DELAY_SECONDS = 30
TARGET_REQUESTS = 100


@dataclass(frozen=True)
class CpuProfile:
    """A count-one KubeAI resource profile for one CPU model configuration."""

    name: str
    body: Mapping[str, Any]


def model_name(activation: str) -> str:
    return fit(activation, KUBEAI_MODEL_NAME_LIMIT)


def cpu_profile(resolved: ResolvedLocalModel) -> CpuProfile:
    requests: dict[str, str] = {"cpu": f"{resolved.cpu_request_millicores}m", "memory": f"{resolved.memory_required_mi}Mi"}
    limits: dict[str, str] = {}
    if resolved.cpu_limit_millicores > 0:
        limits["cpu"] = f"{resolved.cpu_limit_millicores}m"
    body: dict[str, Any] = {"imageName": "cpu", "requests": requests}
    if limits:
        body["limits"] = limits
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:10]
    return CpuProfile(name=f"{CPU_PROFILE_PREFIX}{resolved.engine.lower()}-{digest}", body=freeze(body))


def applied_cpu_profile(observed: KubeAIModel, *, snapshot: Snapshot) -> CpuProfile | None:
    """The CPU profile the observed Model runs on, as the runtime-profile store holds it, or
    None (not a CPU profile of ours, or not in the store). Pure.

    A Model kept as it runs (invariant 6, deferrals) keeps its profile: without it the store
    entry would be removed and KubeAI could no longer schedule the Model.
    """
    reference = observed.spec.get("resourceProfile")
    name = reference.partition(":")[0] if isinstance(reference, str) else ""
    if not name.startswith(CPU_PROFILE_PREFIX):
        return None
    store = snapshot.config_map(PROFILE_STORE_NAMESPACE, PROFILE_STORE_CONFIG_MAP)
    text = store.data.get(PROFILE_STORE_KEY) if store is not None else None
    try:
        document = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        return None
    profiles = document.get("resourceProfiles") if isinstance(document, dict) else None
    body = profiles.get(name) if isinstance(profiles, dict) else None
    return CpuProfile(name=name, body=freeze(body)) if isinstance(body, dict) else None


def _vision_overrides(resolved: ResolvedLocalModel, catalogs: Catalogs) -> tuple[list[str], dict[str, str], set[str], set[str]]:
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
        if resolved.kv_cache_memory_bytes is not None:
            args.append(f"--kv-cache-memory-bytes={resolved.kv_cache_memory_bytes}")
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
) -> DesiredObject:
    name = model_name(activation)
    args, env = engine_settings(resolved, catalogs, observed)
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
            "labels": {MANAGED_BY: MANAGED_BY_VALUE, ACTIVATION_LABEL: fit(activation, LABEL_VALUE_LIMIT)},
            "annotations": annotations,
        },
        "spec": spec,
    }
    return DesiredObject.of(body)


def kept_model(observed: KubeAIModel) -> DesiredObject:
    """The observed Model declared exactly as it is (invariant 6, deferrals)."""
    metadata: dict[str, Any] = {"name": observed.meta.name, "namespace": observed.meta.namespace}
    if observed.meta.labels:
        metadata["labels"] = thaw(observed.meta.labels)
    if observed.meta.annotations:
        metadata["annotations"] = thaw(observed.meta.annotations)
    body = {"apiVersion": MODEL_API_VERSION, "kind": "Model", "metadata": metadata, "spec": thaw(observed.spec)}
    return DesiredObject.of(body)
