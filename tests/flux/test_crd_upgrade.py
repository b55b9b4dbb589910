"""The program's CRDs on a cluster Flux installed, from one release to the next: Flux creates the
CRDs an earlier release shipped in the public base, the program of this commit upgrades them
without a conflict, and Flux never applies or prunes them again.

The earlier release is the one whose state tests/e2e/fixtures holds: its CRDs are that state's
inputs, the files that release committed (and shipped, since the public base's copy is the same
bytes). The served tree is this one with the public base's copy replaced by that release's. As in
tests/flux/test_program_on_flux.py, the entrypoint's first two links are played by their charts'
CRDs and the rest of the graph is the entrypoint's own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

import pytest
import yaml

from api.crdgen import load_committed_crds
from cli.crds import PUBLIC_BASE_DIRECTORY
from planning.settings import PlanSettings
from providers.kinds import APPLIANCE, CRD, KUSTOMIZATION
from providers.kube import KubeClient
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds
from tests.e2e.engine import REPO_ROOT, PulumiProject
from tests.e2e.lifecycle import changes, resource_type
from tests.e2e.upgrade_state import FIXTURES
from tests.flux.controllers import FluxControllers
from tests.flux.git_server import GitSource, serving_tree
from tests.flux.graph import (
    CHART_CRDS,
    FLUX_NAMESPACE,
    create_source,
    flux_command,
    later_links,
    schema_managers,
    wait_until_applied,
)
from tests.live.world import NAMESPACE
from tests.support.watching import watch_until_gone

pytestmark = pytest.mark.e2e

EARLIER_STATE: Final = min(FIXTURES.glob("state-*.json"))
PROGRAM_MANAGER: Final = PlanSettings().field_manager
TEST_MANAGER: Final = "magicstick-tests"
CRD_TYPE: Final = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
APPLIANCE_KUSTOMIZATION: Final = "magicstick-appliance"


def earlier_crds() -> dict[str, dict[str, Any]]:
    """The earlier release's CRDs, by name, as it committed them: its state's inputs without the
    annotations the program adds when it declares them."""
    exported = json.loads(EARLIER_STATE.read_text())
    found = {}
    for resource in exported["deployment"]["resources"]:
        if resource["type"] == CRD_TYPE:
            inputs = resource["inputs"]
            metadata = {key: value for key, value in inputs["metadata"].items() if key != "annotations"}
            found[metadata["name"]] = {**inputs, "metadata": metadata}
    return found


EARLIER: Final = earlier_crds()
CURRENT: Final = {crd["metadata"]["name"]: crd for crd in load_committed_crds()}


def declared(crd: dict[str, Any]) -> dict[str, Any]:
    """A CRD's spec without the conversion strategy, which the API server defaults."""
    return {key: value for key, value in crd["spec"].items() if key != "conversion"}


@pytest.fixture(scope="module")
def git_source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitSource]:
    """This tree, its public base shipping the earlier release's CRDs."""
    folder = PUBLIC_BASE_DIRECTORY.relative_to(REPO_ROOT)
    replaced = {str(folder / f"{name}.yaml"): yaml.safe_dump(crd, sort_keys=False) for name, crd in EARLIER.items()}
    with serving_tree(tmp_path_factory.mktemp("git"), replaced=replaced) as source:
        yield source


@pytest.fixture(scope="module")
def flux_created(
    flux: FluxControllers, flux_cluster: ClusterInfo, flux_admin: KubeClient, git_source: GitSource
) -> dict[str, dict[str, Any]]:
    """The CRDs once Flux has applied the entrypoint's last two links on a fresh cluster."""
    install_crds(flux_cluster, CHART_CRDS)
    create_source(flux_cluster.kubeconfig_path(ADMIN_USER), git_source)
    for document in later_links():
        kind = KUSTOMIZATION if document["kind"] == KUSTOMIZATION.kind else NAMESPACE
        flux_admin.apply(kind, document, field_manager=TEST_MANAGER, force=False)
    wait_until_applied(flux_admin, flux, APPLIANCE_KUSTOMIZATION, git_source.revision)
    return {name: flux_admin.get(CRD, name) for name in EARLIER}


