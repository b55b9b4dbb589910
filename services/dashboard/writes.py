"""The objects the dashboard writes: each form's fields, and only those, as an API body. Pure.

Rules:

- A create is a whole new object (POST); a change is the partial object of the fields its form
  owns, with the `metadata.resourceVersion` the client saw (cluster.RuntimeRequests.apply).
- Server-side apply removes a field its manager owned before and no longer sends. So a change
  that must keep a field it does not edit sends that field's current value:
  - a module's parameters keep its current `gpuSharing` (only the GPU-sharing API changes it);
  - an instance edit without `access.sharing` keeps the current restriction (an older client
    that omits it must not lift it).
- Local models: source and profile (preset, engine, computeTarget, artifact, url) are
  immutable in Edit; a different value is a 422 naming the field. The derived
  `kvCacheMemoryBytes` and `cpuOffloadMi` come from the estimate, never from the client.
- Host operations are bound to the node's UID and current boot ID, a request ID the server
  makes (unique: a random UUID), and the explicit acknowledgement of the disruption.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from api.host_evidence import HOST_PLANS_ANNOTATION
from api.meta import API_VERSION
from services.dashboard.forms import (
    ExternalModelCreate,
    GpuSharingChange,
    HostOperationCreate,
    InstanceCreate,
    InstanceEdit,
    LocalModelCreate,
    LocalModelEdit,
    ModelRestart,
    ModuleChange,
)
from services.dashboard.refusals import invalid

GPU_SHARING = "gpuSharing"
SHARED_MODE = {"gpu": "time-slicing", "amd-gpu": "dra-shared"}
"""The provider-specific value of the public `shared` mode, per GPU module."""
SHARING_NAMESPACE = "ai"
IMMUTABLE_LOCAL_FIELDS = ("preset", "engine", "computeTarget", "artifact")
CLEAR_MODEL_CACHE = "clear-model-cache"


def _metadata(name: str, resource_version: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    return metadata


def module_body(name: str, module: str, change: ModuleChange, *, current: Mapping[str, Any] | None) -> dict[str, Any]:
    """A new ModuleActivation (current None) or the change of one. Pure."""
    spec: dict[str, Any] = {"module": module, "enabled": change.enabled}
    if change.parameters is not None:
        parameters = {key: value for key, value in change.parameters.items() if key != GPU_SHARING}
        kept = ((current or {}).get("spec") or {}).get("parameters") or {}
        if GPU_SHARING in kept:
            parameters[GPU_SHARING] = kept[GPU_SHARING]
        spec["parameters"] = parameters
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleActivation",
        "metadata": _metadata(name, change.resource_version),
        "spec": spec,
    }


def gpu_sharing_body(current: Mapping[str, Any], change: GpuSharingChange, *, node_uid: str) -> dict[str, Any]:
    """The change of `current`'s gpuSharing parameter, and nothing else. Pure."""
    metadata = current.get("metadata") or {}
    module = str((current.get("spec") or {}).get("module") or "")
    if module not in SHARED_MODE:
        raise invalid("spec.module", f"GPU sharing applies to the modules {', '.join(SHARED_MODE)}, not {module!r}")
    if change.mode == "shared" and change.slots is None:
        raise invalid("slots", "shared GPU sharing needs 2 to 16 slots")
    sharing: dict[str, Any] = {
        "mode": SHARED_MODE[module] if change.mode == "shared" else "exclusive",
        "nodeName": change.node_name,
        "nodeUID": node_uid,
        "namespace": SHARING_NAMESPACE,
    }
    if change.mode == "shared":
        sharing["slots"] = change.slots
    encoded = json.dumps(sharing, separators=(", ", ": "))
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleActivation",
        "metadata": _metadata(str(metadata.get("name")), change.resource_version),
        "spec": {"module": module, "parameters": {GPU_SHARING: encoded}},
    }


