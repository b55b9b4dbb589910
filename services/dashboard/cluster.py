"""The dashboard's only way to the API server: as the signed-in user, runtime requests only.

Every call impersonates the user (identity.Identity), so the API server's RBAC and admission
policies decide what they may read and write; the dashboard's own ServiceAccount can do
nothing but impersonate. Writes are revision-checked:

- a create is a POST: an object of the same name is a 409 AlreadyExists, never overwritten;
- a change is a server-side apply of the fields its form owns, under the field manager
  FIELD_MANAGER, carrying the `metadata.resourceVersion` the client saw: the API server
  refuses it with 409 Conflict when the object changed since. Because that check has passed,
  the apply takes ownership of those fields (`force`), even from another manager (kubectl, an
  earlier dashboard): the user saw the current value and chose another.

Calls block; the ASGI application runs them on its thread pool.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from providers.kinds import APP_INSTANCE, APPLIANCE, HOST_OPERATION, MODEL_ACTIVATION, MODULE_ACTIVATION, NODE
from providers.kube import Collection, KubeClient, ResourceKind, WatchStream
from services.dashboard.identity import Identity

FIELD_MANAGER = "magicstick-dashboard"
EVENT = ResourceKind(group="", version="v1", kind="Event", plural="events", namespaced=True)

WRITABLE_KINDS: Mapping[str, ResourceKind] = {
    kind.plural: kind for kind in (MODULE_ACTIVATION, MODEL_ACTIVATION, APP_INSTANCE, HOST_OPERATION)
}
"""The kinds the dashboard may create or change (its whole write surface)."""
READABLE_KINDS: Mapping[str, ResourceKind] = {**WRITABLE_KINDS, APPLIANCE.plural: APPLIANCE}


class RuntimeRequests:
    """The runtime requests of one namespace, read and written as one user."""

    def __init__(self, client: KubeClient, *, namespace: str) -> None:
        self._client = client
        self.namespace = namespace

    @classmethod
    def acting_as(cls, client: KubeClient, identity: Identity, *, namespace: str) -> RuntimeRequests:
        return cls(client.impersonating(identity.kubernetes_user, identity.kubernetes_groups), namespace=namespace)

    def list(self, kind: ResourceKind) -> Collection:
        return self._client.list_collection(kind, namespace=self.namespace)

    def get(self, kind: ResourceKind, name: str) -> dict[str, Any]:
        return self._client.get(kind, name, self.namespace)

    def get_or_none(self, kind: ResourceKind, name: str) -> dict[str, Any] | None:
        return self._client.get_or_none(kind, name, self.namespace)

    def events(self) -> Collection:
        return self._client.list_collection(EVENT, namespace=self.namespace)

    def nodes(self) -> Collection:
        return self._client.list_collection(NODE)

    def node(self, name: str) -> dict[str, Any]:
        return self._client.get(NODE, name)

    def create(self, kind: ResourceKind, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._client.create(kind, _in_namespace(body, self.namespace), field_manager=FIELD_MANAGER)

    def apply(self, kind: ResourceKind, body: Mapping[str, Any]) -> dict[str, Any]:
        """Apply `body`, which must carry the resourceVersion the client saw (see the module's rules)."""
        if not body.get("metadata", {}).get("resourceVersion"):
            raise ValueError("a dashboard change must carry metadata.resourceVersion")
        return self._client.apply(kind, _in_namespace(body, self.namespace), field_manager=FIELD_MANAGER, force=True)

    @contextmanager
    def watch(self, kind: ResourceKind, *, resource_version: str, timeout_seconds: int) -> Iterator[WatchStream]:
        with self._client.watch(
            kind, resource_version=resource_version, namespace=self.namespace, timeout_seconds=timeout_seconds
        ) as stream:
            yield stream


def _in_namespace(body: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    metadata = {**body["metadata"], "namespace": namespace}
    return {**body, "metadata": metadata}
