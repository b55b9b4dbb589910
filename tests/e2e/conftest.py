"""Fixtures of the e2e suite: a cluster of its own, the demo appliance in it, a Pulumi project.

The suite starts its own API server (not the `cluster` fixture's): the program owns fixed
namespaces (ai-system, flux-system) that the other cluster tests also use and clean.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from planning.models.kubeai import MODEL_SERVER_PORT
from providers.kube import KubeAccess, KubeClient, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, running_cluster
from tests.e2e.engine import PulumiProject
from tests.e2e.lifecycle import GARBAGE_COLLECTION
from tests.e2e.world import JsonObject, demo_documents, prepare_cluster
from tests.live.ollama_double import OllamaDouble, proxyable_host_address, running_ollama


@pytest.fixture(scope="module")
def engine_cluster() -> Iterator[ClusterInfo]:
    """A fresh API server per test module: each module's stack starts from an empty cluster."""
    with running_cluster(controllers=GARBAGE_COLLECTION) as info:
        yield info


@pytest.fixture(scope="module")
def kube(engine_cluster: ClusterInfo) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(engine_cluster.kubeconfig_path(ADMIN_USER)))) as client:
        yield client


@pytest.fixture(scope="module")
def demo(engine_cluster: ClusterInfo, kube: KubeClient) -> list[JsonObject]:
    documents = demo_documents()
    prepare_cluster(engine_cluster, kube, documents)
    return documents


@pytest.fixture(scope="module")
def project(
    engine_cluster: ClusterInfo, demo: list[JsonObject], tmp_path_factory: pytest.TempPathFactory
) -> PulumiProject:
    """A stack whose kubeconfig is the admin's, passed as a path the way the README sets it."""
    root: Path = tmp_path_factory.mktemp("pulumi")
    project = PulumiProject.create(root)
    project.config_set({"magicstick:kubeconfig": str(engine_cluster.kubeconfig_path(ADMIN_USER))})
    return project


@pytest.fixture(scope="module")
def ollama() -> Iterator[OllamaDouble]:
    """Ollama in the model Pods, on an address the API server's pod proxy dials and on the port
    KubeAI's Ollama Pods listen on (the program asks that port, as KubeAI's engine sets it)."""
    with running_ollama(proxyable_host_address(), port=MODEL_SERVER_PORT) as double:
        yield double
