"""A real node: the kubelet, containerd and runc run the Pods the test API server schedules,
from an image built here without a registry."""

from __future__ import annotations

import itertools
from typing import Any

from providers.kinds import POD
from providers.kube import ResourceKind
from tests.node.node import RealNode

SERVICE_ACCOUNT = ResourceKind(group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True)
FINISHED = ("Succeeded", "Failed")
_PODS = itertools.count(1)


def _run_pod(node: RealNode, namespace: str, script: str) -> dict[str, Any]:
    """A Pod that runs `script` once on the node; its object once it has ended, watched."""
    node.admin.apply(SERVICE_ACCOUNT, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}}, field_manager="tests")
    name = f"real-node-pod-{next(_PODS)}"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node.name,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "containers": [{"name": "main", "image": node.image, "imagePullPolicy": "Never", "command": ["/bin/sh", "-c", script]}],
        },
    }
    created = node.admin.create(POD, pod, field_manager="tests")
    current, version = created, created["metadata"]["resourceVersion"]
    while (current.get("status") or {}).get("phase") not in FINISHED:
        changed = False
        with node.admin.watch(POD, namespace=namespace, resource_version=version, timeout_seconds=120) as stream:
            for event in stream:
                version = event.resource_version or version
                if (event.object.get("metadata") or {}).get("name") == name:
                    current, changed = event.object, True
                    break
        assert changed, f"Pod {name} did not change within 120 s: {current.get('status')}"
    return current


def _exit_code(pod: dict[str, Any]) -> int:
    return int(pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"])


def test_a_pod_of_a_locally_built_image_runs_to_completion(real_node: RealNode, node_namespace: str) -> None:
    pod = _run_pod(real_node, node_namespace, "test -x /bin/busybox && echo done")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    assert _exit_code(pod) == 0
    assert pod["status"]["podIP"].startswith("10.213.0.")


def test_a_command_that_fails_in_the_container_fails_the_pod_with_its_exit_code(real_node: RealNode, node_namespace: str) -> None:
    pod = _run_pod(real_node, node_namespace, "exit 3")
    assert pod["status"]["phase"] == "Failed"
    assert _exit_code(pod) == 3


def test_the_container_runs_in_namespaces_of_its_own(real_node: RealNode, node_namespace: str) -> None:
    """Its UTS namespace holds the Pod's name as host name; its PID namespace starts at 1."""
    # Kubernetes expands $(VAR) in a command and reads $$ as an escaped $: the shell sees $(cat ...) and $$.
    pod = _run_pod(real_node, node_namespace, "echo $$(cat /proc/sys/kernel/hostname) $$$$ > /dev/termination-log")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["message"].split() == [pod["metadata"]["name"], "1"]
