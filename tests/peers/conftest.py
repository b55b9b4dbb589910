"""Fixtures the peers tests share."""

from __future__ import annotations

import pytest

from tests.cluster.apiserver import ClusterInfo
from tests.peers.schemas import Schemas


@pytest.fixture(scope="session")
def schemas(cluster: ClusterInfo) -> Schemas:
    """The verdict on every kind: CRD schemas, and the test API server for built-in kinds."""
    return Schemas(cluster)
