"""A real node: the kubelet, containerd and runc run the Pods the test API server schedules,
from an image built here without a registry."""

from __future__ import annotations

from typing import Any

from providers.kube import ResourceKind
from tests.node.node import RealNode
from tests.node.rollout import run_once

SERVICE_ACCOUNT = ResourceKind(group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True)


def _run_pod(node: RealNode, namespace: str, script: str) -> dict[str, Any]:
    """A Pod that runs `script` once on the node; its object once it has ended, watched."""
    node.admin.apply(
        SERVICE_ACCOUNT,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}},
        field_manager="tests",
    )
    return run_once(
        node, namespace, {"image": node.image, "imagePullPolicy": "Never", "command": ["/bin/sh", "-c", script]}
    )


def _exit_code(pod: dict[str, Any]) -> int:
    return int(pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"])


def test_a_pod_of_a_locally_built_image_runs_to_completion(real_node: RealNode, node_namespace: str) -> None:
    pod = _run_pod(real_node, node_namespace, "test -x /bin/busybox && echo done")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    assert _exit_code(pod) == 0
    assert pod["status"]["podIP"].startswith("10.213.0.")


def test_a_command_that_fails_in_the_container_fails_the_pod_with_its_exit_code(
    real_node: RealNode, node_namespace: str
) -> None:
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