def local_model_body(
    form: LocalModelCreate, *, kv_cache_memory_bytes: int | None, cpu_offload_mi: int | None
) -> dict[str, Any]:
    """A new local ModelActivation, its derived fields from the estimate. Pure."""
    local: dict[str, Any] = {
        "preset": form.preset,
        "engine": form.engine,
        "computeTarget": form.compute_target,
        **_local_fields(
            form.artifact,
            form.context_window,
            form.max_num_seqs,
            form.kv_cache_type,
            form.memory_required_mi,
            form.vram_mi,
            form.cpu_offloading,
        ),
    }
    _derived(local, kv_cache_memory_bytes, cpu_offload_mi, form.allow_memory_risk)
    return _model(form.name, None, form.enabled, {"type": "local", "local": local})


def local_model_edit_body(
    current: Mapping[str, Any], form: LocalModelEdit, *, kv_cache_memory_bytes: int | None, cpu_offload_mi: int | None
) -> dict[str, Any]:
    """The change of a local ModelActivation; source and profile must stay as they are. Pure."""
    check_local_edit(current, form)
    existing = (current.get("spec") or {}).get("local") or {}
    local: dict[str, Any] = {
        field: existing[field] for field in (*IMMUTABLE_LOCAL_FIELDS, "url") if existing.get(field) is not None
    }
    local.update(
        _local_fields(
            None,
            form.context_window,
            form.max_num_seqs,
            form.kv_cache_type,
            form.memory_required_mi,
            form.vram_mi,
            form.cpu_offloading,
        )
    )
    _derived(local, kv_cache_memory_bytes, cpu_offload_mi, form.allow_memory_risk)
    name = str((current.get("metadata") or {}).get("name"))
    return _model(name, form.resource_version, form.enabled, {"type": "local", "local": local})


def check_local_edit(current: Mapping[str, Any], form: LocalModelEdit) -> None:
    """Raise a 422 Refusal when `form` edits a model that is not local, or changes its source or profile. Pure."""
    spec = current.get("spec") or {}
    existing = spec.get("local") or {}
    if spec.get("type") != "local":
        raise invalid("spec.type", "only a local model is edited with the local-model form")
    given = {
        "preset": form.preset,
        "engine": form.engine,
        "computeTarget": form.compute_target,
        "artifact": form.artifact,
    }
    for field in IMMUTABLE_LOCAL_FIELDS:
        if given[field] is not None and existing.get(field) is not None and given[field] != existing.get(field):
            raise invalid(
                f"spec.local.{field}", f"is immutable in Edit (it is {existing.get(field)!r}); add a new model instead"
            )


RESTARTABLE_RUNTIMES = ("freetoken", "realtime")
"""The local runtimes whose settings carry a restartNonce (api.models); changing it restarts them."""


def restart_body(current: Mapping[str, Any], form: ModelRestart, *, nonce: str) -> dict[str, Any]:
    """The change of a FreeToken or realtime model's restartNonce, and nothing else. Pure."""
    local = (current.get("spec") or {}).get("local") or {}
    runtime = next((name for name in RESTARTABLE_RUNTIMES if isinstance(local.get(name), Mapping)), None)
    if runtime is None:
        raise invalid(
            "spec.local.engine",
            "a restart sets restartNonce, which only FreeToken and realtime runtimes have; a vLLM or Ollama model restarts when an edit changes it",
        )
    name = str((current.get("metadata") or {}).get("name"))
    return _model_patch(name, form.resource_version, {"type": "local", "local": {runtime: {"restartNonce": nonce}}})


def external_model_body(form: ExternalModelCreate) -> dict[str, Any]:
    """A new external ModelActivation; its key stays in the Secret it names. Pure."""
    external: dict[str, Any] = {"model": form.model, "modelType": form.model_type}
    if form.api_base:
        external["apiBase"] = form.api_base
    if form.api_key_secret_ref is not None:
        external["apiKeySecretRef"] = {"name": form.api_key_secret_ref.name, "key": form.api_key_secret_ref.key}
    return _model(form.name, None, form.enabled, {"type": "external", "external": external})


def instance_body(form: InstanceCreate) -> dict[str, Any]:
    """A new AppInstance. Pure."""
    spec = {"application": form.application, "enabled": form.enabled, "access": _access(form.access, kept=None)}
    return {"apiVersion": API_VERSION, "kind": "AppInstance", "metadata": _metadata(form.name), "spec": spec}


