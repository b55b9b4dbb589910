"""Waiting on the real node: an object until a condition holds, watched; why a rollout waits."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, Final

from planning.snapshot import Snapshot
from providers.kinds import POD
from providers.kube import ResourceKind
from tests.node.node import RealNode
from tests.support.watching import watch_until

ROLLOUT_SECONDS: Final = 180
FINISHED: Final = ("Succeeded", "Failed")
_PODS = itertools.count(1)


def wait_for(
    node: RealNode,
    kind: ResourceKind,
    namespace: str,
    name: str,
    done: Callable[[dict[str, Any]], bool],
    seconds: float,
) -> dict[str, Any]:
    """The object once `done` holds for it; a failure says what each Pod of the namespace is doing."""
    return watch_until(node.admin, kind, namespace, name, done, seconds, explain=lambda: pod_states(node, namespace))


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
    return bool(snapshot.workloads) and all(
        w.available_replicas == w.replicas > 0 and w.observed_generation == w.meta.generation
        for w in snapshot.workloads
    )


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
    return wait_for(
        node, POD, namespace, name, lambda p: (p.get("status") or {}).get("phase") in FINISHED, ROLLOUT_SECONDS
    )
