"""Pytest fixtures for tests that run against a real kube-apiserver.

Register once, in tests/conftest.py: `pytest_plugins = ["tests.cluster.conftest_plugin"]`.

- `cluster` (session): etcd and kube-apiserver started once, the upstream CRDs installed
  once; a `ClusterInfo`. Nothing is built here: a missing binary fails the session with the
  command that builds it.
- `namespace` (function): a fresh namespace named after the test.
- `admin_client` (function): an httpx client for the API server as the admin.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import httpx
import pytest

from tests.cluster.apiserver import ClusterInfo, create_namespace, install_crds, running_cluster, upstream_crd_paths

NAME_LIMIT = 63
"""A namespace name is a DNS-1123 label."""


def namespace_name(test_name: str, serial: int) -> str:
    """A DNS-1123 label from a test's name, unique by `serial`, at most 63 characters. Pure."""
    suffix = f"-{serial}"
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")
    slug = slug.removeprefix("test-") or "test"
    return slug[: NAME_LIMIT - len(suffix)].rstrip("-") + suffix


@pytest.fixture(scope="session")
def cluster() -> Iterator[ClusterInfo]:
    with running_cluster() as info:
        install_crds(info, upstream_crd_paths())
        yield info


@pytest.fixture(scope="session")
def _namespace_serials() -> Iterator[int]:
    return itertools.count(1)


@pytest.fixture
def namespace(cluster: ClusterInfo, request: pytest.FixtureRequest, _namespace_serials: Iterator[int]) -> str:
    """A new namespace for this test. It is not deleted: without a controller manager it would
    stay Terminating anyway, and the whole cluster goes at the end of the session."""
    return create_namespace(cluster, namespace_name(request.node.name, next(_namespace_serials)))


@pytest.fixture
def admin_client(cluster: ClusterInfo) -> Iterator[httpx.Client]:
    with cluster.client() as client:
        yield client
