"""The rest of the entrypoint's order, and the program's generated Kustomizations, reconciled by
Flux's real controllers against the served tree, with the program run by the real engine.

The entrypoint's first two links cannot become Ready on a machine without the internet (their
charts are OCI artifacts on registry.k8s.io and ghcr.io; tests/flux/test_entrypoint.py shows
the graph waiting on the first). So this module starts where they would have left the cluster:
the CRDs their charts install (NFD's and PKO's, the vendored files), and the entrypoint's own
`magicstick-operator` and `magicstick-appliance` Kustomizations as `kubectl kustomize` builds
them, the operator's `dependsOn` on those two dropped. Then, in order:

1. Flux applies `./deploy` (the program's ServiceAccount, RBAC, state volume, PKO Stack,
   reconcile trigger);
2. Appliance/local cannot be applied until the program's first run installs its CRD, and is
   applied by `flux reconcile kustomization magicstick-appliance`;
3. the next run, with every module whose chart comes from outside this repository requested,
   generates a Kustomization per module, which Flux reconciles against the same source: a
   module without charts becomes Ready; the others apply HelmReleases that fail on their source
   (OCI artifacts, Helm repositories, another Git repository: none reachable here), and the
   releases behind them in their own base wait;
4. the run after that reports each failure in Appliance/local's module status, naming the
   release, and the modules that depend on a failed one wait.
"""

from __future__ import annotations

import subprocess
from typing import Any, Final

import pytest

from catalogs import load_catalogs
from providers.kinds import APPLIANCE, HELM_RELEASE, KUSTOMIZATION, MODULE_ACTIVATION, STACK
from providers.kube import KubeClient, ResourceKind
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds
from tests.e2e.engine import PulumiProject
from tests.flux.controllers import FluxControllers
from tests.flux.git_server import GitSource
from tests.flux.graph import (
    FLUX_NAMESPACE,
    Ready,
    built,
    create_source,
    failed_with,
    flux_command,
    wait_until_applied,
    wait_until_ready_is,
)
from tests.flux.releases import SOURCE_FAILURE_REASONS, UNREACHABLE_RELEASES, WAITING_RELEASES
from tests.live.world import NAMESPACE, SERVICE_ACCOUNT
from tests.support.vendored import VENDORED_CRDS

pytestmark = pytest.mark.e2e

CATALOGS: Final = load_catalogs()
CHART_CRDS: Final = (
    VENDORED_CRDS / "node-feature-discovery" / "nfd-api-crds.yaml",
    *sorted((VENDORED_CRDS / "pulumi-kubernetes-operator").glob("*.yaml")),
)
"""What the node-feature-discovery and pulumi-kubernetes-operator releases would have installed first."""
FIRST_LINKS: Final = frozenset({"node-feature-discovery", "pulumi-kubernetes-operator"})
TEST_MANAGER: Final = "magicstick-tests"
REQUESTED_MODULES: Final = tuple(sorted({*UNREACHABLE_RELEASES, "odysseus"} - {"basis", "litellm"}))
"""Modules the test requests by ModuleActivation; basis and litellm come from the default Appliance/local."""
PERSISTENT_VOLUME_CLAIM: Final = ResourceKind(
    group="", version="v1", kind="PersistentVolumeClaim", plural="persistentvolumeclaims", namespaced=True
)


def _later_links() -> list[dict[str, Any]]:
    """The entrypoint's magicstick-operator and magicstick-appliance Kustomizations, the
    operator's dependencies on the first two links removed."""
    kustomizations = {
        d["metadata"]["name"]: d
        for d in built("magic-cluster/flux/entrypoints/base")
        if d["kind"] == KUSTOMIZATION.kind
    }
    operator, appliance = kustomizations["magicstick-operator"], kustomizations["magicstick-appliance"]
    assert {d["name"] for d in operator["spec"]["dependsOn"]} == FIRST_LINKS
    del operator["spec"]["dependsOn"]
    assert appliance["spec"]["dependsOn"] == [{"name": "magicstick-operator"}]
    return [operator, appliance]


