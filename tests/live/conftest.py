"""Fixtures for tests of the program against the real apiserver."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.crdgen import load_committed_crds
from providers.kinds import (
    APPLIANCE_KINDS,
    CONFIG_MAP,
    HELM_RELEASE,
    HTTP_ROUTE,
    KUBEAI_MODEL,
    KUSTOMIZATION,
    NODE,
    NODE_FEATURE,
    POD,
    REFERENCE_GRANT,
    SECURITY_POLICY,
)
from providers.kube import KubeAccess, KubeClient, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds
from tests.live.ollama_double import OllamaDouble, proxyable_host_address, running_ollama
from tests.live.world import delete_all, ensure_namespace

SHARED_NAMESPACES = ("ai-system", "flux-system", "identity-system", "node-feature-discovery", "kube-amd-gpu", "ai")


@pytest.fixture(scope="session")
def own_crds(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> ClusterInfo:
    """The program's own CRDs, installed once (as the program itself would on its first run)."""
    directory: Path = tmp_path_factory.mktemp("own-crds")
    for crd in load_committed_crds():
        (directory / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd))
    install_crds(cluster, [directory])
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as client:
        for name in SHARED_NAMESPACES:
            ensure_namespace(client, name)
    return cluster


@pytest.fixture
def admin_access(cluster: ClusterInfo) -> KubeAccess:
    return KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))


@pytest.fixture
def admin(admin_access: KubeAccess) -> Iterator[KubeClient]:
    with open_client(admin_access) as client:
        yield client


@pytest.fixture
def clean_shared_namespaces(own_crds: ClusterInfo, admin: KubeClient) -> None:
    """The shared namespaces hold none of the kinds the program reads, and there is no Node."""
    for namespace in SHARED_NAMESPACES:
        delete_all(
            admin,
            [
                *APPLIANCE_KINDS.values(),
                KUSTOMIZATION,
                CONFIG_MAP,
                NODE_FEATURE,
                KUBEAI_MODEL,
                POD,
                HELM_RELEASE,
                HTTP_ROUTE,
                REFERENCE_GRANT,
                SECURITY_POLICY,
            ],
            namespace,
        )
    for node in admin.list(NODE):
        admin.delete(NODE, node["metadata"]["name"])


StartOllama = Callable[..., OllamaDouble]


@pytest.fixture(scope="session")
def host_address() -> str:
    """An address of this host the API server's pod proxy agrees to reach (not loopback)."""
    return proxyable_host_address()


@pytest.fixture
def start_ollama(host_address: str) -> Iterator[StartOllama]:
    """Start Ollama doubles on this host's address; all are released and stopped when the test ends."""
    with ExitStack() as stack:

        def start(**state: Any) -> OllamaDouble:
            return stack.enter_context(running_ollama(host_address, **state))

        yield start
