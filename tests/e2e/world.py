"""The demo appliance in the e2e suite's API server, and the controllers that server lacks.

The cluster holds what a user's would: the upstream CRDs the demo's snapshot shows served,
installed unmodified from `third_party/crds/`; the demo's objects (Node, NodeFeature, the
runtime custom resources, Flux's objects, KubeAI's Models and Pods) with the statuses their
controllers wrote. The program's own CRDs are not installed here: the program installs them.

`play_controllers` stands in for Flux's kustomize- and helm-controller, Envoy Gateway, KubeAI
and the Deployment controller: each writes, under its own field manager, the status its
controller writes for the current generation (tests/live/world.py), and nothing else. Ollama
itself is a double (tests/live/ollama_double.py) that the API server's pod proxy reaches.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from providers.kinds import CRD, KUBEAI_MODEL, POD
from providers.kube import KubeClient
from tests.cluster.apiserver import ClusterInfo, install_crds
from tests.live.ollama_double import OllamaDouble, tag_of
from tests.live.world import (
    KUBEAI,
    LOADER,
    accept_gateway_objects,
    ensure_namespace,
    load,
    mark_helm_releases_ready,
    mark_kustomizations_ready,
    play_kubeai,
    roll_out_deployments,
    write_status_as,
)
from tests.support.vendored import VENDORED_CRDS
from tests.toolchain import REPO_ROOT

DEMO_SNAPSHOT: Final = REPO_ROOT / "examples" / "demo" / "snapshot.yaml"
OWN_GROUP: Final = "appliance.magicstick.dev"
NAMESPACES: Final = ("ai-system", "flux-system", "ai", "identity-system", "node-feature-discovery", "kube-amd-gpu")
"""The namespaces of the demo's objects and of what the program declares for it."""

JsonObject = dict[str, Any]


def demo_documents(path: Path = DEMO_SNAPSHOT) -> list[JsonObject]:
    with path.open() as stream:
        return [document for document in yaml.safe_load_all(stream) if document]


def _vendored_crd_files() -> dict[str, Path]:
    """Upstream CRD name -> the vendored file that defines it."""
    files = {}
    for path in sorted(VENDORED_CRDS.rglob("*.yaml")):
        with path.open() as stream:
            for document in yaml.safe_load_all(stream):
                if isinstance(document, Mapping) and document.get("kind") == "CustomResourceDefinition":
                    files[document["metadata"]["name"]] = path
    return files


def upstream_crds_of(documents: list[JsonObject]) -> list[Path]:
    """The vendored files of the upstream CRDs `documents` list (ours excluded). A CRD that is
    not vendored is an error: the suite never stands in for a CRD."""
    vendored = _vendored_crd_files()
    names = [
        d["metadata"]["name"]
        for d in documents
        if d["kind"] == CRD.kind and not d["metadata"]["name"].endswith(f".{OWN_GROUP}")
    ]
    missing = [name for name in names if name not in vendored]
    if missing:
        raise LookupError(f"no vendored CRD for {', '.join(missing)} in {VENDORED_CRDS}")
    return sorted({vendored[name] for name in names})


def prepare_cluster(cluster: ClusterInfo, client: KubeClient, documents: list[JsonObject]) -> None:
    """The upstream CRDs and the namespaces, as a user's cluster has them before the first `pulumi up`."""
    install_crds(cluster, upstream_crds_of(documents))
    for namespace in NAMESPACES:
        ensure_namespace(client, namespace)


def objects_of(documents: list[JsonObject], *, own: bool) -> list[JsonObject]:
    """The demo's objects (no CRD): those of the program's own kinds, or all the others."""
    return [d for d in documents if d["kind"] != CRD.kind and d["apiVersion"].startswith(f"{OWN_GROUP}/") is own]


