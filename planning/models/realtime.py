"""The realtime vLLM-Omni runtime: a catalog profile run as a direct Deployment, from the
profile's fields to the runtime's readiness.

Rules, pure:
- the profile comes from the runtime catalog (catalogs/runtimes.yaml); its compute target is
  the activation's; ordinary engine settings (kvCacheType, vllm, cpuOffloading, more than one
  replica) do not apply and are refused naming the field;
- the image is `runtimeImage`, else the profile's catalog default; a profile without one (CPU,
  XPU here) needs `runtimeImage`. A chosen image that is a placeholder, or none at all
  (catalogs.images), fails the activation (RuntimeImageNotSet);
- placement: `gpuNode`, a Linux node that must exist (GpuNodeNotFound) and have allocatable
  resources: `gpuCount` whole GPUs of the target's resource (one of the profile's plans; 0 on
  CPU, no GPU request then) and RAM for `systemMemoryMi`, the Pod's request and limit. No
  regular-engine inventory selectors; memory estimates are advisory here and never block;
- the stage ConfigMap holds the bootstrap, bound to the catalog's vLLM-Omni version and to
  the settings; its hash is a Pod template annotation, so any change restarts the runtime;
  Thinker CPU offloading reaches stage 0 through a deploy-config overlay, for catalog-default
  images only (a custom image gets no such patch);
- Deployment strategy Recreate (never two runtimes on one GPU), one replica, the NVIDIA
  RuntimeClass for CUDA only, no service-account token, MODEL_ID from `local.url`;
- source and profile are fixed once created: the Deployment records them, and an edit of either
  is refused (ImmutableField) while the running runtime is kept.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from api.models import LocalModelSpec, RealtimeSettings
from api.validation import SpecError
from catalogs import Catalogs, RealtimeProfile, RealtimeRuntime
from catalogs.images import is_placeholder_image
from planning.hardware.capacity import quantity_count
from planning.labels import FIELD_MANAGER_ANNOTATION
from planning.models.direct import (
    CONFIG_HASH_ANNOTATION,
    RESTART_NONCE_ANNOTATION,
    ClaimBinding,
    DirectRuntime,
    DirectRuntimeKind,
    allocatable_mi,
    container_resources,
    deployment_object,
    model_id,
    node_affinity,
    observed_workload,
    runtime_labels,
    runtime_name,
    service_object,
)
from planning.models.freetoken import Unplaceable
from planning.models.resolve import ResolvedLocalModel
from planning.names import LABEL_VALUE_LIMIT, fit
from planning.objects import OWNED_FORCE_ANNOTATION, DesiredObject
from planning.reasons import Reason
from planning.snapshot import Snapshot
from planning.unset_images import realtime_image

KIND = DirectRuntimeKind.REALTIME
SOURCE_ANNOTATION = "appliance.magicstick.dev/realtime-source"
PROFILE_ANNOTATION = "appliance.magicstick.dev/realtime-profile"
CONFIG_PATH = "/etc/magicstick/realtime"
BOOTSTRAP_KEY = "bootstrap.sh"
CACHE_PATH = "/cache"
NVIDIA_RUNTIME_CLASS = "nvidia"
SHARED_MEMORY_LIMIT = "2Gi"


RUNTIME_IMAGE_FIELD = "spec.local.realtime.runtimeImage"


class RealtimeImageNotSet(SpecError):
    """The image the runtime would run is a placeholder, or there is none (catalogs.images)."""


class ImmutableField(SpecError):
    """An edit of a field that is fixed once the runtime exists."""


@dataclass(frozen=True)
class RealtimePlan:
    runtime: DirectRuntime
    profile: RealtimeProfile
    gpu_count: int
    system_memory_mi: int


def plan_realtime(
    *,
    activation: str,
    namespace: str,
    local: LocalModelSpec,
    resolved: ResolvedLocalModel,
    snapshot: Snapshot,
    catalogs: Catalogs,
    field_manager: str,
    claim: ClaimBinding | None = None,
) -> RealtimePlan | Unplaceable:
    """The realtime runtime of one activation, or why its node cannot take it now. Raises
    SpecError naming the field for what the catalog or the contract refuses. Pure.

    `claim`: the shared GPU claim of an AMD dra-shared allocation; the Pod binds it directly and
    requests no extended resource (one slot: gpuCount must be 1)."""
    settings = local.realtime
    assert settings is not None, "plan_realtime is only called for activations with spec.local.realtime"
    catalog = catalogs.runtimes.realtime
    profile = _profile(settings, local, catalog)
    _no_engine_settings(local)
    _unchanged_source(snapshot, namespace, activation, url=resolved.url, profile=profile.name)
    image = _image(settings, profile, catalog)
    gpu_count = _gpu_count(settings, profile)
    memory = settings.system_memory_mi or profile.system_memory_mi
    if claim is not None and gpu_count != 1:
        raise SpecError(
            "spec.local.realtime.gpuCount",
            f"a shared GPU (claim {claim.claim}) is one slot: gpuCount must be 1, not {gpu_count}",
        )
    placement = _placement(
        settings.gpu_node, profile, 0 if claim is not None else gpu_count, memory, snapshot, catalogs
    )
    if isinstance(placement, Unplaceable):
        return placement
    bootstrap = _bootstrap(catalog, resolved, settings, catalog_image=settings.runtime_image is None)
    pod_annotations = {CONFIG_HASH_ANNOTATION: hashlib.sha256(bootstrap.encode()).hexdigest()[:16]}
    if settings.restart_nonce:
        pod_annotations[RESTART_NONCE_ANNOTATION] = settings.restart_nonce
    container = _server_container(
        image=image,
        resolved=resolved,
        port=catalog.port,
        memory_mi=memory,
        gpus={placement: gpu_count} if placement else {},
    )
    pod_spec = _pod_spec(activation, container, gpu_node=settings.gpu_node, profile=profile, claim=claim)
    objects = (
        _config_map(activation, namespace, bootstrap, field_manager),
        service_object(KIND, activation, namespace, port=catalog.port, field_manager=field_manager),
        deployment_object(
            KIND,
            activation,
            namespace,
            pod_spec=pod_spec,
            pod_annotations=pod_annotations,
            field_manager=field_manager,
            recreate=True,
            annotations={SOURCE_ANNOTATION: resolved.url, PROFILE_ANNOTATION: profile.name},
        ),
    )
    return RealtimePlan(
        runtime=DirectRuntime(kind=KIND, activation=activation, namespace=namespace, objects=objects),
        profile=profile,
        gpu_count=gpu_count,
        system_memory_mi=memory,
    )


def _image(settings: RealtimeSettings, profile: RealtimeProfile, catalog: RealtimeRuntime) -> str:
    """runtimeImage, else the profile's catalog image; an empty runtimeImage is none. Raises
    RealtimeImageNotSet when the one chosen is a placeholder (catalogs.images). Pure."""
    if settings.runtime_image:
        if is_placeholder_image(settings.runtime_image):
            raise RealtimeImageNotSet(
                RUNTIME_IMAGE_FIELD,
                f"'{settings.runtime_image}' is a placeholder; set a vLLM-Omni {catalog.version} image built for "
                f"{profile.backend}",
            )
        return settings.runtime_image
    unset = realtime_image(profile, catalog)
    if unset is not None:
        raise RealtimeImageNotSet(
            RUNTIME_IMAGE_FIELD, f"is required while {unset.field} is unset ({unset.state}); {unset.remedy}"
        )
    return str(profile.image)


def _server_container(
    *, image: str, resolved: ResolvedLocalModel, port: int, memory_mi: int, gpus: dict[str, int]
) -> dict[str, Any]:
    """The vLLM-Omni container: the bootstrap as its command, MODEL_ID from local.url. Pure."""
    return {
        "name": "vllm-omni",
        "image": image,
        "command": ["/bin/sh", f"{CONFIG_PATH}/{BOOTSTRAP_KEY}"],
        "env": [
            {"name": "MODEL_ID", "value": model_id(resolved.url)},
            {"name": "HF_HOME", "value": f"{CACHE_PATH}/huggingface"},
        ],
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "resources": container_resources(
            cpu_request_millicores=resolved.cpu_request_millicores,
            cpu_limit_millicores=resolved.cpu_limit_millicores,
            memory_mi=memory_mi,
            gpus=gpus,
        ),
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10, "failureThreshold": 3},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [
            {"name": "stage-config", "mountPath": CONFIG_PATH, "readOnly": True},
            {"name": "cache", "mountPath": CACHE_PATH},
            {"name": "dshm", "mountPath": "/dev/shm"},
        ],
    }


def _pod_spec(
    activation: str, container: dict[str, Any], *, gpu_node: str, profile: RealtimeProfile, claim: ClaimBinding | None
) -> dict[str, Any]:
    """The Pod of the runtime on its node: no service-account token, the stage ConfigMap, a
    model cache, shared memory; the profile's RuntimeClass; the shared claim bound directly. Pure."""
    pod_spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "affinity": node_affinity(gpu_node),
        "containers": [container],
        "volumes": [
            {"name": "stage-config", "configMap": {"name": _config_map_name(activation)}},
            {"name": "cache", "emptyDir": {}},
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHARED_MEMORY_LIMIT}},
        ],
    }
    if profile.runtime_class_name:
        pod_spec["runtimeClassName"] = profile.runtime_class_name
    if claim is not None:
        pod_spec["resourceClaims"] = [{"name": claim.pod_claim, "resourceClaimName": claim.claim}]
        container["resources"]["claims"] = [{"name": claim.pod_claim}]
    return pod_spec


