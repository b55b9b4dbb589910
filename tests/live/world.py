"""Putting objects into the real test apiserver, and playing the controllers it lacks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from planning.frozen import thaw
from planning.models.profile_entry import ProfileStoreRef
from planning.objects import OWNED_FORCE_ANNOTATION, DesiredObject
from planning.plan import Plan
from providers.kinds import (
    APPLIANCE_KINDS,
    CONFIG_MAP,
    CRD,
    DEPLOYMENT,
    ENVOY_PROXY,
    HELM_RELEASE,
    HTTP_ROUTE,
    JOB,
    KUBEAI_MODEL,
    KUSTOMIZATION,
    NETWORK_POLICY,
    NODE,
    NODE_FEATURE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    POD_DISRUPTION_BUDGET,
    REFERENCE_GRANT,
    SECURITY_POLICY,
    SERVICE,
)
from providers.kube import KubeClient, NotFound, ResourceKind
from providers.profile_store import put_profile
from providers.stale_removal import StaleTarget, remove_stale
from providers.status_writer import StatusTarget, write_status
from tests.planning.builders import accepted_gateway_status, flux_status

LOADER = "test-loader"
NAMESPACE = ResourceKind(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False)
FLUX = "kustomize-controller"
_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")
DEVICE_CONFIG = ResourceKind(
    group="amd.com", version="v1alpha1", kind="DeviceConfig", plural="deviceconfigs", namespaced=True
)
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
        DEPLOYMENT,
        SERVICE,
        POD_DISRUPTION_BUDGET,
        NETWORK_POLICY,
        ENVOY_PROXY,
        PERSISTENT_VOLUME,
        PERSISTENT_VOLUME_CLAIM,
        JOB,
    )
}


def kind_of(obj: Mapping[str, Any]) -> ResourceKind:
    return _KINDS[(obj["apiVersion"], obj["kind"])]


def without_server_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in obj["metadata"].items() if k not in _SERVER_METADATA}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": metadata}


def load(client: KubeClient, objects: Iterable[Mapping[str, Any]], *, field_manager: str = LOADER) -> None:
    """Create or update every object, then write its status through /status as its controller would.

    Both applies go in under `field_manager`: the server keeps the fields of the main resource
    and of the status subresource in separate managedFields entries, so the status apply, which
    carries no labels or spec, drops none of them.
    """
    for obj in objects:
        kind = kind_of(obj)
        client.apply(kind, without_server_fields(obj), field_manager=field_manager)
        if obj.get("status") and kind not in (CONFIG_MAP, NODE_FEATURE):
            write_status_as(client, obj, obj["status"], field_manager=field_manager)


def write_status_as(
    client: KubeClient, obj: Mapping[str, Any], status: Mapping[str, Any], *, field_manager: str
) -> None:
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


CLUSTER_ROLE = ResourceKind(
    group="rbac.authorization.k8s.io", version="v1", kind="ClusterRole", plural="clusterroles", namespaced=False
)
CLUSTER_ROLE_BINDING = ResourceKind(
    group="rbac.authorization.k8s.io",
    version="v1",
    kind="ClusterRoleBinding",
    plural="clusterrolebindings",
    namespaced=False,
)
_ACCESS_REVIEW = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
_REVIEW_ATTEMPTS = 2000


def wait_until_rbac_says(
    client: KubeClient, *, user: str, verb: str, group: str, resource: str, namespace: str | None, allowed: bool
) -> None:
    """Ask SubjectAccessReviews until the authorizer's cache gives `allowed`; bounded in attempts.

    RBAC changes reach the authorizer through an informer a moment after they are written.
    """
    attributes = {"verb": verb, "group": group, "resource": resource}
    if namespace:
        attributes["namespace"] = namespace
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "resourceAttributes": attributes},
    }
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
                        {
                            "apiVersion": "kubeai.org/v1",
                            "kind": "Model",
                            "name": name,
                            "uid": model["metadata"]["uid"],
                            "controller": True,
                        }
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


# The Pulumi engine, as the loop tests stand it in

ENGINE = "magicstick"


def engine_force(body: Mapping[str, Any]) -> bool:
    """Whether pulumi-kubernetes would apply `body` with force: its patchForce annotation is "true"."""
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return annotations.get(OWNED_FORCE_ANNOTATION) == "true"


def engine_apply(client: KubeClient, plan: Plan, applied: Mapping[str, DesiredObject]) -> dict[str, DesiredObject]:
    """Stand in for the Pulumi engine: apply what `plan` declares, delete what it no longer declares.

    As pulumi-kubernetes does it: server-side apply under the field manager `magicstick`, with
    force only when the object asks for it (`engine_force`), so a conflict with another manager
    fails the run; an object that ignores spec changes is created once and left alone; one
    retained on delete stays. The CPU runtime profiles go to their shared store, and stale
    generated objects are removed under their UID. Returns the
    declared objects by identity, the `applied` of the next call.

    Every body goes to the server as planned: CRDs with their CEL rules, custom resources with
    their `""` values, the policy/v1 PodDisruptionBudget as policy/v1.
    """
    declared = {obj.identity: obj for obj in plan.objects}
    for obj in declared.values():
        kind = kind_of(obj.body)
        if obj.ignore_spec_changes and client.get_or_none(kind, obj.name, obj.namespace) is not None:
            continue
        body = thaw(obj.body)
        client.apply(kind, body, field_manager=ENGINE, force=engine_force(body))
    for identity, obj in applied.items():
        if identity not in declared and not obj.retain_on_delete:
            try:
                client.delete(kind_of(obj.body), obj.name, obj.namespace)
            except NotFound:
                pass
    for profile in plan.models.cpu_profiles:
        put_profile(client, ProfileStoreRef(), profile.name, thaw(profile.body))
    for stale in plan.stale:
        remove_stale(
            client,
            StaleTarget(
                api_version=stale.api_version,
                kind=stale.kind,
                namespace=stale.namespace,
                name=stale.name,
                uid=stale.uid,
            ),
        )
    return declared


def write_planned_statuses(client: KubeClient, plan: Plan) -> int:
    """Write every status `plan` holds as the program's status resources do; the number written."""
    written = 0
    for update in plan.statuses:
        target = StatusTarget(
            api_version=update.api_version,
            kind=update.kind,
            namespace=update.namespace,
            name=update.name,
            status=thaw(update.status),
        )
        written += write_status(client, target)
    return written