@pytest.fixture(scope="module")
def project(flux_cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> PulumiProject:
    project = PulumiProject.create(tmp_path_factory.mktemp("pulumi"))
    project.config_set({"magicstick:kubeconfig": str(flux_cluster.kubeconfig_path(ADMIN_USER))})
    return project


def _up(project: PulumiProject) -> None:
    project.pulumi("up", "--yes", "--skip-preview")


@pytest.fixture(scope="module")
def operator_applied(
    flux: FluxControllers, flux_cluster: ClusterInfo, flux_admin: KubeClient, git_source: GitSource
) -> dict[str, Any]:
    """The cluster once Flux has applied `./deploy` through the entrypoint's magicstick-operator."""
    install_crds(flux_cluster, CHART_CRDS)
    create_source(flux_cluster.kubeconfig_path(ADMIN_USER), git_source)
    namespaces = [d for d in built("magic-cluster/flux/entrypoints/base") if d["kind"] == "Namespace"]
    for document in (*namespaces, *_later_links()):
        kind = KUSTOMIZATION if document["kind"] == KUSTOMIZATION.kind else NAMESPACE
        flux_admin.apply(kind, document, field_manager=TEST_MANAGER, force=False)
    return wait_until_applied(flux_admin, flux, "magicstick-operator", git_source.revision)


@pytest.fixture(scope="module")
def appliance_applied(
    operator_applied: dict[str, Any],
    flux: FluxControllers,
    flux_cluster: ClusterInfo,
    flux_admin: KubeClient,
    git_source: GitSource,
    project: PulumiProject,
) -> dict[str, Any]:
    """Appliance/local once the program's first run has installed its CRD and `flux reconcile`
    (as deploy/README.md tells a user) has applied it."""
    kubeconfig = flux_cluster.kubeconfig_path(ADMIN_USER)
    waiting = wait_until_ready_is(
        flux_admin,
        flux,
        KUSTOMIZATION,
        "magicstick-appliance",
        lambda ready: ready.status == "False" and ready.reason != "DependencyNotReady",
    )
    _up(project)
    reconciled = flux_command(kubeconfig, "reconcile", "kustomization", "magicstick-appliance")
    assert f"applied revision {git_source.revision}" in reconciled, reconciled
    wait_until_applied(flux_admin, flux, "magicstick-appliance", git_source.revision)
    return {"waiting": waiting, "appliance": flux_admin.get(APPLIANCE, "local", "ai-system")}


@pytest.fixture(scope="module")
def modules_reconciled(
    appliance_applied: dict[str, Any],
    flux: FluxControllers,
    flux_admin: KubeClient,
    git_source: GitSource,
    project: PulumiProject,
) -> None:
    """The program's second run, with every module whose chart is unreachable requested and
    odysseus (a module without charts), and Flux's reconciliation of the Kustomizations it
    generated."""
    for module in REQUESTED_MODULES:
        activation = {
            "apiVersion": MODULE_ACTIVATION.api_version,
            "kind": MODULE_ACTIVATION.kind,
            "metadata": {"name": module, "namespace": "ai-system"},
            "spec": {"module": module, "enabled": True},
        }
        flux_admin.apply(MODULE_ACTIVATION, activation, field_manager=TEST_MANAGER, force=False)
    _up(project)
    wait_until_applied(flux_admin, flux, "app-odysseus", git_source.revision)
    for releases in UNREACHABLE_RELEASES.values():
        for namespace, name in releases:
            wait_until_ready_is(flux_admin, flux, HELM_RELEASE, name, failed_on_source, namespace=namespace)


def failed_on_source(ready: Ready) -> bool:
    """helm-controller's verdict on a release whose chart source has failed: Ready=False with a
    reason that is not one of its progress reasons."""
    return ready.status == "False" and ready.reason not in ("Progressing", "ProgressingWithRetry", "DependencyNotReady")


def kustomization_of(module: str) -> str:
    return CATALOGS.modules.require(module).kustomization


@pytest.fixture(scope="module")
def reported(modules_reconciled: None, flux_admin: KubeClient, project: PulumiProject) -> dict[str, Any]:
    """Appliance/local's status after the program's third run, which observes what Flux did."""
    _up(project)
    return flux_admin.get(APPLIANCE, "local", "ai-system")["status"]


def test_flux_applies_the_programs_install_from_deploy(
    operator_applied: dict[str, Any], flux_admin: KubeClient
) -> None:
    assert flux_admin.get_or_none(STACK, "magicstick", "ai-system") is not None
    assert flux_admin.get_or_none(SERVICE_ACCOUNT, "magicstick-program", "ai-system") is not None
    state = flux_admin.get(PERSISTENT_VOLUME_CLAIM, "magicstick-state", "ai-system")
    assert state["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"] == "disabled"


def test_the_appliance_waits_for_the_crd_the_programs_first_run_installs(appliance_applied: dict[str, Any]) -> None:
    ready = Ready.of(appliance_applied["waiting"])
    assert ready is not None and "Appliance" in ready.message, ready
    assert appliance_applied["appliance"]["spec"]["source"]["name"] == "flux-system"


def test_the_generated_kustomizations_reconcile_against_the_served_source(
    modules_reconciled: None, flux_admin: KubeClient, git_source: GitSource
) -> None:
    generated = {
        k["metadata"]["name"]: k
        for k in flux_admin.list(
            KUSTOMIZATION, namespace=FLUX_NAMESPACE, label_selector="app.kubernetes.io/managed-by=magicstick"
        )
    }
    expected = {kustomization_of(module) for module in (*UNREACHABLE_RELEASES, "odysseus")}
    assert expected <= set(generated), sorted(expected - set(generated))
    for name in sorted(expected):
        assert generated[name]["spec"]["sourceRef"]["name"] == "flux-system"
        assert generated[name]["status"]["lastAttemptedRevision"] == git_source.revision, name


def test_each_unreachable_chart_fails_on_its_source(modules_reconciled: None, flux_admin: KubeClient) -> None:
    reasons = {}
    for module, releases in UNREACHABLE_RELEASES.items():
        for namespace, name in releases:
            release = flux_admin.get(HELM_RELEASE, name, namespace)
            assert release["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] == kustomization_of(module)
            ready = Ready.of(release)
            assert ready is not None and failed_on_source(ready), (name, ready)
            reasons[name] = ready.reason
    assert set(reasons.values()) <= SOURCE_FAILURE_REASONS, reasons


def test_a_release_behind_a_failed_one_in_its_own_base_waits_for_it(
    modules_reconciled: None, flux: FluxControllers, flux_admin: KubeClient
) -> None:
    for (namespace, name), dependency in WAITING_RELEASES.items():
        waiting = wait_until_ready_is(
            flux_admin, flux, HELM_RELEASE, name, failed_with("DependencyNotReady"), namespace=namespace
        )
        assert f"dependency 'flux-system/{dependency}' is not ready" in str(Ready.of(waiting))


def test_the_appliance_names_each_failed_release_in_its_module(reported: dict[str, Any]) -> None:
    modules = reported["modules"]
    for module, releases in UNREACHABLE_RELEASES.items():
        assert modules[module]["phase"] == "Degraded", (module, modules[module])
        for namespace, name in releases:
            assert f"HelmRelease {namespace}/{name} failed (" in modules[module]["message"], (module, modules[module])


def test_kubectl_shows_the_failed_release_in_the_appliances_module_status(
    reported: dict[str, Any], flux_cluster: ClusterInfo
) -> None:
    """The command deploy/README.md gives a user to read a module's status."""
    command = [
        "kubectl",
        f"--kubeconfig={flux_cluster.kubeconfig_path(ADMIN_USER)}",
        "-n",
        "ai-system",
        "get",
        "appliance",
        "local",
        "-o",
        "jsonpath={.status.modules.basis.message}",
    ]
    shown = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert shown == reported["modules"]["basis"]["message"]
    assert "HelmRelease flux-system/envoy-gateway failed (SourceNotReady)" in shown


def test_a_module_without_charts_is_ready_and_the_appliance_is_degraded(reported: dict[str, Any]) -> None:
    assert reported["modules"]["odysseus"]["phase"] == "Ready", reported["modules"]["odysseus"]
    assert reported["phase"] == "Degraded"
    ready = next(c for c in reported["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and all(module in ready["message"] for module in UNREACHABLE_RELEASES), ready


def test_dependents_of_a_failed_module_wait_without_a_kustomization(
    reported: dict[str, Any], flux_admin: KubeClient
) -> None:
    for module, kustomization in (("dashboard", "platform-dashboard"), ("model-catalog", "app-model-catalog")):
        assert reported["modules"][module]["phase"] == "WaitingForModules", reported["modules"][module]
        assert flux_admin.get_or_none(KUSTOMIZATION, kustomization, FLUX_NAMESPACE) is None, kustomization
