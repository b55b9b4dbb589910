"""A cluster with GPU sharing, as the device plugin, KubeAI and the Deployment controller leave it.

`settle` applies a plan as the API server does (a Node patch merges its labels; an undeclared
patch gives its label back), then plays the controllers: KubeAI runs one Pod per Model unless
the Model asks for zero replicas, a Deployment runs its Pod unless scaled to zero, the NVIDIA
device plugin advertises `slots` per physical GPU for the profile label a node carries, and the
AMD DRA driver publishes the node's device in a ResourceSlice once the DeviceConfig enables it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from planning.frozen import thaw
from planning.hardware.nvidia_sharing import DEVICE_PLUGIN_CONFIG_LABEL, PROFILE_PREFIX
from planning.plan import Plan, plan
from planning.snapshot import Snapshot
from tests.planning.builders import NOW, JsonObject, runtime, with_flux
from tests.planning.hardware.nodes import node, node_feature
from tests.planning.models.direct_world import WITH_FREETOKEN_IMAGE
from tests.planning.worlds import world_after

NVIDIA_DEVICE = ("0300", "10de", "2684")
AMD_DEVICE = ("0300", "1002", "1586")


def gpu_activation(module: str, sharing: dict[str, Any] | None) -> JsonObject:
    parameters = {"gpuSharing": json.dumps(sharing)} if sharing is not None else {}
    return runtime("ModuleActivation", module, {"module": module, "enabled": True, "parameters": parameters})


def sharing(mode: str, slots: int | None = None, node_name: str = "gpu-1") -> dict[str, Any]:
    found: dict[str, Any] = {"mode": mode, "nodeName": node_name, "nodeUID": f"uid-{node_name}", "namespace": "ai"}
    if slots is not None:
        found["slots"] = slots
    return found


def nvidia_host(gpus: int = 1) -> list[JsonObject]:
    return [
        node("gpu-1", "nvidia", allocatable={"nvidia.com/gpu": str(gpus)}),
        node_feature("gpu-1", *[NVIDIA_DEVICE] * gpus),
    ]


def amd_host() -> list[JsonObject]:
    return [node("gpu-1", "amd", allocatable={"amd.com/gpu": "1"}), node_feature("gpu-1", AMD_DEVICE)]


def plan_world(world: Iterable[JsonObject], *, now: datetime = NOW, served_apis: tuple[str, ...] = ()) -> Plan:
    snapshot = Snapshot.from_objects(with_flux(list(world)), served_apis=served_apis)
    return plan(snapshot=snapshot, catalogs=WITH_FREETOKEN_IMAGE, now=now)


def _key(obj: JsonObject) -> tuple[str, str, str]:
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def settle(result: Plan, world: Iterable[JsonObject]) -> list[JsonObject]:
    """The cluster after applying `result` and letting every controller act once."""
    before = {_key(o): o for o in world}
    after = {_key(o): o for o in world_after(result, before.values())}
    patches = {o.name: thaw(o.body) for o in result.objects if o.patch}
    for key, obj in list(after.items()):
        if obj["kind"] != "Node" or key not in before:
            continue
        restored = thaw(before[key])
        labels = restored["metadata"].setdefault("labels", {})
        if key[2] in patches:
            labels.update(patches[key[2]]["metadata"].get("labels", {}))
        elif str(labels.get(DEVICE_PLUGIN_CONFIG_LABEL, "")).startswith(PROFILE_PREFIX):
            del labels[DEVICE_PLUGIN_CONFIG_LABEL]
        after[key] = restored
    for outcome in result.models.outcomes:
        for declared in outcome.runtime.objects if outcome.runtime is not None else ():
            body: JsonObject = thaw(declared.body)
            previous = before.get(_key(body))
            generation = (previous or {}).get("metadata", {}).get("generation", 0) + (
                previous is None or previous.get("spec") != body.get("spec")
            )
            body["metadata"] |= {"generation": generation, "uid": f"uid-{declared.kind.lower()}-{declared.name}"}
            if declared.kind == "Deployment":
                replicas = body["spec"].get("replicas", 1)
                body["status"] = {
                    "observedGeneration": generation,
                    "replicas": replicas,
                    "updatedReplicas": replicas,
                    "availableReplicas": replicas,
                }
            after[_key(body)] = body
    objects = list(after.values())
    return _device_plugins(_workloads(objects))


def _pods_of(objects: list[JsonObject], owner_uid: str) -> list[JsonObject]:
    return [
        o
        for o in objects
        if o["kind"] == "Pod" and any(r.get("uid") == owner_uid for r in o["metadata"].get("ownerReferences", []))
    ]


def _pod(name: str, labels: dict[str, str], owner: JsonObject) -> JsonObject:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"]["namespace"],
            "uid": f"pod-uid-{name}",
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _workloads(objects: list[JsonObject]) -> list[JsonObject]:
    """KubeAI and the Deployment controller: one Running Pod per Model or Deployment not scaled to zero."""
    result = [o for o in objects if o["kind"] != "Pod"]
    for owner in result:
        if owner["kind"] not in ("Model", "Deployment"):
            continue
        owner["metadata"].setdefault("uid", f"uid-{owner['kind'].lower()}-{owner['metadata']['name']}")
        replicas = owner["spec"].get("replicas", 1)
        if owner["kind"] == "Model":
            labels = {"model": owner["metadata"]["name"]}
            owner["status"] = {"replicas": {"all": min(replicas, 1), "ready": min(replicas, 1)}}
        else:
            labels = thaw(owner["spec"]["template"]["metadata"]["labels"])
        if replicas != 0:
            result.append(_pod(f"{owner['metadata']['name']}-0", labels, owner))
    return result


def _device_plugins(objects: list[JsonObject]) -> list[JsonObject]:
    """The NVIDIA device plugin advertises slots per physical GPU for the node's profile label."""
    features = {o["metadata"]["name"]: o for o in objects if o["kind"] == "NodeFeature"}
    for obj in objects:
        if obj["kind"] != "Node" or "nvidia.com/gpu" not in obj["status"]["allocatable"]:
            continue
        elements = features[obj["metadata"]["name"]]["spec"]["features"]["instances"]["pci.device"]["elements"]
        physical = sum(1 for e in elements if e["attributes"]["vendor"] == "10de")
        label = obj["metadata"].get("labels", {}).get(DEVICE_PLUGIN_CONFIG_LABEL, "")
        per_gpu = int(label.removeprefix(PROFILE_PREFIX)) if label.startswith(PROFILE_PREFIX) else 1
        obj["status"]["allocatable"]["nvidia.com/gpu"] = str(physical * per_gpu)
    return objects


def pods_running(world: Iterable[JsonObject]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in world if o["kind"] == "Pod")
