"""Flux itself builds every Kustomization of the GitOps tree and of the program, with the settings
ConfigMap read from the test API server; the result passes the schema checks, leaves no
variable behind, and equals what the in-repo stand-in gives (tests/gitops/tree.py
`flux_build_kustomization`: `kubectl kustomize` with the Kustomization's patches, then its own
post-build substitution), which the pure suite uses.

The Kustomizations and the ConfigMap are stored in a namespace of this module's own, not in
flux-system, which other tests of the session read: Flux looks the ConfigMaps of
`substituteFrom` up in the Kustomization's namespace, so nothing else changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from api import peer_kinds
from providers.kube import KubeAccess, KubeClient, ResourceKind, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, create_namespace
from tests.gitops.tree import flux_build_kustomization, identity
from tests.peers.flux import (
    JsonObject,
    build_kustomization,
    envsubst_strict,
    program_kustomizations,
    settings_config_map,
    tree_kustomizations,
    without_owner_labels,
)

CONFIG_MAP = ResourceKind(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
KUSTOMIZATION = ResourceKind(
    group=peer_kinds.FLUX_KUSTOMIZATION.group,
    version=peer_kinds.FLUX_KUSTOMIZATION.version,
    kind=peer_kinds.FLUX_KUSTOMIZATION.kind,
    plural=peer_kinds.FLUX_KUSTOMIZATION.plural,
    namespaced=True,
)
FIELD_MANAGER = "flux-build-test"
KUSTOMIZATIONS = [("tree", k) for k in tree_kustomizations()] + [("program", k) for k in program_kustomizations()]


@dataclass(frozen=True)
class Stage:
    """Where the Kustomizations are stored, and how to reach it."""

    namespace: str
    kubeconfig: Path
    settings: dict[str, str]


@pytest.fixture(scope="module")
def stage(cluster: ClusterInfo) -> Stage:
    namespace = create_namespace(cluster, "flux-build")
    settings = settings_config_map()
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as client:
        client.apply(CONFIG_MAP, _in(settings, namespace), field_manager=FIELD_MANAGER)
    return Stage(namespace, cluster.kubeconfig_path(ADMIN_USER), dict(settings["data"]))


@pytest.fixture
def admin(stage: Stage, cluster: ClusterInfo) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(stage.kubeconfig))) as client:
        yield client


def _in(obj: JsonObject, namespace: str) -> JsonObject:
    return {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}


@dataclass(frozen=True)
class Built:
    kustomization: JsonObject
    objects: list[JsonObject]
    text: str


def _build(origin_and_kustomization: tuple[str, JsonObject], stage: Stage, admin: KubeClient) -> Built:
    _, kustomization = origin_and_kustomization
    stored = _in(kustomization, stage.namespace)
    admin.apply(KUSTOMIZATION, stored, field_manager=FIELD_MANAGER)
    answer = build_kustomization(stored, kubeconfig=stage.kubeconfig)
    assert answer.returncode == 0, f"flux build kustomization {kustomization['metadata']['name']}: {answer.stderr}"
    return Built(kustomization, answer.objects(), answer.stdout)


def _ids(entries: list[tuple[str, JsonObject]]) -> list[str]:
    return [f"{origin}:{k['metadata']['name']}" for origin, k in entries]


def test_the_kustomizations_cover_the_tree_and_every_module():
    origins = {origin for origin, _ in KUSTOMIZATIONS}
    assert origins == {"tree", "program"}
    assert len([k for origin, k in KUSTOMIZATIONS if origin == "tree"]) >= 4


@pytest.mark.parametrize("entry", KUSTOMIZATIONS, ids=_ids(KUSTOMIZATIONS))
def test_flux_builds_the_kustomization_with_every_variable_substituted(entry, stage, admin):
    built = _build(entry, stage, admin)
    assert built.objects, "a Kustomization that builds nothing"
    again = envsubst_strict(built.text, {})
    assert again.returncode == 0, f"a variable is left after the build: {again.stderr}"
    assert again.objects() == built.objects


@pytest.mark.parametrize("entry", KUSTOMIZATIONS, ids=_ids(KUSTOMIZATIONS))
def test_every_object_flux_builds_passes_its_schema(entry, stage, admin, schemas):
    built = _build(entry, stage, admin)
    namespace = built.kustomization["spec"].get("targetNamespace") or stage.namespace
    problems = {identity(obj): schemas.errors(obj, namespace=namespace) for obj in built.objects}
    assert {key: found for key, found in problems.items() if found} == {}


@pytest.mark.parametrize("entry", KUSTOMIZATIONS, ids=_ids(KUSTOMIZATIONS))
def test_the_in_repo_stand_in_builds_what_flux_builds(entry, stage, admin):
    built = _build(entry, stage, admin)
    stand_in = flux_build_kustomization(built.kustomization, stage.settings)
    assert _by_identity(stand_in) == _by_identity(without_owner_labels(built.objects))


def _by_identity(objects: list[JsonObject]) -> dict[str, Any]:
    return {identity(obj): obj for obj in objects}