# The controllers of the access path: helm-controller and Envoy Gateway

HELM_CONTROLLER = "helm-controller"
ENVOY_GATEWAY = "envoy-gateway"


def mark_helm_releases_ready(client: KubeClient, namespace: str) -> int:
    """Play helm-controller: every unsuspended HelmRelease becomes Ready for its current generation."""
    marked = 0
    for release in client.list(HELM_RELEASE, namespace=namespace):
        generation = release["metadata"]["generation"]
        if release["spec"].get("suspend") or (release.get("status") or {}).get("observedGeneration") == generation:
            continue
        message = f"Helm install succeeded for release {release['spec'].get('targetNamespace', namespace)}/{release['metadata']['name']}.v1"
        status = flux_status("True", reason="InstallSucceeded", message=message, observed_generation=generation)
        write_status_as(client, release, status, field_manager=HELM_CONTROLLER)
        marked += 1
    return marked


def accept_gateway_objects(client: KubeClient, namespace: str) -> int:
    """Play Envoy Gateway: every SecurityPolicy (its ancestor) and HTTPRoute (its parent) in
    `namespace` is accepted for its current generation, unless it already is, with the status
    Envoy Gateway writes (`accepted_gateway_status`, checked against its translator)."""
    accepted = 0
    for kind, key in ((SECURITY_POLICY, "ancestors"), (HTTP_ROUTE, "parents")):
        for obj in client.list(kind, namespace=namespace):
            generation = obj["metadata"]["generation"]
            entries = (obj.get("status") or {}).get(key) or ()
            if entries and all(
                c.get("observedGeneration") == generation for e in entries for c in e.get("conditions") or ()
            ):
                continue
            status = accepted_gateway_status(key, generation)
            write_status_as(client, obj, status, field_manager=ENVOY_GATEWAY)
            accepted += 1
    return accepted


DEPLOYMENT_CONTROLLER = "deployment-controller"


def roll_out_deployments(client: KubeClient, namespace: str) -> int:
    """Play the Deployment controller: every Deployment in `namespace` has rolled out its current
    generation with every replica available, unless its status already says so."""
    rolled = 0
    for deployment in client.list(DEPLOYMENT, namespace=namespace):
        generation = deployment["metadata"]["generation"]
        if (deployment.get("status") or {}).get("observedGeneration") == generation:
            continue
        replicas = deployment["spec"].get("replicas", 1)
        status = {
            "observedGeneration": generation,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
        }
        write_status_as(client, deployment, status, field_manager=DEPLOYMENT_CONTROLLER)
        rolled += 1
    return rolled