def _profile(settings: RealtimeSettings, local: LocalModelSpec, catalog: RealtimeRuntime) -> RealtimeProfile:
    profile = catalog.get(settings.profile)
    if profile is None:
        known = ", ".join(p.name for p in catalog.profiles)
        raise SpecError(
            "spec.local.realtime.profile",
            f"'{settings.profile}' is not a realtime profile of the catalog (known: {known})",
        )
    if profile.compute_target != local.compute_target:
        raise SpecError(
            "spec.local.computeTarget",
            f"realtime profile {profile.name} runs on {profile.compute_target}, not {local.compute_target}",
        )
    return profile


def _no_engine_settings(local: LocalModelSpec) -> None:
    """Ordinary vLLM settings do not reach the realtime runtime; set, they are refused. Pure."""
    given = {
        "spec.local.kvCacheType": local.kv_cache_type,
        "spec.local.kvCacheMemoryBytes": local.kv_cache_memory_bytes,
        "spec.local.vllm": local.vllm,
        "spec.local.cpuOffloading": local.cpu_offloading,
        "spec.local.cpuOffloadMi": local.cpu_offload_mi,
    }
    for field, value in given.items():
        if value is not None:
            raise SpecError(field, "is not used by the realtime runtime; remove it")
    if (local.replicas or 1) != 1:
        raise SpecError(
            "spec.local.replicas", "the realtime runtime runs one replica; several replicas are never several GPUs"
        )


