"""The real node of the `cluster_real` tests: one kubelet with containerd, on an API server of its own.

`node_cluster` is not the session's `cluster`: it runs kube-scheduler and the
kube-controller-manager controllers a node's workloads need (Deployments and their ReplicaSets,
StatefulSets, the binding of PersistentVolumeClaims to PersistentVolumes, ServiceAccounts, the root CA ConfigMap of each namespace, EndpointSlices, node lifecycle, which
lifts the not-ready taint, PodDisruptionBudgets' status, garbage collection and namespace
deletion), so Deployments roll out as on any cluster. It listens on the node's address, which
Pods reach through the `kubernetes` Service (kube-proxy, tests/node/node.py). The images of
scripts/images/build.sh are imported into the node's containerd when the node starts.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.apiserver import ClusterInfo, create_namespace, running_cluster
from tests.cluster.conftest_plugin import namespace_name
from tests.images import (
    KUBEAI_IMAGE,
    OLLAMA_IMAGE,
    OPERATOR_IMAGE,
    SERVICE_IMAGES,
    WORKSPACE_IMAGE,
    LocalImage,
    local_image,
)
from tests.node.node import NODE_CONTROLLERS, RealNode, node_ip, running_node


@pytest.fixture(scope="session")
def node_cluster() -> Iterator[ClusterInfo]:
    with running_cluster(controllers=NODE_CONTROLLERS, scheduler=True, address=node_ip()) as info:
        yield info


@pytest.fixture(scope="session")
def service_images() -> dict[str, LocalImage]:
    """The service images the node imports (scripts/images/build.sh builds them)."""
    return {name: local_image(name) for name in SERVICE_IMAGES}


@pytest.fixture(scope="session")
def workspace_image() -> LocalImage:
    """The workspace image of the in-cluster program (scripts/images/build.sh builds it)."""
    return local_image(WORKSPACE_IMAGE)


@pytest.fixture(scope="session")
def operator_image() -> LocalImage:
    """The Pulumi Kubernetes Operator's image, from the toolchain's build (scripts/images/build.sh)."""
    return local_image(OPERATOR_IMAGE)


@pytest.fixture(scope="session")
def kubeai_image() -> LocalImage:
    """KubeAI's controller, from the toolchain's build (scripts/images/build.sh)."""
    return local_image(KUBEAI_IMAGE)


@pytest.fixture(scope="session")
def ollama_image() -> LocalImage:
    """Ollama's server with its CPU engine, from the toolchain's build (scripts/images/build.sh)."""
    return local_image(OLLAMA_IMAGE)


@pytest.fixture(scope="session")
def real_node(
    node_cluster: ClusterInfo,
    service_images: dict[str, LocalImage],
    workspace_image: LocalImage,
    operator_image: LocalImage,
    kubeai_image: LocalImage,
    ollama_image: LocalImage,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealNode]:
    images = (*service_images.values(), workspace_image, operator_image, kubeai_image, ollama_image)
    with running_node(node_cluster, tmp_path_factory.mktemp("real-node"), images=images) as node:
        yield node


@pytest.fixture
def node_namespace(node_cluster: ClusterInfo, request: pytest.FixtureRequest, _namespace_serials: Iterator[int]) -> str:
    """A new namespace of the node's cluster for this test."""
    return create_namespace(node_cluster, namespace_name(request.node.name, next(_namespace_serials)))
