"""Putting objects into the real test apiserver, and playing the controllers it lacks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from providers.kinds import (
    APPLIANCE_KINDS,
    CONFIG_MAP,
    CRD,
    HELM_RELEASE,
    HTTP_ROUTE,
    KUBEAI_MODEL,
    KUSTOMIZATION,
    NODE,
    NODE_FEATURE,
    POD,
    REFERENCE_GRANT,
    SECURITY_POLICY,
)
from providers.kube import KubeAccess, KubeClient, ResourceKind

LOADER = "test-loader"
OFFLINE_ACCESS = KubeAccess(kubeconfig="/nonexistent/kubeconfig")
"""Access for pure tests of `check` and `diff`, which never open a connection."""
NAMESPACE = ResourceKind(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False)
FLUX = "kustomize-controller"
_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")
DEVICE_CONFIG = ResourceKind(group="amd.com", version="v1alpha1", kind="DeviceConfig", plural="deviceconfigs", namespaced=True)
_KINDS: dict[tuple[str, str], ResourceKind] = {
    (k.api_version, k.kind): k
    for k in (
        *APPLIANCE_KINDS.values(),
        CONFIG_MAP,
        CRD,
        KUSTOMIZATION,
        NODE,
        NODE_FEATURE,
        DEVICE_CONFIG,
        KUBEAI_MODEL,
        POD,
        HELM_RELEASE,
        HTTP_ROUTE,
        REFERENCE_GRANT,
        SECURITY_POLICY,
    )
}


def kind_of(obj: Mapping[str, Any]) -> ResourceKind:
    return _KINDS[(obj["apiVersion"], obj["kind"])]


def without_server_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in obj["metadata"].items() if k not in _SERVER_METADATA}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": metadata}


def load(client: KubeClient, objects: Iterable[Mapping[str, Any]], *, field_manager: str = LOADER) -> None:
    """Create or update every object, then write its status through /status as its controller would.

    The status goes in under a second field manager: before Kubernetes 1.22 managed fields do not
    tell subresources apart, so one manager applying the status without the labels would drop them.
    """
    for obj in objects:
        kind = kind_of(obj)
        client.apply(kind, without_server_fields(obj), field_manager=field_manager)
        if obj.get("status") and kind not in (CONFIG_MAP, NODE_FEATURE):
            write_status_as(client, obj, obj["status"], field_manager=f"{field_manager}-status")


def write_status_as(client: KubeClient, obj: Mapping[str, Any], status: Mapping[str, Any], *, field_manager: str) -> None:
    metadata = {"name": obj["metadata"]["name"]}
    if obj["metadata"].get("namespace"):
        metadata["namespace"] = obj["metadata"]["namespace"]
    body = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": metadata, "status": dict(status)}
    client.apply(kind_of(obj), body, field_manager=field_manager, subresource="status")


def mark_kustomizations_ready(client: KubeClient, namespace: str = "flux-system") -> int:
    """Play kustomize-controller: every unsuspended Kustomization becomes Ready for its generation."""
    marked = 0
    for kustomization in client.list(KUSTOMIZATION, namespace=namespace):
        if kustomization["spec"].get("suspend"):
            continue
        generation = kustomization["metadata"].get("generation", 1)
        status = kustomization.get("status") or {}
        if status.get("observedGeneration") == generation:
            continue
        write_status_as(
            client,
            kustomization,
            {
                "observedGeneration": generation,
                "lastAppliedRevision": "main@sha1:0123456789abcdef0123456789abcdef01234567",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "ReconciliationSucceeded",
                        "message": "Applied revision: main@sha1:0123456789abcdef0123456789abcdef01234567",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                        "observedGeneration": generation,
                    }
                ],
            },
            field_manager=FLUX,
        )
        marked += 1
    return marked


def delete_all(client: KubeClient, kinds: Iterable[ResourceKind], namespace: str) -> None:
    for kind in kinds:
        for obj in client.list(kind, namespace=namespace):
            client.delete(kind, obj["metadata"]["name"], namespace)


def without_cel_rules(value: Any) -> Any:
    """A CRD as the 1.20 test server can take it by server-side apply.

    That server predates CEL: it drops x-kubernetes-validations on create but refuses them in
    an apply patch ("field not declared in schema"). Real clusters (1.25+) take them as they are.
    """
    if isinstance(value, Mapping):
        return {k: without_cel_rules(v) for k, v in value.items() if k != "x-kubernetes-validations"}
    if isinstance(value, list):
        return [without_cel_rules(v) for v in value]
    return value


CLUSTER_ROLE = ResourceKind(group="rbac.authorization.k8s.io", version="v1", kind="ClusterRole", plural="clusterroles", namespaced=False)
CLUSTER_ROLE_BINDING = ResourceKind(
    group="rbac.authorization.k8s.io", version="v1", kind="ClusterRoleBinding", plural="clusterrolebindings", namespaced=False
)
_ACCESS_REVIEW = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
_REVIEW_ATTEMPTS = 2000


def wait_until_rbac_says(client: KubeClient, *, user: str, verb: str, group: str, resource: str, namespace: str | None, allowed: bool) -> None:
    """Ask SubjectAccessReviews until the authorizer's cache gives `allowed`; bounded in attempts.

    RBAC changes reach the authorizer through an informer a moment after they are written.
    """
    attributes = {"verb": verb, "group": group, "resource": resource}
    if namespace:
        attributes["namespace"] = namespace
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": user, "resourceAttributes": attributes}}
    for _ in range(_REVIEW_ATTEMPTS):
        answer = client.request("POST", _ACCESS_REVIEW, body=review, content_type="application/json")
        if bool(answer.get("status", {}).get("allowed")) is allowed:
            return
    raise AssertionError(f"RBAC never said allowed={allowed} for {user} {verb} {group}/{resource}")


SERVICE_ACCOUNT = ResourceKind(group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True)
KUBEAI = "kubeai-controller"


def ensure_namespace(client: KubeClient, name: str) -> None:
    """A namespace that can hold Pods: the admission plugin wants its default ServiceAccount."""
    client.apply(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, field_manager=LOADER)
    client.apply(
        SERVICE_ACCOUNT,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": name}},
        field_manager=LOADER,
    )


def play_kubeai(client: KubeClient, namespace: str) -> int:
    """Play KubeAI: each Model gets one Running, Ready Pod it controls and one ready replica."""
    changed = 0
    for model in client.list(KUBEAI_MODEL, namespace=namespace):
        name = model["metadata"]["name"]
        pod_name = f"{name}-0"
        if client.get_or_none(POD, pod_name, namespace) is None:
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": namespace,
                    "labels": {"model": name},
                    "ownerReferences": [
                        {"apiVersion": "kubeai.org/v1", "kind": "Model", "name": name, "uid": model["metadata"]["uid"], "controller": True}
                    ],
                },
                "spec": {
                    "automountServiceAccountToken": False,
                    "containers": [{"name": "server", "image": "registry.example.com/model-server:CHANGEME"}],
                },
            }
            client.apply(POD, pod, field_manager=KUBEAI)
            running = {
                "phase": "Running",
                "podIP": "10.96.0.10",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            }
            write_status_as(client, pod, running, field_manager=f"{KUBEAI}-status")
            changed += 1
        if (model.get("status") or {}).get("replicas", {}).get("ready") != 1:
            write_status_as(client, model, {"replicas": {"all": 1, "ready": 1}}, field_manager=f"{KUBEAI}-status")
            changed += 1
    return changed


def publish_model_catalog(client: KubeClient, namespace: str, model_ids: list[str]) -> None:
    """Play the model-catalog controller: publish `model_ids` in magicstick-model-catalog."""
    import json

    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "magicstick-model-catalog", "namespace": namespace},
        "data": {"models.json": json.dumps(sorted(model_ids))},
    }
    client.apply(CONFIG_MAP, body, field_manager="model-catalog")