def load_demo(client: KubeClient, documents: list[JsonObject]) -> None:
    """Every object of the demo with its status: the world first, then the user's resources
    (which need the CRDs the program installed). A Pod is created as its controller would create
    it, naming the live owner's UID (the snapshot's UID names no live object, and the garbage
    collector would remove the Pod, possibly between its create and its status write)."""
    world = objects_of(documents, own=False)
    load(client, [d for d in world if d["kind"] != POD.kind])
    load(client, [_owned_by_live_objects(client, d) for d in world if d["kind"] == POD.kind])
    load(client, objects_of(documents, own=True))


def _owned_by_live_objects(client: KubeClient, pod: JsonObject) -> JsonObject:
    owners = []
    for owner in pod["metadata"].get("ownerReferences") or ():
        if owner.get("kind") == KUBEAI_MODEL.kind:
            live = client.get(KUBEAI_MODEL, owner["name"], pod["metadata"]["namespace"])
            owner = {**owner, "uid": live["metadata"]["uid"]}
        owners.append(owner)
    if not owners:
        return pod
    return {**pod, "metadata": {**pod["metadata"], "ownerReferences": owners}}


MODEL_NAMESPACE: Final = "ai"
OLLAMA_URL: Final = "ollama://"


def play_ollama(client: KubeClient, ollama: OllamaDouble, namespace: str = MODEL_NAMESPACE) -> int:
    """Play KubeAI and the kubelet for Ollama Models: each runs one Ready Pod, `<model>-0`,
    whose declared port and podIP are where the Ollama double listens, and the double holds the
    Model's source tag (Ollama pulled it). Other Pods of the Model are deleted. The number of
    Pods created."""
    created = 0
    for model in client.list(KUBEAI_MODEL, namespace=namespace):
        url = str(model["spec"].get("url", ""))
        if not url.startswith(OLLAMA_URL):
            continue
        ollama.tags.add(tag_of(url.removeprefix(OLLAMA_URL)))
        name = model["metadata"]["name"]
        pods = [
            pod
            for pod in client.list(POD, namespace=namespace)
            if (pod["metadata"].get("labels") or {}).get("model") == name
        ]
        if any(_serves(pod, ollama) for pod in pods):
            continue
        for pod in pods:
            client.delete(POD, pod["metadata"]["name"], namespace)
        owner = {
            "apiVersion": "kubeai.org/v1",
            "kind": "Model",
            "name": name,
            "uid": model["metadata"]["uid"],
            "controller": True,
        }
        container = {
            "name": "server",
            "image": "registry.example.com/ollama:CHANGEME",
            "ports": [{"name": "http", "containerPort": ollama.port}],
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-0",
                "namespace": namespace,
                "labels": {"model": name},
                "ownerReferences": [owner],
            },
            "spec": {"automountServiceAccountToken": False, "containers": [container]},
        }
        client.apply(POD, pod, field_manager=KUBEAI)
        running = {
            "phase": "Running",
            "podIP": ollama.host,
            "podIPs": [{"ip": ollama.host}],
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        }
        write_status_as(client, pod, running, field_manager=f"{LOADER}-kubelet")
        created += 1
    return created


def _serves(pod: Mapping[str, Any], ollama: OllamaDouble) -> bool:
    ports = [
        port.get("containerPort") for container in pod["spec"]["containers"] for port in container.get("ports") or ()
    ]
    return (pod.get("status") or {}).get("podIP") == ollama.host and ollama.port in ports


def play_platform(client: KubeClient) -> int:
    """One pass of Flux, helm-controller, Envoy Gateway and the Deployment controller; the number
    of statuses written."""
    written = mark_kustomizations_ready(client)
    for namespace in NAMESPACES:
        written += mark_helm_releases_ready(client, namespace)
        written += accept_gateway_objects(client, namespace)
        written += roll_out_deployments(client, namespace)
    return written


def play_controllers(client: KubeClient, ollama: OllamaDouble) -> int:
    """One pass of every controller stand-in; the number of objects and statuses written."""
    written = play_ollama(client, ollama)
    written += play_platform(client)
    written += play_kubeai(client, MODEL_NAMESPACE)
    return written
