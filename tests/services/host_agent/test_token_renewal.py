"""The agent renews its Node-bound token itself, for the same Node, once two thirds of its
lifetime have passed; the new token is the API server's, bound as the old one was."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import yaml

from providers.kube import KubeAccess, open_client
from services.host_agent.cluster import AgentCluster
from services.host_agent.identity import read_token, renew_if_due, token_file
from tests.services.host_agent.world import NAMESPACE, SERVICE_ACCOUNT, AgentWorld, node_bound_token


def _token_kubeconfig(world: AgentWorld, tmp_path: Path, seconds: int) -> tuple[Path, Path]:
    token = tmp_path / "token"
    token.write_text(node_bound_token(world.admin, world.node, seconds=seconds))
    config = yaml.safe_load(world.kubeconfig.read_text())
    config["users"][0]["user"] = {"tokenFile": str(token)}
    kubeconfig = tmp_path / "kubeconfig-token-file"
    kubeconfig.write_text(yaml.safe_dump(config))
    return kubeconfig, token


def _node_claim(world: AgentWorld, token: str) -> list[str]:
    with httpx.Client(
        base_url=world.cluster.url, verify=world.cluster.ssl_context(), headers={"Authorization": f"Bearer {token}"}
    ) as client:
        review = client.post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
    review.raise_for_status()
    user = review.json()["status"]["userInfo"]
    assert user["username"] == f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
    return list(user["extra"]["authentication.kubernetes.io/node-name"])


def test_a_token_is_not_renewed_before_two_thirds_of_its_lifetime(world: AgentWorld, tmp_path: Path) -> None:
    kubeconfig, token = _token_kubeconfig(world, tmp_path, 3600)
    path = token_file(kubeconfig)
    assert path == token
    issued = read_token(token)
    assert issued.lifetime_seconds == 3600 and (issued.namespace, issued.service_account) == (
        NAMESPACE,
        SERVICE_ACCOUNT,
    )
    with open_client(KubeAccess(kubeconfig=str(kubeconfig))) as client:
        cluster = AgentCluster(
            client, node_name=world.node_name, namespace=NAMESPACE, setup_namespace="identity-system"
        )
        assert not renew_if_due(
            cluster, path=token, now=datetime.fromtimestamp(issued.issued_at, UTC) + timedelta(seconds=2399)
        )


def test_a_due_token_is_replaced_by_one_bound_to_the_same_node_with_the_same_lifetime(
    world: AgentWorld, tmp_path: Path
) -> None:
    kubeconfig, token = _token_kubeconfig(world, tmp_path, 3600)
    before = token.read_text()
    issued = read_token(token)
    with open_client(KubeAccess(kubeconfig=str(kubeconfig))) as client:
        cluster = AgentCluster(
            client, node_name=world.node_name, namespace=NAMESPACE, setup_namespace="identity-system"
        )
        assert renew_if_due(
            cluster, path=token, now=datetime.fromtimestamp(issued.issued_at, UTC) + timedelta(seconds=2400)
        )
    after = token.read_text()
    assert after != before and read_token(token).lifetime_seconds == 3600
    assert oct(token.stat().st_mode & 0o777) == "0o600"
    assert _node_claim(world, after) == [world.node_name]
