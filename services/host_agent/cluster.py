"""Everything the agent asks of the API server, as its own Node-bound identity.

It reads its Node, the HostOperations of its namespace, ApplianceSetup/local and the one Secret
a configure-network request names, from the namespace of the network Secrets
(`magicstick-host-network` by default, which holds nothing else); it writes the host annotations
of its Node, HostOperation status and the first ApplianceSetup, and requests its own next token,
bound to its Node. Nothing else: the identity's RBAC and admission policy
(magic-cluster/platform/host-agent/) refuse anything more. It reads no Pod: whether a model still
uses the cache is the host's to say (cache_users.py).
"""

from __future__ import annotations

from typing import Any

from api.meta import API_VERSION
from providers.kinds import APPLIANCE_SETUP, HOST_OPERATION, NODE
from providers.kube import KubeClient, ResourceKind
from services.host_agent.settings import DEFAULT_NETWORK_NAMESPACE

FIELD_MANAGER = "magicstick-host-agent"
SECRET = ResourceKind(group="", version="v1", kind="Secret", plural="secrets", namespaced=True)
MERGE_PATCH = "application/merge-patch+json"


class AgentCluster:
    def __init__(
        self,
        client: KubeClient,
        *,
        node_name: str,
        namespace: str,
        setup_namespace: str,
        network_namespace: str = DEFAULT_NETWORK_NAMESPACE,
    ) -> None:
        self._client = client
        self.node_name = node_name
        self.namespace = namespace
        self.setup_namespace = setup_namespace
        self.network_namespace = network_namespace

    def node(self) -> dict[str, Any]:
        return self._client.get(NODE, self.node_name)

    def annotate_node(self, annotations: dict[str, str | None]) -> dict[str, Any]:
        """Set (None: remove) these annotations of the agent's own Node by a merge patch: nothing else changes."""
        return self._client.request(
            "PATCH",
            NODE.object_path(self.node_name),
            params={"fieldManager": FIELD_MANAGER},
            body={"metadata": {"annotations": annotations}},
            content_type=MERGE_PATCH,
        )

    def host_operations(self) -> list[dict[str, Any]]:
        return self._client.list(HOST_OPERATION, namespace=self.namespace)

    def host_operation(self, name: str) -> dict[str, Any] | None:
        return self._client.get_or_none(HOST_OPERATION, name, self.namespace)

    def write_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        """The operation's whole status, by server-side apply of the agent's field manager."""
        body = {
            "apiVersion": API_VERSION,
            "kind": "HostOperation",
            "metadata": {"name": name, "namespace": self.namespace},
            "status": status,
        }
        return self._client.apply(HOST_OPERATION, body, field_manager=FIELD_MANAGER, subresource="status")

    def secret(self, name: str) -> dict[str, Any] | None:
        """A network Secret by name, from the namespace of the network Secrets (never the operation's)."""
        return self._client.get_or_none(SECRET, name, self.network_namespace)

    def appliance_setup(self, name: str) -> dict[str, Any] | None:
        return self._client.get_or_none(APPLIANCE_SETUP, name, self.setup_namespace)

    def create_appliance_setup(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._client.create(APPLIANCE_SETUP, body, field_manager=FIELD_MANAGER)

    def write_setup_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        body = {
            "apiVersion": API_VERSION,
            "kind": "ApplianceSetup",
            "metadata": {"name": name, "namespace": self.setup_namespace},
            "status": status,
        }
        return self._client.apply(APPLIANCE_SETUP, body, field_manager=FIELD_MANAGER, subresource="status")

    def node_bound_token(self, *, namespace: str, service_account: str, seconds: int, node: dict[str, Any]) -> str:
        """A new token of the agent's ServiceAccount, bound to its Node (TokenRequest)."""
        answer = self._client.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
            body={
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {
                    "expirationSeconds": seconds,
                    "boundObjectRef": {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "name": node["metadata"]["name"],
                        "uid": node["metadata"]["uid"],
                    },
                },
            },
            content_type="application/json",
        )
        return str(answer["status"]["token"])
