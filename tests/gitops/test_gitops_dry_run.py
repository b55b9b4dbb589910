"""The whole GitOps tree passes a server-side dry run on the test API server, with the upstream
CRDs (and the program's own) installed: every object of every entrypoint, of the demo overlay,
of every module base (after post-build substitution; once more with each optional component of
a module switched on) and of every chart the tree installs from
this repository (the shared Gateway and each instance chart with the values the program renders).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from providers.kube import KubeAccess, KubeClient, ResourceKind, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds
from tests.deploy.program_identity import ensure_namespaces, ensure_own_crds
from tests.gitops.instance_values import program_releases
from tests.gitops.tree import (
    DEMO_OVERLAY,
    ENTRYPOINTS,
    build,
    flux_build,
    flux_build_kustomization,
    identity,
    in_repository,
    module_entries,
    of_kind,
    render_chart,
)
from tests.live.world import ensure_namespace
from tests.support.vendored import VENDORED_CRDS

EXTRA_CRDS = (
    "gateway-api/gateway.networking.k8s.io_gatewayclasses.yaml",
    "gateway-api/gateway.networking.k8s.io_gateways.yaml",
    "openclaw-operator/openclaw.rocks_openclawinstances.yaml",
    "hermes-operator/hermes.agent_hermesinstances.yaml",
    "paperclip-operator/paperclip.inc_instances.yaml",
    "kubeopencode/kubeopencode.io_agenttemplates.yaml",
    "kubeopencode/kubeopencode.io_agents.yaml",
)
"""Upstream CRDs of the kinds the tree's own charts render, beyond the session's."""
FIELD_MANAGER = "kustomize-controller"


def _gateway_chart() -> list[dict]:
    (basis,) = [e for e in module_entries() if e.name == "basis"]
    (gateway,) = [
        r
        for r in of_kind(build(in_repository(basis.path)), "HelmRelease")
        if r["metadata"]["name"] == "magicstick-gateway"
    ]
    spec = gateway["spec"]
    return render_chart(
        in_repository(spec["chart"]["spec"]["chart"]),
        spec["values"],
        release="magicstick-gateway",
        namespace=spec["targetNamespace"],
    )


def _every_object() -> list[tuple[str, dict]]:
    found: list[tuple[str, dict]] = []
    for path in (*ENTRYPOINTS, DEMO_OVERLAY):
        found += [(path, obj) for obj in build(path)]
    for entry in module_entries():
        base = flux_build(in_repository(entry.path))
        found += [(entry.name, obj) for obj in base]
        for component in sorted(p.component for p in entry.parameters if p.component is not None):
            switched_on = {
                "metadata": {"name": entry.kustomization},
                "spec": {"path": entry.path, "components": [component]},
            }
            found += [
                (f"{entry.name} with {component}", obj)
                for obj in flux_build_kustomization(switched_on)
                if obj not in base
            ]
    found += [("basis gateway chart", obj) for obj in _gateway_chart()]
    for release in program_releases():
        found += [
            (release.label, obj)
            for obj in render_chart(release.chart, release.values, release=release.release, namespace=release.namespace)
        ]
    return found


OBJECTS = _every_object()


@pytest.fixture(scope="module")
def tree_cluster(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> ClusterInfo:
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as client:
        ensure_namespaces(client)
        ensure_own_crds(cluster, client, tmp_path_factory.mktemp("own-crds"))
    install_crds(cluster, [VENDORED_CRDS / relative for relative in EXTRA_CRDS])
    return cluster


@pytest.fixture
def admin(tree_cluster: ClusterInfo) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(tree_cluster.kubeconfig_path(ADMIN_USER)))) as client:
        yield client


def resource_kind(cluster: ClusterInfo, discovery: Discovery, api_version: str, kind: str) -> ResourceKind:
    """Where the API server serves `kind`, from its discovery document."""
    plural, namespaced = _discovered(cluster, discovery, api_version)[kind]
    group, _, version = api_version.rpartition("/")
    return ResourceKind(group=group, version=version, kind=kind, plural=plural, namespaced=namespaced)


Discovery = dict[str, dict[str, tuple[str, bool]]]
"""Discovery documents by apiVersion: kind -> (plural, namespaced)."""


@pytest.fixture(scope="module")
def discovery() -> Discovery:
    """Filled as the tests ask, so each discovery document is read once per module."""
    return {}


def _discovered(cluster: ClusterInfo, discovery: Discovery, api_version: str) -> dict[str, tuple[str, bool]]:
    if api_version not in discovery:
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        with cluster.client() as http:
            answer = http.get(path)
        answer.raise_for_status()
        discovery[api_version] = {
            r["kind"]: (r["name"], r["namespaced"]) for r in answer.json()["resources"] if "/" not in r["name"]
        }
    return discovery[api_version]


@pytest.mark.parametrize(("source", "obj"), OBJECTS, ids=[f"{source}:{identity(obj)}" for source, obj in OBJECTS])
def test_every_object_of_the_gitops_tree_passes_a_server_side_dry_run(source, obj, tree_cluster, admin, discovery):
    namespace = obj["metadata"].get("namespace")
    if namespace:
        ensure_namespace(admin, namespace)
    kind = resource_kind(tree_cluster, discovery, obj["apiVersion"], obj["kind"])
    answered = admin.apply(kind, obj, field_manager=FIELD_MANAGER, dry_run=True)
    assert answered["metadata"]["name"] == obj["metadata"]["name"], source
