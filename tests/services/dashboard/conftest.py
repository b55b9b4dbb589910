"""The running dashboard against the test API server, once per module that asks for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.apiserver import ClusterInfo
from tests.services.dashboard.world import World, running_world


@pytest.fixture(scope="module")
def world(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield from running_world(cluster, tmp_path_factory.mktemp("dashboard"))