def _unchanged_source(snapshot: Snapshot, namespace: str, activation: str, *, url: str, profile: str) -> None:
    """Refuse a change of source or profile of a runtime that exists. Pure."""
    running = observed_workload(snapshot, KIND, namespace, activation)
    if running is None:
        return
    for annotation, field, wanted in (
        (SOURCE_ANNOTATION, "spec.local.url", url),
        (PROFILE_ANNOTATION, "spec.local.realtime.profile", profile),
    ):
        current = running.meta.annotations.get(annotation)
        if current is not None and current != wanted:
            raise ImmutableField(
                field,
                f"is fixed once the realtime runtime exists (it runs '{current}', not '{wanted}'); delete and recreate the activation to change it",
            )


def _gpu_count(settings: RealtimeSettings, profile: RealtimeProfile) -> int:
    count = settings.gpu_count if settings.gpu_count is not None else profile.gpu_counts[0]
    if count not in profile.gpu_counts:
        plans = ", ".join(str(c) for c in profile.gpu_counts)
        raise SpecError(
            "spec.local.realtime.gpuCount", f"{count} is not a plan of profile {profile.name} (plans: {plans})"
        )
    return count


def _placement(
    node_name: str, profile: RealtimeProfile, gpu_count: int, memory_mi: int, snapshot: Snapshot, catalogs: Catalogs
) -> str | None | Unplaceable:
    """The GPU resource to request on `node_name` (None on CPU), or why the node cannot take it. Pure."""
    node = next((n for n in snapshot.nodes if n.meta.name == node_name), None)
    if node is None:
        return Unplaceable(
            Reason.GPU_NODE_NOT_FOUND, f"spec.local.realtime.gpuNode: no node named {node_name} is in the cluster."
        )
    system = str(node.node_info.get("operatingSystem") or node.meta.labels.get("kubernetes.io/os") or "linux")
    if system != "linux":
        return Unplaceable(
            Reason.GPU_NODE_NOT_FOUND, f"spec.local.realtime.gpuNode: node {node_name} runs {system}, not Linux."
        )
    available = allocatable_mi(node)
    if available is not None and memory_mi > available:
        return Unplaceable(
            Reason.INSUFFICIENT_MEMORY,
            f"spec.local.realtime.systemMemoryMi: {memory_mi} MiB is more than node {node_name} can allocate ({available} MiB).",
        )
    if gpu_count == 0:
        return None
    target = catalogs.compute_targets.require(profile.compute_target)
    published = {name: quantity_count(node.allocatable.get(name, 0)) for name in target.resource_names}
    resource = next((name for name in target.resource_names if published[name] >= gpu_count), None)
    if resource is None:
        seen = ", ".join(f"{name}: {count}" for name, count in published.items())
        return Unplaceable(
            Reason.WAITING_FOR_GPU, f"Node {node_name} publishes {seen}; the realtime runtime needs {gpu_count}."
        )
    return resource


