"""The rest of the entrypoint's order, and the program's generated Kustomizations, reconciled by
Flux's real controllers against the served tree, with the program run by the real engine.

The entrypoint's first two links cannot become Ready on a machine without the internet (their
charts are OCI artifacts on registry.k8s.io and ghcr.io; tests/flux/test_entrypoint.py shows
the graph waiting on the first). So this module starts where they would have left the cluster:
the CRDs their charts install (NFD's and PKO's, the vendored files), and the entrypoint's own
`magicstick-operator` and `magicstick-appliance` Kustomizations as `kubectl kustomize` builds
them, the operator's `dependsOn` on those two dropped. Then, in order:

1. Flux applies `./deploy` (the program's ServiceAccount, RBAC, state volume, PKO Stack,
   reconcile trigger), then the program's CRDs and Appliance/local, in one pass each: no
   Kustomization records a failed reconciliation on the way;
2. the program's first run adopts the CRDs Flux created (tests/flux/test_crd_upgrade.py shows
   it upgrading an earlier release's);
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
from dataclasses import dataclass
from typing import Any, Final

import pytest

from api.crdgen import load_committed_crds
from catalogs import load_catalogs
from planning.settings import PlanSettings
from providers.kinds import APPLIANCE, CRD, HELM_RELEASE, KUSTOMIZATION, MODULE_ACTIVATION, STACK
from providers.kube import KubeClient, ResourceKind
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds
from tests.e2e.engine import PulumiProject
from tests.flux.controllers import FluxControllers
from tests.flux.git_server import GitSource
from tests.flux.graph import (
    CHART_CRDS,
    FLUX_NAMESPACE,
    Ready,
    Verdict,
    applied,
    create_source,
    failed_with,
    kustomize_controller_warnings,
    later_links,
    schema_managers,
    verdicts_until,
    wait_until_applied,
    wait_until_ready_is,
)
from tests.flux.releases import SOURCE_FAILURE_REASONS, UNREACHABLE_RELEASES, WAITING_RELEASES
from tests.live.world import NAMESPACE, SERVICE_ACCOUNT

pytestmark = pytest.mark.e2e

CATALOGS: Final = load_catalogs()
TEST_MANAGER: Final = "magicstick-tests"
PROGRAM_MANAGER: Final = PlanSettings().field_manager
REQUESTED_MODULES: Final = tuple(sorted({*UNREACHABLE_RELEASES, "odysseus"} - {"basis", "litellm"}))
"""Modules the test requests by ModuleActivation; basis and litellm come from the default Appliance/local."""
PERSISTENT_VOLUME_CLAIM: Final = ResourceKind(
    group="", version="v1", kind="PersistentVolumeClaim", plural="persistentvolumeclaims", namespaced=True
)
OWN_CRDS: Final = tuple(sorted(crd["metadata"]["name"] for crd in load_committed_crds()))


@dataclass(frozen=True)
class FirstInstall:
    """A fresh cluster once Flux has applied the entrypoint's last two links, before the program ran."""

    verdicts: list[Verdict]
    """Every Ready condition the Kustomizations showed from the moment the links were applied."""
    appliance: dict[str, Any] | None
    crds: dict[str, dict[str, Any] | None]


@pytest.fixture(scope="module")
def project(flux_cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> PulumiProject:
    project = PulumiProject.create(tmp_path_factory.mktemp("pulumi"))
    project.config_set({"magicstick:kubeconfig": str(flux_cluster.kubeconfig_path(ADMIN_USER))})
    return project


def _up(project: PulumiProject) -> None:
    project.pulumi("up", "--yes", "--skip-preview")


@pytest.fixture(scope="module")
def first_install(
    flux: FluxControllers, flux_cluster: ClusterInfo, flux_admin: KubeClient, git_source: GitSource
) -> FirstInstall:
    """The cluster once Flux has applied `./deploy` through the entrypoint's magicstick-operator
    and then magicstick-appliance, with every verdict Flux wrote on the way."""
    install_crds(flux_cluster, CHART_CRDS)
    create_source(flux_cluster.kubeconfig_path(ADMIN_USER), git_source)
    since = flux_admin.list_collection(KUSTOMIZATION, namespace=FLUX_NAMESPACE).resource_version
    for document in later_links():
        kind = KUSTOMIZATION if document["kind"] == KUSTOMIZATION.kind else NAMESPACE
        flux_admin.apply(kind, document, field_manager=TEST_MANAGER, force=False)
    verdicts = verdicts_until(flux_admin, flux, since, applied("magicstick-appliance", git_source.revision))
    wait_until_applied(flux_admin, flux, "magicstick-operator", git_source.revision)
    return FirstInstall(
        verdicts=verdicts,
        appliance=flux_admin.get_or_none(APPLIANCE, "local", "ai-system"),
        crds={name: flux_admin.get_or_none(CRD, name) for name in OWN_CRDS},
    )


@pytest.fixture(scope="module")
def adopted(first_install: FirstInstall, flux_admin: KubeClient, project: PulumiProject) -> dict[str, dict[str, Any]]:
    """The program's CRDs after its first run, which finds them created by Flux."""
    _up(project)
    return {name: flux_admin.get(CRD, name) for name in OWN_CRDS}


@pytest.fixture(scope="module")
def modules_reconciled(
    adopted: dict[str, dict[str, Any]],
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


def test_flux_applies_the_programs_install_from_deploy(first_install: FirstInstall, flux_admin: KubeClient) -> None:
    assert flux_admin.get_or_none(STACK, "magicstick", "ai-system") is not None
    assert flux_admin.get_or_none(SERVICE_ACCOUNT, "magicstick-program", "ai-system") is not None
    state = flux_admin.get(PERSISTENT_VOLUME_CLAIM, "magicstick-state", "ai-system")
    assert state["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"] == "disabled"


def test_no_kustomization_of_a_fresh_install_records_a_failed_reconciliation(first_install: FirstInstall) -> None:
    assert {verdict.name for verdict in first_install.verdicts} == {"magicstick-operator", "magicstick-appliance"}
    assert [verdict for verdict in first_install.verdicts if verdict.failed] == []


def test_kustomize_controller_warns_about_nothing_on_a_fresh_install(
    first_install: FirstInstall, flux_admin: KubeClient
) -> None:
    assert kustomize_controller_warnings(flux_admin) == []


def test_flux_applies_appliance_local_with_the_programs_crds_before_the_programs_first_run(
    first_install: FirstInstall,
) -> None:
    assert first_install.appliance is not None
    assert first_install.appliance["spec"]["source"]["name"] == "flux-system"
    for name, crd in first_install.crds.items():
        assert crd is not None, name
        assert crd["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] == "magicstick-appliance", name


def test_the_programs_first_run_adopts_the_crds_flux_created(adopted: dict[str, dict[str, Any]]) -> None:
    for name, crd in adopted.items():
        assert PROGRAM_MANAGER in schema_managers(crd), name


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
