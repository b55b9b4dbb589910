"""Fixtures the peers tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from providers.kube import KubeAccess, KubeClient, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds, running_cluster, upstream_crd_paths
from tests.e2e.lifecycle import GARBAGE_COLLECTION
from tests.live.world import ensure_namespace
from tests.peers import helm
from tests.peers.kubeai_chart import RELEASE_NAMESPACE, ReleaseRender, render_release
from tests.peers.kubeai_controller import KubeAIController, running_kubeai
from tests.peers.schemas import Schemas

KUBEAI_CONTROLLERS_SETTING = "KUBEAI_CLUSTER_CONTROLLERS"
"""A test module's constant naming the kube-controller-manager controllers its KubeAI cluster runs."""


@pytest.fixture(scope="session")
def schemas(cluster: ClusterInfo) -> Schemas:
    """The verdict on every kind: CRD schemas, and the test API server for built-in kinds."""
    return Schemas(cluster)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> ReleaseRender:
    """The program's renders and the KubeAI chart rendered with the release's values."""
    return render_release(tmp_path_factory.mktemp("kubeai-release"), template=helm.template)


@pytest.fixture(scope="module")
def kubeai_cluster(request: pytest.FixtureRequest) -> Iterator[ClusterInfo]:
    """An API server of the test module's own, for KubeAI in the fixed namespace `ai`: the
    garbage collector deletes Pods with their Model, as in a cluster, and the module's
    KUBEAI_CLUSTER_CONTROLLERS, when it has them, run instead."""
    controllers = getattr(request.module, KUBEAI_CONTROLLERS_SETTING, GARBAGE_COLLECTION)
    with running_cluster(controllers=controllers) as info:
        install_crds(info, upstream_crd_paths())
        yield info


@pytest.fixture(scope="module")
def kubeai_admin(kubeai_cluster: ClusterInfo) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(kubeai_cluster.kubeconfig_path(ADMIN_USER)))) as client:
        ensure_namespace(client, RELEASE_NAMESPACE)
        yield client


@pytest.fixture(scope="module")
def kubeai_controller(
    kubeai_cluster: ClusterInfo,
    kubeai_admin: KubeClient,
    release: ReleaseRender,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[KubeAIController]:
    """KubeAI's controller process, as the chart's ServiceAccount with the chart's system.yaml."""
    with running_kubeai(
        kubeai_cluster, tmp_path_factory.mktemp("kubeai"), namespace=RELEASE_NAMESPACE, chart_objects=release.objects
    ) as controller:
        yield controller
