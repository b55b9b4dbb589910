"""Direct runtimes as the plan declares them, and a DirectRuntimeProvider configured as the engine does.

The bodies carry the labels, selector and force annotation planning gives them
(planning/models/direct.py, planning/objects.py): an owned object is forced unless a test
takes the annotation away.
"""

from __future__ import annotations

from typing import Any, Final

from planning.frozen import thaw
from planning.models.direct import DirectRuntimeKind, pod_selector, runtime_labels
from planning.objects import OWNED_FORCE_ANNOTATION, DesiredObject
from planning.settings import FIELD_MANAGER
from providers.direct_runtime import DirectRuntimeProvider
from providers.kube import KubeAccess
from tests.providers.engine import configured, kubeconfig_config

PORT: Final = 8091
"""The port of every double; its ports name their protocol, as the plan's do (planning/models/direct.py)."""


def _as_declared(body: dict[str, Any]) -> dict[str, Any]:
    """`body` as the plan declares it (DesiredObject.of), thawed."""
    return {key: thaw(value) for key, value in DesiredObject.of(body).body.items()}


def config_map(namespace: str, name: str, kind: DirectRuntimeKind = DirectRuntimeKind.REALTIME) -> dict[str, Any]:
    """The realtime runtime's stage ConfigMap."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-stages", "namespace": namespace, "labels": runtime_labels(kind, name)},
        "data": {"stages.yaml": "stages:\n  - thinker\n  - talker\n"},
    }
    return _as_declared(body)


def service(namespace: str, name: str, kind: DirectRuntimeKind = DirectRuntimeKind.REALTIME) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": runtime_labels(kind, name)},
        "spec": {
            "selector": pod_selector(kind, name),
            "ports": [{"name": "http", "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
        },
    }
    return _as_declared(body)


def deployment(
    namespace: str,
    name: str,
    kind: DirectRuntimeKind = DirectRuntimeKind.REALTIME,
    *,
    image: str = "example.com/vllm-omni:1",
) -> dict[str, Any]:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": runtime_labels(kind, name)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": pod_selector(kind, name)},
            "template": {
                "metadata": {"labels": runtime_labels(kind, name)},
                "spec": {
                    "containers": [
                        {"name": "server", "image": image, "ports": [{"containerPort": PORT, "protocol": "TCP"}]}
                    ]
                },
            },
        },
    }
    return _as_declared(body)


def runtime_objects(
    namespace: str, name: str, kind: DirectRuntimeKind = DirectRuntimeKind.REALTIME
) -> list[dict[str, Any]]:
    """The runtime's objects in apply order: the realtime runtime's ConfigMap first, the Deployment last."""
    stages = [config_map(namespace, name, kind)] if kind is DirectRuntimeKind.REALTIME else []
    return [*stages, service(namespace, name, kind), deployment(namespace, name, kind)]


def inputs(
    namespace: str, objects: list[dict[str, Any]], kind: DirectRuntimeKind = DirectRuntimeKind.REALTIME
) -> dict[str, Any]:
    """The inputs DirectRuntimeResource declares, before `check`."""
    return {
        "runtime": kind.value,
        "namespace": namespace,
        "objects": objects,
        "fieldManager": FIELD_MANAGER,
        "problem": None,
    }


def unforced(body: dict[str, Any]) -> dict[str, Any]:
    """`body` without the force annotation: its apply does not take over other managers' fields."""
    annotations = {k: v for k, v in body["metadata"].get("annotations", {}).items() if k != OWNED_FORCE_ANNOTATION}
    return {**body, "metadata": {**body["metadata"], "annotations": annotations}}


def identity(body: dict[str, Any]) -> str:
    return f"{body['kind']}/{body['metadata']['namespace']}/{body['metadata']['name']}"


def provider_for(access: KubeAccess) -> DirectRuntimeProvider:
    """A DirectRuntimeProvider the engine configured with a stack config naming `access`'s kubeconfig."""
    assert access.kubeconfig is not None
    return configured(DirectRuntimeProvider(), kubeconfig_config(access.kubeconfig))
