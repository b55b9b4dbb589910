"""The real node of the `cluster_real` tests: one kubelet with containerd for the session's API server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.apiserver import ClusterInfo
from tests.node.node import RealNode, running_node


@pytest.fixture(scope="session")
def real_node(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNode]:
    with running_node(cluster, tmp_path_factory.mktemp("real-node")) as node:
        yield node
