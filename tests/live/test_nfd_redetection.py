"""Node Feature Discovery re-detects a node's hardware every 60 s
(magic-cluster/platform/node-feature-discovery, `sleepInterval: 60s`, held by
tests/gitops/test_node_feature_discovery.py) and relabels the Node. The program's next pass sees
the change: observed with its own live reader from the test API server, then planned.

NFD is played as it writes: nfd-worker's NodeFeature (`node-feature-discovery/<node>`, its PCI
devices; the vendored CRD validates it) and nfd-master's labels on the Node
(`feature.node.kubernetes.io/pci-<class>_<vendor>.present: "true"`, the default label of a PCI
device) with the annotation listing the labels it manages, each under its own field manager.

The API server is this module's own, as a fresh appliance's: Flux's, NFD's and the program's
CRDs, and no GPU operator's. The session's server serves all three operators' CRDs, which the
program rightly reads as operators another installation owns (Conflict, nothing requested).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Final

import pytest
import yaml

from api.crdgen import load_committed_crds
from catalogs import load_catalogs
from planning.frozen import thaw
from planning.plan import Plan, plan
from planning.settings import PlanSettings
from providers.kinds import MODULE_ACTIVATION, NODE, NODE_FEATURE
from providers.kube import KubeAccess, KubeClient, open_client
from providers.live_reader import read_snapshot
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, create_namespace, install_crds, running_cluster
from tests.cluster.conftest_plugin import namespace_name
from tests.live.world import ensure_namespace, load
from tests.planning.builders import appliance
from tests.planning.hardware.nodes import node, node_feature
from tests.support.vendored import VENDORED_CRDS

NOW: Final = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
NODE_NAME: Final = "nfd-node"
NIC: Final = ("0200", "10ec", "8125")
"""A network card: a PCI device of the node that is no GPU."""
FEATURE_LABELS: Final = "nfd.node.kubernetes.io/feature-labels"
"""nfd-master's annotation: every feature label it manages on the Node, without the prefix."""
PREFIX: Final = "feature.node.kubernetes.io/"
CATALOGS: Final = load_catalogs()
PROVIDERS: Final = tuple(entry for entry in CATALOGS.modules.entries if entry.hardware_provider)
FRESH_APPLIANCE_CRDS: Final = (
    "flux-kustomize-controller/kustomize.toolkit.fluxcd.io_kustomizations.yaml",
    "flux-helm-controller/helm.toolkit.fluxcd.io_helmreleases.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_gitrepositories.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_ocirepositories.yaml",
    "node-feature-discovery/nfd-api-crds.yaml",
)
SERIALS: Final = itertools.count(1)


def _gpu_label(vendor: str) -> str:
    return f"{PREFIX}pci-0300_{vendor}.present"


def nfd_detects(admin: KubeClient, *devices: tuple[str, str, str]) -> None:
    """One NFD pass finding `devices` (class, vendor, device) on the node: nfd-worker's
    NodeFeature, then nfd-master's labels (a label gone is removed) and its annotation."""
    admin.apply(NODE_FEATURE, node_feature(NODE_NAME, *devices), field_manager="nfd-worker")
    found = {f"pci-{cls}_{vendor}.present" for cls, vendor, _ in devices}
    current = admin.get(NODE, NODE_NAME)["metadata"]
    managed = set((current.get("annotations") or {}).get(FEATURE_LABELS, "").split(",")) - {""}
    labels: dict[str, str | None] = {f"{PREFIX}{name}": None for name in managed - found}
    labels |= {f"{PREFIX}{name}": "true" for name in found}
    admin.request(
        "PATCH",
        NODE.object_path(NODE_NAME),
        params={"fieldManager": "nfd-master"},
        body={"metadata": {"labels": labels, "annotations": {FEATURE_LABELS: ",".join(sorted(found))}}},
        content_type="application/merge-patch+json",
    )


def next_pass(access: KubeAccess, namespace: str) -> Plan:
    """The program's next run: the live snapshot, then the plan."""
    return plan(
        snapshot=read_snapshot(access, system_namespace=namespace),
        catalogs=CATALOGS,
        now=NOW,
        settings=PlanSettings(system_namespace=namespace),
        own_crds=load_committed_crds(),
    )


def hardware(result: Plan, module: str) -> dict[str, Any]:
    (appliance_status,) = [s for s in result.statuses if s.kind == "Appliance"]
    status: dict[str, Any] = thaw(appliance_status.status)["hardwareOperators"][module]
    return status