def instance_edit_body(current: Mapping[str, Any], form: InstanceEdit) -> dict[str, Any]:
    """The change of an AppInstance's access and enablement; an omitted sharing keeps the current one. Pure."""
    spec = current.get("spec") or {}
    kept = (spec.get("access") or {}).get("sharing")
    name = str((current.get("metadata") or {}).get("name"))
    body_spec = {
        "application": spec.get("application"),
        "enabled": form.enabled,
        "access": _access(form.access, kept=kept),
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "AppInstance",
        "metadata": _metadata(name, form.resource_version),
        "spec": body_spec,
    }


def published_cache_plan(node: Mapping[str, Any], node_name: str) -> str:
    """The model-cache planId the node's host agent publishes (api.host_evidence.HOST_PLANS_ANNOTATION). Pure."""
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(HOST_PLANS_ANNOTATION)
    try:
        plans = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        plans = None
    plan = ((plans or {}).get("modelCache") or {}).get("planId") if isinstance(plans, dict) else None
    if not isinstance(plan, str) or not plan:
        raise invalid(
            "planId",
            f"node {node_name} publishes no model-cache plan ({HOST_PLANS_ANNOTATION}): is its host agent running? Or give the planId",
        )
    return plan


def host_operation_body(form: HostOperationCreate, *, node: Mapping[str, Any], request_id: str) -> dict[str, Any]:
    """A new HostOperation bound to `node` as it is now (UID, boot ID). Pure."""
    if not form.acknowledge_disruption:
        raise invalid(
            "acknowledgeDisruption", f"must be true: {form.action} disrupts what runs on node {form.node_name}"
        )
    uid = str((node.get("metadata") or {}).get("uid") or "")
    boot_id = str(((node.get("status") or {}).get("nodeInfo") or {}).get("bootID") or "")
    if not uid or not boot_id:
        raise invalid("nodeName", f"node {form.node_name} reports no UID or boot ID; the request cannot be bound to it")
    spec = {
        "action": form.action,
        "nodeName": form.node_name,
        "nodeUID": uid,
        "bootID": boot_id,
        "requestID": request_id,
        "acknowledgeDisruption": True,
    }
    if form.action == CLEAR_MODEL_CACHE:
        spec["planId"] = form.plan_id or published_cache_plan(node, form.node_name)
    name = f"{form.action}-{request_id[:8]}"
    return {"apiVersion": API_VERSION, "kind": "HostOperation", "metadata": _metadata(name), "spec": spec}


def _model_patch(name: str, resource_version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelActivation",
        "metadata": _metadata(name, resource_version),
        "spec": spec,
    }


def _model(name: str, resource_version: str | None, enabled: bool, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelActivation",
        "metadata": _metadata(name, resource_version),
        "spec": {**spec, "enabled": enabled},
    }


def _local_fields(
    artifact: str | None,
    context_window: int | None,
    max_num_seqs: int | None,
    kv_cache_type: str | None,
    memory_required_mi: int | None,
    vram_mi: int | None,
    cpu_offloading: bool | None,
) -> dict[str, Any]:
    chosen = {
        "artifact": artifact,
        "contextWindow": context_window,
        "maxNumSeqs": max_num_seqs,
        "kvCacheType": kv_cache_type,
        "memoryRequiredMi": memory_required_mi,
        "vramMi": vram_mi,
        "cpuOffloading": cpu_offloading,
    }
    return {key: value for key, value in chosen.items() if value is not None}


def _derived(
    local: dict[str, Any], kv_cache_memory_bytes: int | None, cpu_offload_mi: int | None, allow_memory_risk: bool
) -> None:
    if kv_cache_memory_bytes is not None:
        local["kvCacheMemoryBytes"] = kv_cache_memory_bytes
    if cpu_offload_mi is not None:
        local["cpuOffloadMi"] = cpu_offload_mi
    if allow_memory_risk:
        local["allowMemoryRisk"] = True


def _access(access: Any, *, kept: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"role": access.role, "exposure": access.exposure}
    if access.sharing is not None:
        body["sharing"] = {
            "mode": access.sharing.mode,
            "users": list(access.sharing.users),
            "groups": list(access.sharing.groups),
        }
    elif kept is not None:
        body["sharing"] = kept
    return body
