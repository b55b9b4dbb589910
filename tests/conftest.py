"""Shared pytest configuration: the real kube-apiserver fixtures and the suite's markers.

Every marker is added at collection, never by hand:
- `cluster`: the test requests the `cluster` fixture (the test kube-apiserver), directly or
  through another fixture;
- `e2e`: it requests `engine_cluster` (the real Pulumi engine, tests/e2e) or `own_engine` (a
  test whose subject starts its own API server and engine, such as a benchmark);
- `peers`: it lives in tests/peers, where the real peers (egctl, helm, flux) judge, or it
  requests `ollama_engine` (the real Ollama, tests/support/ollama_server.py);
- `cluster_real` (and `cluster`): it requests `real_node` (a kubelet with containerd, tests/node)
  or `flux` (Flux's own controllers, tests/flux);
- `browser`: it lives in tests/browser (Debian's chromium and axe-core);
- `machine`: it needs the machine itself: root, network namespaces and Debian's netplan.io
  (scripts/system-packages.sh), such as the host agent's network actions;
- `pure`: none of the above. `pytest -m pure` runs it with no toolchain, no browser, no root
  and no system package; `make test-pure` does so with every tool hidden.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.cluster.conftest_plugin"]

CLUSTER_FIXTURE = "cluster"
ENGINE_FIXTURES = frozenset({"engine_cluster", "own_engine"})
PEER_TESTS = Path(__file__).resolve().parent / "peers"
PEER_FIXTURES = frozenset({"ollama_engine"})
BROWSER_TESTS = Path(__file__).resolve().parent / "browser"
REAL_PEER_FIXTURES = frozenset({"real_node", "flux"})
MACHINE_FIXTURES = frozenset({"namespace_interfaces"})
NOT_PURE = ("cluster", "e2e", "peers", "browser", "machine")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if CLUSTER_FIXTURE in fixtures:
            item.add_marker(pytest.mark.cluster)
        if ENGINE_FIXTURES & fixtures:
            item.add_marker(pytest.mark.e2e)
        if REAL_PEER_FIXTURES & fixtures:
            item.add_marker(pytest.mark.cluster)
            item.add_marker(pytest.mark.cluster_real)
        if item.path.is_relative_to(PEER_TESTS) or PEER_FIXTURES & fixtures:
            item.add_marker(pytest.mark.peers)
        if item.path.is_relative_to(BROWSER_TESTS):
            item.add_marker(pytest.mark.browser)
        if MACHINE_FIXTURES & fixtures:
            item.add_marker(pytest.mark.machine)
        if not any(item.get_closest_marker(name) for name in NOT_PURE):
            item.add_marker(pytest.mark.pure)


@pytest.fixture
def own_engine() -> None:
    """Requested by a test whose subject starts its own test API server and runs the real engine
    (a benchmark's `measure`): it gives nothing, and marks the test `e2e`."""
