"""Read the snapshot from a live cluster: one paginated LIST per kind, nothing else.

Invariant 1, fail closed: any failed read raises SnapshotReadError naming the kind and the
server's answer, and the run stops before a single resource is declared. A kind whose API is
not served yet (a first install before the CRDs exist, or before Flux installed KubeAI) is
not a failure: discovery says so, and the kind reads as empty.

Secrets are never read. NodeFeatures are read across namespaces: Node Feature Discovery keeps
them in its own namespace, which the installation chooses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from planning.models.kubeai import MODEL_SERVER_PORT
from planning.settings import FLUX_NAMESPACE
from planning.snapshot import OllamaObservation, Snapshot, SnapshotError
from providers.kinds import (
    APPLIANCE,
    APPLIANCE_SETUP,
    APP_INSTANCE,
    CONFIG_MAP,
    CRD,
    HELM_RELEASE,
    HOST_OPERATION,
    HTTP_ROUTE,
    KUBEAI_MODEL,
    KUSTOMIZATION,
    MODEL_ACTIVATION,
    MODULE_ACTIVATION,
    NODE,
    NODE_FEATURE,
    POD,
    REFERENCE_GRANT,
    SECURITY_POLICY,
)
from providers.kube import KubeAccess, KubeClient, KubeError, ResourceKind, open_client
from providers.ollama import list_tags, memory_sample

SETUP_NAMESPACE = "identity-system"


class SnapshotReadError(Exception):
    """The cluster could not be read completely; the message names the kind and the server's answer."""


@dataclass(frozen=True)
class Read:
    """One LIST: a kind, in one namespace or (namespace None) across the cluster."""

    kind: ResourceKind
    namespace: str | None = None
    label_selector: str | None = None


DEFAULT_MODEL_NAMESPACE = "ai"
MODEL_POD_SELECTOR = "model"
"""KubeAI labels every model Pod with `model: <Model name>`; the selector keeps other Pods out."""


def reads(system_namespace: str, model_namespaces: Iterable[str] = (DEFAULT_MODEL_NAMESPACE,)) -> tuple[Read, ...]:
    """Every LIST one observation makes, in a fixed order.

    KubeAI Models, their Pods and ReferenceGrants are read in each namespace a ModelActivation
    or an AppInstance targets; their number grows with namespaces, never with objects. The
    Gateway routes and policies live in the system namespace, beside the shared Gateway.
    """
    per_namespace = tuple(
        read
        for namespace in sorted(set(model_namespaces))
        for read in (Read(KUBEAI_MODEL, namespace), Read(POD, namespace, MODEL_POD_SELECTOR), Read(REFERENCE_GRANT, namespace))
    )
    return (
        Read(CRD),
        Read(NODE),
        Read(NODE_FEATURE),
        Read(APPLIANCE, system_namespace),
        Read(MODULE_ACTIVATION, system_namespace),
        Read(MODEL_ACTIVATION, system_namespace),
        Read(APP_INSTANCE, system_namespace),
        Read(HOST_OPERATION, system_namespace),
        Read(APPLIANCE_SETUP, SETUP_NAMESPACE),
        Read(KUSTOMIZATION, FLUX_NAMESPACE),
        Read(CONFIG_MAP, FLUX_NAMESPACE),
        Read(CONFIG_MAP, system_namespace),
        Read(HELM_RELEASE, system_namespace),
        Read(HTTP_ROUTE, system_namespace),
        Read(SECURITY_POLICY, system_namespace),
    ) + per_namespace


def read_objects(client: KubeClient, plan: Iterable[Read]) -> list[dict[str, Any]]:
    """Raw objects of every served kind in `plan`. Raises SnapshotReadError on any failure."""
    served: dict[tuple[str, str], frozenset[str] | None] = {}
    objects: list[dict[str, Any]] = []
    for read in plan:
        kind = read.kind
        key = (kind.group, kind.version)
        try:
            if key not in served:
                served[key] = client.served_resources(kind.group, kind.version)
            resources = served[key]
            if resources is None or kind.plural not in resources:
                continue
            objects.extend(client.list(kind, namespace=read.namespace, label_selector=read.label_selector))
        except KubeError as error:
            where = f" in namespace {read.namespace}" if read.namespace else ""
            raise SnapshotReadError(
                f"reading {kind.kind} ({kind.api_version}){where} failed: {error.detail}"
            ) from error
    return objects


def model_namespaces(objects: Iterable[dict[str, Any]], system_namespace: str) -> tuple[str, ...]:
    """The namespaces the ModelActivations and AppInstances of `system_namespace` target (default `ai`)."""
    found = {DEFAULT_MODEL_NAMESPACE}
    for obj in objects:
        if obj.get("kind") in ("ModelActivation", "AppInstance") and obj["metadata"].get("namespace") == system_namespace:
            target = (obj.get("spec") or {}).get("targetNamespace")
            if isinstance(target, str) and target:
                found.add(target)
    return tuple(sorted(found))


def observe_ollama(client: KubeClient, objects: Iterable[dict[str, Any]]) -> tuple[OllamaObservation, ...]:
    """Tags and memory of every Ready Pod of an Ollama Model, through the API server's pod proxy.

    A Pod that does not answer is not a failed observation of the cluster: its error is kept
    and becomes that model's status.
    """
    ollama_models = {
        (o["metadata"]["namespace"], o["metadata"].get("uid"))
        for o in objects
        if o.get("kind") == "Model" and (o.get("spec") or {}).get("engine") == "OLlama"
    }
    found = []
    for pod in objects:
        if pod.get("kind") != "Pod" or not _ready(pod):
            continue
        namespace = pod["metadata"]["namespace"]
        owners = {(namespace, o.get("uid")) for o in pod["metadata"].get("ownerReferences") or () if o.get("controller")}
        if not owners & ollama_models:
            continue
        name = pod["metadata"]["name"]
        try:
            tags = list_tags(client, namespace, name, port=MODEL_SERVER_PORT)
            sample = memory_sample(client, namespace, name, port=MODEL_SERVER_PORT)
        except KubeError as error:
            found.append(OllamaObservation(namespace=namespace, pod=name, error=error.detail))
            continue
        found.append(
            OllamaObservation(
                namespace=namespace,
                pod=name,
                tags=tags,
                ram_mi=sample.ram_mi if sample else None,
                vram_mi=sample.vram_mi if sample else None,
                total_mi=sample.total_mi if sample else None,
            )
        )
    return tuple(found)


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
    )


def read_live_objects(client: KubeClient, system_namespace: str) -> list[dict[str, Any]]:
    """Everything one observation LISTs: the fixed kinds first, then the model namespaces."""
    fixed = reads(system_namespace, ())
    per_namespace_kinds = (KUBEAI_MODEL, POD, REFERENCE_GRANT)
    objects = read_objects(client, [r for r in fixed if r.kind not in per_namespace_kinds])
    targets = model_namespaces(objects, system_namespace)
    per_namespace = [r for r in reads(system_namespace, targets) if r.kind in per_namespace_kinds]
    return objects + read_objects(client, per_namespace)


def read_snapshot(access: KubeAccess, *, system_namespace: str) -> Snapshot:
    with open_client(access) as client:
        objects = read_live_objects(client, system_namespace)
        ollama = observe_ollama(client, objects)
    try:
        return Snapshot.from_objects(objects, ollama=ollama)
    except SnapshotError as error:
        raise SnapshotReadError(f"the cluster returned an unreadable object: {error}") from error
