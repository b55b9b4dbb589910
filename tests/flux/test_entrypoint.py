"""Flux applies the single-node entrypoint from the served tree: the graph's objects, its order,
and the first chart this machine cannot reach.

Node Feature Discovery comes first and alone; the Pulumi Kubernetes Operator waits for it, the
program's `./deploy` for both, and Appliance/local for the program. NFD's chart is an OCI
artifact on registry.k8s.io, which no test machine reaches: its OCIRepository fails to pull, its
HelmRelease fails on that source, and the rest of the graph waits, as Flux's `dependsOn` says.
"""

from __future__ import annotations

from typing import Final

import pytest

from providers.kinds import HELM_RELEASE, KUSTOMIZATION
from providers.kube import KubeClient
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.flux.controllers import FluxControllers
from tests.flux.git_server import GitSource
from tests.flux.graph import (
    FLUX_NAMESPACE,
    GIT_REPOSITORY,
    OCI_REPOSITORY,
    Ready,
    bootstrap,
    failed_with,
    flux_command,
    wait_until_applied,
    wait_until_ready_is,
)
from tests.live.world import NAMESPACE

GRAPH: Final = ("node-feature-discovery", "pulumi-kubernetes-operator", "magicstick-operator", "magicstick-appliance")
WAITS_FOR: Final = {
    "pulumi-kubernetes-operator": "node-feature-discovery",
    "magicstick-operator": "node-feature-discovery",
    "magicstick-appliance": "magicstick-operator",
}
"""The first dependency each Kustomization of the graph names while node-feature-discovery is not Ready."""


@pytest.fixture(scope="module")
def bootstrapped(
    flux: FluxControllers, flux_cluster: ClusterInfo, flux_admin: KubeClient, git_source: GitSource
) -> dict:
    """The cluster once Flux has applied the entrypoint at the served commit."""
    output = bootstrap(flux_cluster.kubeconfig_path(ADMIN_USER), git_source)
    assert f"fetched revision: {git_source.revision}" in output, output
    return wait_until_applied(flux_admin, flux, "flux-system", git_source.revision)


def test_flux_applies_the_entrypoint_at_the_served_commit(bootstrapped: dict, git_source: GitSource) -> None:
    assert "Applied revision: " + git_source.revision in str(Ready.of(bootstrapped))


def test_the_entrypoints_git_repository_never_repoints_the_bootstrapped_one(
    bootstrapped: dict, flux_admin: KubeClient, git_source: GitSource
) -> None:
    repository = flux_admin.get(GIT_REPOSITORY, "flux-system", FLUX_NAMESPACE)
    assert repository["spec"]["url"] == git_source.url
    assert repository["status"]["artifact"]["revision"] == git_source.revision


def test_the_entrypoint_creates_the_namespaces_every_run_reads(bootstrapped: dict, flux_admin: KubeClient) -> None:
    for name in ("ai-system", "identity-system", "ai"):
        assert flux_admin.get_or_none(NAMESPACE, name) is not None, name


def test_every_kustomization_of_the_graph_is_applied(bootstrapped: dict, flux_admin: KubeClient) -> None:
    names = {k["metadata"]["name"] for k in flux_admin.list(KUSTOMIZATION, namespace=FLUX_NAMESPACE)}
    assert set(GRAPH) <= names


def test_node_feature_discoverys_chart_fails_on_its_unreachable_source(
    bootstrapped: dict, flux: FluxControllers, flux_admin: KubeClient
) -> None:
    source = wait_until_ready_is(
        flux_admin, flux, OCI_REPOSITORY, "node-feature-discovery", failed_with("OCIArtifactPullFailed")
    )
    assert "registry.k8s.io" in str(Ready.of(source))
    release = wait_until_ready_is(
        flux_admin, flux, HELM_RELEASE, "node-feature-discovery", failed_with("SourceNotReady")
    )
    message = Ready.of(release)
    assert message is not None and "OCIRepository 'flux-system/node-feature-discovery' is not ready" in message.message


def test_node_feature_discovery_waits_for_its_release_and_the_rest_of_the_graph_waits_for_it(
    bootstrapped: dict, flux: FluxControllers, flux_admin: KubeClient
) -> None:
    first = flux_admin.get(KUSTOMIZATION, "node-feature-discovery", FLUX_NAMESPACE)
    ready = Ready.of(first)
    assert ready is not None and ready.status != "True", ready
    for name, dependency in WAITS_FOR.items():
        waiting = wait_until_ready_is(flux_admin, flux, KUSTOMIZATION, name, failed_with("DependencyNotReady"))
        assert f"dependency 'flux-system/{dependency}' is not ready" in str(Ready.of(waiting)), name
        assert "lastAppliedRevision" not in waiting["status"], (
            f"{name} applied something before its dependencies were Ready"
        )


def test_nothing_behind_node_feature_discovery_is_applied(
    bootstrapped: dict, flux: FluxControllers, flux_admin: KubeClient
) -> None:
    wait_until_ready_is(
        flux_admin, flux, KUSTOMIZATION, "pulumi-kubernetes-operator", failed_with("DependencyNotReady")
    )
    releases = {r["metadata"]["name"] for r in flux_admin.list(HELM_RELEASE, namespace=FLUX_NAMESPACE)}
    assert releases == {"node-feature-discovery"}


def test_flux_get_shows_the_graph_waiting_and_the_release_failing_on_its_source(
    bootstrapped: dict, flux: FluxControllers, flux_cluster: ClusterInfo, flux_admin: KubeClient
) -> None:
    """The commands deploy/README.md gives a user to watch the install."""
    wait_until_ready_is(flux_admin, flux, KUSTOMIZATION, "magicstick-appliance", failed_with("DependencyNotReady"))
    wait_until_ready_is(flux_admin, flux, HELM_RELEASE, "node-feature-discovery", failed_with("SourceNotReady"))
    kubeconfig = flux_cluster.kubeconfig_path(ADMIN_USER)
    kustomizations = flux_command(kubeconfig, "get", "kustomizations")
    for name in GRAPH:
        assert name in kustomizations, kustomizations
    assert "dependency 'flux-system/magicstick-operator' is not ready" in kustomizations, kustomizations
    releases = flux_command(kubeconfig, "get", "helmreleases", "--all-namespaces")
    assert "OCIRepository 'flux-system/node-feature-discovery' is not ready" in releases, releases
