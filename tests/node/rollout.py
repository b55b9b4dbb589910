"""Waiting on the real node: an object until a condition holds, watched; why a rollout waits."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any, Final

from planning.snapshot import Snapshot
from providers.kinds import POD
from providers.kube import ResourceKind
from tests.node.node import RealNode

ROLLOUT_SECONDS: Final = 180
FINISHED: Final = ("Succeeded", "Failed")
_PODS = itertools.count(1)


def wait_for(node: RealNode, kind: ResourceKind, namespace: str, name: str, done: Callable[[dict[str, Any]], bool], seconds: float) -> dict[str, Any]:
    """The object once `done` holds for it, by watching from a read; fails after `seconds`."""
    deadline = time.monotonic() + seconds
    current = node.admin.get(kind, name, namespace)
    version = current["metadata"]["resourceVersion"]
    while not done(current):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"{kind.kind} {namespace}/{name} not done within {seconds} s: {current.get('status')}\n{pod_states(node, namespace)}"
        with node.admin.watch(kind, namespace=namespace, resource_version=version, timeout_seconds=max(1, int(remaining))) as stream:
            for event in stream:
                version = event.resource_version or version
                if (event.object.get("metadata") or {}).get("name") == name and event.object.get("kind") == kind.kind:
                    current = event.object
                    if done(current):
                        break
    return current


def pod_states(node: RealNode, namespace: str) -> str:
    """Each Pod's phase, conditions, container states and last log lines: why a rollout waits."""
    pods = node.admin.request("GET", POD.collection_path(namespace)).get("items") or []
    return "\n".join(
        f"Pod {pod['metadata']['name']}: {status.get('phase')} {status.get('conditions')} {status.get('containerStatuses')}\n"
        f"{node.log_tail(namespace, pod['metadata']['name'])}"
        for pod in pods
        for status in [pod.get("status") or {}]
    )


def deployment_ready(deployment: dict[str, Any]) -> bool:
    snapshot = Snapshot.from_objects([deployment])
    return bool(snapshot.workloads) and all(w.available_replicas == w.replicas > 0 and w.observed_generation == w.meta.generation for w in snapshot.workloads)


def run_once(node: RealNode, namespace: str, container: dict[str, Any]) -> dict[str, Any]:
    """A Pod of one `container` (name `main`), run once on the node; its object once it has ended."""
    name = f"run-{next(_PODS)}"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node.name,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "containers": [{"name": "main", **container}],
        },
    }
    node.admin.create(POD, pod, field_manager="tests")
    return wait_for(node, POD, namespace, name, lambda p: (p.get("status") or {}).get("phase") in FINISHED, ROLLOUT_SECONDS)