@pytest.fixture(scope="module")
def project(flux_cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> PulumiProject:
    project = PulumiProject.create(tmp_path_factory.mktemp("pulumi"))
    project.config_set({"magicstick:kubeconfig": str(flux_cluster.kubeconfig_path(ADMIN_USER))})
    return project


@pytest.fixture(scope="module")
def upgraded(
    flux_created: dict[str, dict[str, Any]], flux_admin: KubeClient, project: PulumiProject
) -> dict[str, dict[str, Any]]:
    """The CRDs after the first run of this commit's program (a failed run fails the fixture)."""
    project.pulumi("up", "--yes", "--skip-preview")
    return {name: flux_admin.get(CRD, name) for name in CURRENT}


@pytest.fixture(scope="module")
def refreshed_changes(upgraded: dict[str, dict[str, Any]], project: PulumiProject) -> dict[str, str]:
    """What the next run changes, refreshing first as the operator's Stack does (deploy/stack.yaml)."""
    return changes(project.pulumi("up", "--yes", "--skip-preview", "--refresh", events=True))


@pytest.fixture(scope="module")
def reconciled_again(
    refreshed_changes: dict[str, str],
    flux: FluxControllers,
    flux_cluster: ClusterInfo,
    flux_admin: KubeClient,
    git_source: GitSource,
) -> dict[str, dict[str, Any]]:
    """The CRDs once Flux has reconciled the earlier release's tree again, after the upgrade."""
    output = flux_command(
        flux_cluster.kubeconfig_path(ADMIN_USER), "reconcile", "kustomization", APPLIANCE_KUSTOMIZATION
    )
    assert f"applied revision {git_source.revision}" in output, output
    wait_until_applied(flux_admin, flux, APPLIANCE_KUSTOMIZATION, git_source.revision)
    return {name: flux_admin.get(CRD, name) for name in CURRENT}


@pytest.fixture(scope="module")
def kustomization_deleted(
    reconciled_again: dict[str, dict[str, Any]], flux_cluster: ClusterInfo, flux_admin: KubeClient
) -> None:
    """`flux delete kustomization magicstick-appliance`, and Flux's garbage collection of what it applied."""
    flux_command(
        flux_cluster.kubeconfig_path(ADMIN_USER), "delete", "kustomization", APPLIANCE_KUSTOMIZATION, "--silent"
    )
    watch_until_gone(flux_admin, KUSTOMIZATION, FLUX_NAMESPACE, APPLIANCE_KUSTOMIZATION, 120.0)


def test_the_earlier_release_shipped_other_crds_than_this_one() -> None:
    assert set(EARLIER) <= set(CURRENT)
    assert [name for name in EARLIER if declared(EARLIER[name]) != declared(CURRENT[name])]


def test_flux_creates_the_crds_the_earlier_release_shipped(flux_created: dict[str, dict[str, Any]]) -> None:
    for name, crd in flux_created.items():
        assert declared(crd) == declared(EARLIER[name]), name
        assert schema_managers(crd) == {"kustomize-controller"}, name


def test_the_programs_run_upgrades_the_crds_flux_created(upgraded: dict[str, dict[str, Any]]) -> None:
    for name, crd in upgraded.items():
        assert declared(crd) == declared(CURRENT[name]), name


def test_after_the_upgrade_the_program_alone_owns_each_schema_it_changed(upgraded: dict[str, dict[str, Any]]) -> None:
    """So that a field a later release drops is dropped, not kept by Flux's ownership of it. A
    schema this release did not change stays shared with kustomize-controller, which applied the
    same values, until a release changes it."""
    changed = [name for name in EARLIER if declared(EARLIER[name]) != declared(CURRENT[name])]
    assert changed
    for name in changed:
        assert schema_managers(upgraded[name]) == {PROGRAM_MANAGER}, name


def test_a_refreshing_run_after_the_upgrade_changes_no_crd(refreshed_changes: dict[str, str]) -> None:
    assert {urn: op for urn, op in refreshed_changes.items() if resource_type(urn) == CRD_TYPE} == {}


def test_flux_never_applies_the_earlier_crds_again(reconciled_again: dict[str, dict[str, Any]]) -> None:
    for name, crd in reconciled_again.items():
        assert declared(crd) == declared(CURRENT[name]), name


def test_deleting_the_appliances_kustomization_prunes_appliance_local_and_keeps_the_crds(
    kustomization_deleted: None, flux_admin: KubeClient
) -> None:
    assert flux_admin.get_or_none(APPLIANCE, "local", "ai-system") is None
    for name in CURRENT:
        assert flux_admin.get_or_none(CRD, name) is not None, name