def seeded(result: Plan) -> set[str]:
    return {str(obj.body["spec"]["module"]) for obj in result.modules.seeded_activations}


@pytest.fixture(scope="module")
def fresh_cluster(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterInfo]:
    """An API server of this module's own (`cluster` only marks the suite), with the CRDs a fresh
    appliance serves before any GPU operator is installed."""
    own = tmp_path_factory.mktemp("own-crds")
    for crd in load_committed_crds():
        (own / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd))
    with running_cluster() as info:
        install_crds(info, [*(VENDORED_CRDS / name for name in FRESH_APPLIANCE_CRDS), own])
        yield info


@pytest.fixture
def fresh_access(fresh_cluster: ClusterInfo) -> KubeAccess:
    return KubeAccess(kubeconfig=str(fresh_cluster.kubeconfig_path(ADMIN_USER)))


@pytest.fixture
def fresh_admin(fresh_access: KubeAccess) -> Iterator[KubeClient]:
    with open_client(fresh_access) as client:
        yield client


@pytest.fixture
def cpu_node(fresh_admin: KubeClient, fresh_cluster: ClusterInfo, request: pytest.FixtureRequest) -> Iterator[str]:
    """Appliance/local in a system namespace of its own and one Linux amd64 node on which NFD
    found a network card; the node is deleted after."""
    namespace = create_namespace(fresh_cluster, namespace_name(request.node.name, next(SERIALS)))
    for shared in ("flux-system", "ai", "node-feature-discovery"):
        ensure_namespace(fresh_admin, shared)
    obj = appliance()
    load(fresh_admin, [{**obj, "metadata": {**obj["metadata"], "namespace": namespace}}, node(NODE_NAME)])
    nfd_detects(fresh_admin, NIC)
    yield namespace
    fresh_admin.delete(NODE, NODE_NAME)


@pytest.mark.parametrize("entry", PROVIDERS, ids=lambda entry: entry.name)
def test_a_gpu_nfd_labels_is_requested_on_the_next_pass_and_forgotten_when_nfd_removes_the_label(
    entry, cpu_node, fresh_admin, fresh_access
):
    assert entry.pci_vendor is not None
    before = next_pass(fresh_access, cpu_node)
    assert seeded(before) == set()
    assert hardware(before, entry.name)["phase"] == "NotRequired"

    nfd_detects(fresh_admin, NIC, ("0300", entry.pci_vendor, "abcd"))
    assert fresh_admin.get(NODE, NODE_NAME)["metadata"]["labels"][_gpu_label(entry.pci_vendor)] == "true"
    appeared = next_pass(fresh_access, cpu_node)
    assert seeded(appeared) == {entry.name}
    status = hardware(appeared, entry.name)
    assert (status["phase"], status["detectedNodes"], status["deviceCount"]) == ("Installing", [NODE_NAME], 1)
    assert (status["needed"], status["managedBy"]) == (True, "magicstick")

    nfd_detects(fresh_admin, NIC)
    assert _gpu_label(entry.pci_vendor) not in fresh_admin.get(NODE, NODE_NAME)["metadata"]["labels"]
    vanished = next_pass(fresh_access, cpu_node)
    assert seeded(vanished) == set()
    status = hardware(vanished, entry.name)
    assert (status["phase"], status["detectedNodes"], status["deviceCount"]) == ("NotRequired", [], 0)


def test_a_gpu_that_vanishes_after_its_operator_was_requested_keeps_the_operator_but_is_no_longer_reported(
    cpu_node, fresh_admin, fresh_access
):
    nfd_detects(fresh_admin, NIC, ("0300", "10de", "2684"))
    (requested,) = next_pass(fresh_access, cpu_node).modules.seeded_activations
    fresh_admin.apply(MODULE_ACTIVATION, thaw(requested.body), field_manager="magicstick")

    nfd_detects(fresh_admin, NIC)
    vanished = next_pass(fresh_access, cpu_node)
    assert seeded(vanished) == {"gpu"}
    assert vanished.modules.outcome("gpu") is not None
    status = hardware(vanished, "gpu")
    assert (status["detectedNodes"], status["deviceCount"], status["needed"]) == ([], 0, False)
    assert status["message"].startswith("No node reports a GPU of PCI vendor 10de")
