"""Shared pytest configuration: the real kube-apiserver fixtures and the `cluster` marker.

A test needs the test kube-apiserver exactly when it requests the `cluster` fixture, directly
or through another fixture. Such tests are marked `cluster` at collection, so
`pytest -m "not cluster"` runs everything else without a test API server.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.cluster.conftest_plugin"]

CLUSTER_FIXTURE = "cluster"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if CLUSTER_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.cluster)
