"""Direct runtimes (FreeToken, realtime vLLM-Omni) as the cluster shows them to planning tests."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from catalogs import Catalogs
from planning.frozen import thaw
from planning.models.direct import DirectRuntime
from planning.plan import Plan, plan
from planning.snapshot import HealthObservation, Snapshot
from tests.planning.builders import CATALOGS, NOW, JsonObject, with_flux
from tests.planning.models.world import local_model

FREETOKEN_IMAGE = "registry.example.com/magicstick/freetoken:1.0.0"
WITH_FREETOKEN_IMAGE: Catalogs = CATALOGS.model_copy(
    update={
        "runtimes": CATALOGS.runtimes.model_copy(
            update={"freetoken": CATALOGS.runtimes.freetoken.model_copy(update={"image": FREETOKEN_IMAGE})}
        )
    }
)
"""The shipped catalogs with a FreeToken image set, as an administrator's catalog directory would."""

DEPLOYMENT_SERVER_DEFAULTS: dict[str, Any] = {"revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}
POD_SERVER_DEFAULTS: dict[str, Any] = {
    "restartPolicy": "Always",
    "dnsPolicy": "ClusterFirst",
    "schedulerName": "default-scheduler",
    "terminationGracePeriodSeconds": 30,
}


def freetoken_model(name: str = "ft", **local: Any) -> JsonObject:
    spec: dict[str, Any] = {"url": "hf://example/moe-35b", "computeTarget": "nvidia-gpu", "engine": "FreeToken"}
    spec.update(local)
    return _activation(name, _without_none(spec))


def realtime_model(
    name: str = "omni", *, profile: str = "omni-cuda", node: str = "gpu-1", target: str = "nvidia-gpu", **settings: Any
) -> JsonObject:
    realtime = {"profile": profile, "gpuNode": node, **settings.pop("realtime", {})}
    spec: dict[str, Any] = {
        "url": "hf://Qwen/Qwen2.5-Omni-7B",
        "computeTarget": target,
        "engine": "VLLM",
        "realtime": realtime,
        **settings,
    }
    return _activation(name, spec)


def _activation(name: str, spec: dict[str, Any]) -> JsonObject:
    activation = local_model(name, **spec)
    activation["spec"]["local"].pop("preset", None)
    return activation


def _without_none(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if v is not None}


def plan_with(
    *objects: JsonObject,
    catalogs: Catalogs = WITH_FREETOKEN_IMAGE,
    now: datetime = NOW,
    health: tuple[HealthObservation, ...] = (),
) -> Plan:
    return plan(snapshot=Snapshot.from_objects(with_flux(objects), health=health), catalogs=catalogs, now=now)


def runtime_of(result: Plan, activation: str) -> DirectRuntime | None:
    return next((o.runtime for o in result.models.outcomes if o.activation == activation), None)


def object_of(runtime: DirectRuntime, kind: str) -> JsonObject:
    body: JsonObject = thaw(next(o for o in runtime.objects if o.kind == kind).body)
    return body


def stored(
    runtime: DirectRuntime, *, generation: int = 1, observed_generation: int | None = 1, available: int = 1
) -> list[JsonObject]:
    """The runtime's objects as the API server and the Deployment controller show them: server
    defaults, generation, a revision annotation and rollout counts."""
    found: list[JsonObject] = []
    for obj in runtime.objects:
        body: JsonObject = copy.deepcopy(thaw(obj.body))
        body["metadata"]["uid"] = f"uid-{obj.kind.lower()}-{obj.name}"
        if obj.kind == "Deployment":
            body["metadata"]["generation"] = generation
            body["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = str(generation)
            body["spec"] = {**DEPLOYMENT_SERVER_DEFAULTS, **body["spec"]}
            body["spec"]["template"]["spec"] = {**POD_SERVER_DEFAULTS, **body["spec"]["template"]["spec"]}
            body["status"] = {
                "replicas": 1,
                "updatedReplicas": available,
                "availableReplicas": available,
                "readyReplicas": available,
            }
            if observed_generation is not None:
                body["status"]["observedGeneration"] = observed_generation
        found.append(body)
    return found


def runtime_pod(
    runtime: DirectRuntime, *, name: str = "runtime-pod", ready: bool = True, reason: str = "", message: str = ""
) -> JsonObject:
    labels = object_of(runtime, "Deployment")["spec"]["template"]["metadata"]["labels"]
    status: dict[str, Any] = {
        "phase": "Running" if ready else "Pending",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if reason:
        status["reason"], status["message"] = reason, message
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": runtime.namespace,
            "uid": f"uid-{name}",
            "resourceVersion": "3",
            "labels": dict(labels),
        },
        "status": status,
    }
