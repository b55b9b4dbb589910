"""Applying a user's manifests to the real node's cluster as `kubectl apply --server-side` would.

Each document's resource (plural, namespaced) comes from the API server's discovery, so a
manifest of any kind applies without a table of kinds here. A manifest's CRDs go in first
through `install_crds` (tests/cluster/apiserver.py), which waits until they are served.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from providers.kube import KubeClient, NotFound, ResourceKind

JsonObject = dict[str, Any]


def documents_of(path: Path) -> list[JsonObject]:
    with path.open() as stream:
        return [document for document in yaml.safe_load_all(stream) if document]


def kustomize(directory: Path) -> list[JsonObject]:
    """What `kubectl kustomize DIRECTORY` renders (the `kubectl apply -k` a user runs)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise FileNotFoundError("kubectl is not on PATH (the machine image has kubectl 1.33)")
    rendered = subprocess.run(
        [kubectl, "kustomize", str(directory)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return [document for document in yaml.safe_load_all(rendered) if document]


def _discovered(client: KubeClient, api_version: str, kind: str) -> ResourceKind | None:
    group, _, version = api_version.rpartition("/")
    try:
        listing = client.request("GET", f"/apis/{api_version}" if group else f"/api/{version}")
    except NotFound:
        return None
    for resource in listing.get("resources") or ():
        if resource.get("kind") == kind and "/" not in resource["name"]:
            return ResourceKind(
                group=group,
                version=version,
                kind=kind,
                plural=resource["name"],
                namespaced=bool(resource["namespaced"]),
            )
    return None


def kind_of(client: KubeClient, document: JsonObject) -> ResourceKind:
    """The served resource of the document's kind; a kind the server does not serve is an error
    (install a manifest's CRDs with `install_crds` first: it waits until they are served)."""
    found = _discovered(client, document["apiVersion"], document["kind"])
    if found is None:
        raise LookupError(f"the API server serves no {document['kind']} in {document['apiVersion']}")
    return found


def apply_all(client: KubeClient, documents: Iterable[JsonObject], *, field_manager: str) -> None:
    """Server-side apply of each document in order, as `kubectl apply --server-side` (no force)."""
    for document in documents:
        client.apply(kind_of(client, document), document, field_manager=field_manager, force=False)
