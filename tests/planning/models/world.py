"""Model scenarios: activations, the modules they need Ready, and what KubeAI shows."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from planning.models.kubeai import ACTIVATION_LABEL
from tests.planning.builders import CATALOGS, NOW, JsonObject, appliance, as_stored, ready_modules, runtime
from tests.planning.hardware.nodes import node

MODEL_MODULES = ("basis", "litellm", "model-catalog", "kubeai")


def local_model(name: str, **local: Any) -> JsonObject:
    spec: dict[str, Any] = {"preset": "qwen2505bcpu", "computeTarget": "cpu", "engine": "VLLM"}
    spec.update(local)
    return runtime("ModelActivation", name, {"type": "local", "targetNamespace": "ai", "local": spec})


def platform(*extra_modules: str) -> list[JsonObject]:
    """Appliance/local and every module a KubeAI model needs, Ready."""
    modules = set(MODEL_MODULES) | set(extra_modules)
    for name in list(modules):
        modules |= set(CATALOGS.modules.require(name).depends_on)
    return [appliance(), *ready_modules(*sorted(modules))]


def observed_model(
    name: str,
    *,
    ready: int = 0,
    all_: int = 0,
    generation: int = 1,
    engine: str = "VLLM",
    uid: str | None = None,
    spec: JsonObject | None = None,
) -> JsonObject:
    """A KubeAI Model as the cluster returns it: CRD defaults, generation, KubeAI's replica counts."""
    model: JsonObject = {
        "apiVersion": "kubeai.org/v1",
        "kind": "Model",
        "metadata": {
            "name": name,
            "namespace": "ai",
            "uid": uid or f"model-uid-{name}",
            "labels": {ACTIVATION_LABEL: name},
        },
        "spec": spec
        or {
            "url": "hf://example/model",
            "engine": engine,
            "features": ["TextGeneration"],
            "scaleDownDelaySeconds": 30,
            "targetRequests": 100,
        },
        "status": {"replicas": {"all": all_, "ready": ready}},
    }
    return as_stored(model, generation=generation)


def pod(
    name: str,
    model: str,
    *,
    phase: str = "Running",
    ready: bool = True,
    resource_version: str = "7",
    uid: str | None = None,
    reason: str = "",
    model_uid: str | None = None,
) -> JsonObject:
    status: dict[str, Any] = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if reason:
        status["reason"] = reason
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ai",
            "uid": uid or f"pod-uid-{name}",
            "resourceVersion": resource_version,
            "labels": {"model": model},
            "ownerReferences": [
                {
                    "apiVersion": "kubeai.org/v1",
                    "kind": "Model",
                    "name": model,
                    "uid": model_uid or f"model-uid-{model}",
                    "controller": True,
                }
            ],
        },
        "status": status,
    }


def catalog_publishing(*model_ids: str) -> JsonObject:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "magicstick-model-catalog", "namespace": "ai-system"},
        "data": {"models.json": json.dumps(list(model_ids))},
    }


def host_operation(name: str, action: str = "clear-model-cache", phase: str | None = None) -> JsonObject:
    obj = runtime("HostOperation", name, {"action": action, "planId": "plan-1"})
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def later(minutes: float) -> datetime:
    return NOW + timedelta(minutes=minutes)


def gpu_node(resource: str, count: str = "1") -> JsonObject:
    vendor = {
        "nvidia.com/gpu": "nvidia",
        "amd.com/gpu": "amd",
        "gpu.intel.com/xe": "intel",
        "gpu.intel.com/i915": "intel",
    }[resource]
    return node("gpu-1", vendor, allocatable={resource: count})