def _config_map_name(activation: str) -> str:
    return fit(f"{runtime_name(activation)}-stages", LABEL_VALUE_LIMIT)


def _bootstrap(
    catalog: RealtimeRuntime, resolved: ResolvedLocalModel, settings: RealtimeSettings, *, catalog_image: bool
) -> str:
    """The bootstrap script: every value in it is a validated number, so nothing is quoted;
    MODEL_ID comes from the environment. Pure."""
    args = ["--omni", "--host", "0.0.0.0", "--port", str(catalog.port)]
    if resolved.context_window is not None:
        args += ["--max-model-len", str(resolved.context_window)]
    if resolved.max_num_seqs is not None:
        args += ["--max-num-seqs", str(resolved.max_num_seqs)]
    if settings.gpu_memory_fraction is not None:
        args += ["--gpu-memory-utilization", format(settings.gpu_memory_fraction, "g")]
    lines = [
        "#!/bin/sh",
        f"# vLLM-Omni {catalog.version} realtime bootstrap, generated by Magic Stick.",
        "set -eu",
    ]
    offload = settings.thinker_cpu_offload_gib
    if offload and catalog_image:
        lines += [
            "# Thinker (stage 0) CPU offloading, as a deploy-config overlay.",
            f"printf 'stages:\\n  - stage_id: 0\\n    engine_args:\\n      cpu_offload_gb: {format(offload, 'g')}\\n' > /tmp/thinker-offload.yaml",
        ]
        args += ["--deploy-config", "/tmp/thinker-offload.yaml"]
    lines.append(f'exec vllm serve "$MODEL_ID" {" ".join(args)}')
    return "\n".join(lines) + "\n"


def _config_map(activation: str, namespace: str, bootstrap: str, field_manager: str) -> DesiredObject:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": _config_map_name(activation),
            "namespace": namespace,
            "labels": runtime_labels(KIND, activation),
            "annotations": {FIELD_MANAGER_ANNOTATION: field_manager, OWNED_FORCE_ANNOTATION: "true"},
        },
        "data": {BOOTSTRAP_KEY: bootstrap},
    }
    return DesiredObject.of(body)
