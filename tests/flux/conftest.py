"""Fixtures of the Flux suite: an API server of its own, Flux's three controllers against it,
and this repository's GitOps tree served over HTTP as the `flux-system` GitRepository reads it.

The suite's API server is not the session's `cluster`: the tree owns fixed namespaces
(flux-system, ai-system, ai, identity-system) that other tests also use and clean. It runs the
garbage collector and the namespace controller, as a cluster does for what Flux prunes.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from providers.kube import KubeAccess, KubeClient, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds, running_cluster
from tests.e2e.lifecycle import GARBAGE_COLLECTION
from tests.flux.controllers import FluxControllers, flux_crd_paths, running_flux
from tests.flux.git_server import GitSource, serving_tree
from tests.live.world import ensure_namespace


@pytest.fixture(scope="module")
def flux_cluster() -> Iterator[ClusterInfo]:
    """A fresh API server per test module with Flux's CRDs (the vendored ones) and flux-system."""
    with running_cluster(controllers=GARBAGE_COLLECTION) as info:
        install_crds(info, flux_crd_paths())
        yield info


@pytest.fixture(scope="module")
def flux_admin(flux_cluster: ClusterInfo) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(flux_cluster.kubeconfig_path(ADMIN_USER)))) as client:
        ensure_namespace(client, "flux-system")
        yield client


@pytest.fixture(scope="module")
def git_source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitSource]:
    with serving_tree(tmp_path_factory.mktemp("git")) as source:
        yield source


@pytest.fixture(scope="module")
def flux(
    flux_cluster: ClusterInfo, flux_admin: KubeClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FluxControllers]:
    """source-, kustomize- and helm-controller running against the suite's API server."""
    with running_flux(flux_cluster, tmp_path_factory.mktemp("flux")) as controllers:
        yield controllers
