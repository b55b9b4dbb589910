"""Shared pytest configuration: the real kube-apiserver fixtures and the `cluster` marker.

A test needs the test kube-apiserver exactly when it requests the `cluster` fixture, directly
or through another fixture. Such tests are marked `cluster` at collection; the tests of the
real Pulumi engine (`engine_cluster`, tests/e2e) are marked `e2e`. So
`pytest -m "not cluster and not e2e"` runs everything else without a test API server.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.cluster.conftest_plugin"]

CLUSTER_FIXTURE = "cluster"
ENGINE_FIXTURE = "engine_cluster"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if CLUSTER_FIXTURE in fixtures:
            item.add_marker(pytest.mark.cluster)
        if ENGINE_FIXTURE in fixtures:
            item.add_marker(pytest.mark.e2e)
