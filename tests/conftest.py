"""Shared pytest configuration: the real kube-apiserver fixtures and the `cluster` marker.

A test needs the test kube-apiserver exactly when it requests the `cluster` fixture, directly
or through another fixture. Such tests are marked `cluster` at collection; the tests of the
real Pulumi engine (`engine_cluster`, tests/e2e, or `own_engine` for a test whose subject
starts its own API server and engine, such as a benchmark) are marked `e2e`; the tests in tests/peers,
where the real peers (egctl, helm, flux) judge what the program renders, are marked `peers`; the
tests on a real node (`real_node`: a kubelet with containerd, tests/node) and those Flux's own
controllers judge (`flux`: source-, kustomize- and helm-controller, tests/flux) are marked
`cluster_real` as well as `cluster`.
So `pytest -m "not cluster and not e2e and not peers"` runs everything else without the test
toolchain.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.cluster.conftest_plugin"]

CLUSTER_FIXTURE = "cluster"
ENGINE_FIXTURES = frozenset({"engine_cluster", "own_engine"})
PEER_TESTS = Path(__file__).resolve().parent / "peers"
REAL_PEER_FIXTURES = frozenset({"real_node", "flux"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if CLUSTER_FIXTURE in fixtures:
            item.add_marker(pytest.mark.cluster)
        if ENGINE_FIXTURES & set(fixtures):
            item.add_marker(pytest.mark.e2e)
        if REAL_PEER_FIXTURES & set(fixtures):
            item.add_marker(pytest.mark.cluster)
            item.add_marker(pytest.mark.cluster_real)
        if item.path.is_relative_to(PEER_TESTS):
            item.add_marker(pytest.mark.peers)


@pytest.fixture
def own_engine() -> None:
    """Requested by a test whose subject starts its own test API server and runs the real engine
    (a benchmark's `measure`): it gives nothing, and marks the test `e2e`."""
