"""The agent reads the Secret a configure-network request names from the namespace of the network
Secrets (`--network-namespace`, default magicstick-host-network), never from the HostOperation's
namespace: against the test API server, with the Node-bound identity install.sh gives a node."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import pytest

from providers.kube import Forbidden, KubeAccess, KubeClient, NotFound, open_client
from services.host_agent.cluster import SECRET, AgentCluster
from services.host_agent.settings import DEFAULT_NETWORK_NAMESPACE, parse_settings
from tests.services.host_agent.world import NAMESPACE, NETWORK_NAMESPACE, AgentWorld

SETUP_NAMESPACE: Final = "identity-system"


def test_the_network_namespace_defaults_to_the_one_the_identity_ships() -> None:
    settings = parse_settings(["serve", "--node-name", "halo"], {})

    assert settings.network_namespace == DEFAULT_NETWORK_NAMESPACE == NETWORK_NAMESPACE
    assert settings.namespace == "ai-system"


def test_the_flag_wins_over_its_environment_variable_which_wins_over_the_default() -> None:
    environment = {"MAGICSTICK_HOST_AGENT_NETWORK_NAMESPACE": "site-networks"}

    assert parse_settings(["serve", "--node-name", "halo"], environment).network_namespace == "site-networks"
    assert (
        parse_settings(
            ["serve", "--node-name", "halo", "--network-namespace", "lab-networks"], environment
        ).network_namespace
        == "lab-networks"
    )


@pytest.fixture
def agent_cluster(world: AgentWorld) -> Iterator[AgentCluster]:
    with open_client(KubeAccess(kubeconfig=str(world.kubeconfig))) as client:
        yield AgentCluster(client, node_name=world.node_name, namespace=NAMESPACE, setup_namespace=SETUP_NAMESPACE)


@pytest.fixture
def secret_name(world: AgentWorld) -> Iterator[str]:
    name = world.object_name("wifi")
    yield name
    for namespace in (NAMESPACE, NETWORK_NAMESPACE):
        try:
            world.admin.delete(SECRET, name, namespace)
        except NotFound:
            pass


def _secret(admin: KubeClient, name: str, namespace: str) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {"interface": "wlan0"},
    }
    return admin.create(SECRET, body, field_manager="kubectl-create")


def test_the_agent_reads_a_network_secret_from_the_network_namespace(
    world: AgentWorld, agent_cluster: AgentCluster, secret_name: str
) -> None:
    created = _secret(world.admin, secret_name, NETWORK_NAMESPACE)

    read = agent_cluster.secret(secret_name)

    assert read is not None and read["metadata"]["uid"] == created["metadata"]["uid"]


def test_a_secret_of_that_name_in_the_operations_namespace_is_not_the_agents_to_read(
    world: AgentWorld, agent_cluster: AgentCluster, secret_name: str
) -> None:
    _secret(world.admin, secret_name, NAMESPACE)

    assert agent_cluster.secret(secret_name) is None
    with open_client(KubeAccess(kubeconfig=str(world.kubeconfig))) as client, pytest.raises(Forbidden):
        client.get(SECRET, secret_name, NAMESPACE)
