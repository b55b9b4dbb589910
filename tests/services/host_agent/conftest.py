"""Fixtures of the host agent's tests against the test API server (world.py)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from providers.kube import KubeAccess, KubeClient, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.services.host_agent.world import AgentWorld, install, new_world

_NODES = itertools.count(1)


@pytest.fixture(scope="session")
def host_agent_installed(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> ClusterInfo:
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as admin:
        install(cluster, admin, tmp_path_factory.mktemp("host-agent-crds"))
    return cluster


@pytest.fixture
def admin(host_agent_installed: ClusterInfo) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(host_agent_installed.kubeconfig_path(ADMIN_USER)))) as client:
        yield client


@pytest.fixture
def world(host_agent_installed: ClusterInfo, admin: KubeClient, tmp_path: Path) -> Iterator[AgentWorld]:
    yield from new_world(host_agent_installed, admin, tmp_path, name=f"agent-node-{next(_NODES)}")
