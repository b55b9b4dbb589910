"""A failed request raises the KubeError subclass of its HTTP status, carrying the server's Status."""

from __future__ import annotations

import pytest

from providers.kinds import CONFIG_MAP, KUSTOMIZATION
from providers.kube import Conflict, Forbidden, Invalid, KubeAccess, KubeError, NotFound, open_client
from tests.cluster.apiserver import READER_USER
from tests.kube import admin_access

FIELD_MANAGER = "magicstick-tests"


def config_map(name: str, data: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def kustomization(namespace: str, name: str, *, source_kind: str) -> dict:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "interval": "10m0s",
            "path": "./modules/example",
            "prune": True,
            "sourceRef": {"kind": source_kind, "name": "flux-system", "namespace": "flux-system"},
        },
    }


@pytest.fixture
def client(cluster):
    with open_client(admin_access(cluster)) as opened:
        yield opened


class TestServerStatus:
    def test_getting_a_missing_object_raises_not_found_with_the_servers_message(self, client, namespace):
        with pytest.raises(NotFound) as raised:
            client.get(CONFIG_MAP, "x", namespace)
        error = raised.value
        assert (error.code, error.reason, error.message) == (404, "NotFound", 'configmaps "x" not found')
        assert (error.method, error.path) == ("GET", f"/api/v1/namespaces/{namespace}/configmaps/x")

    def test_get_or_none_turns_only_not_found_into_none(self, client, namespace):
        assert client.get_or_none(CONFIG_MAP, "x", namespace) is None

    def test_a_stale_update_raises_conflict(self, client, admin_client, namespace):
        path = CONFIG_MAP.object_path("store", namespace)
        admin_client.post(
            CONFIG_MAP.collection_path(namespace), json=config_map("store", {"a": "1"})
        ).raise_for_status()
        read = client.get(CONFIG_MAP, "store", namespace)
        client.request("PUT", path, body={**read, "data": {"a": "2"}}, content_type="application/json")
        with pytest.raises(Conflict) as raised:
            client.request("PUT", path, body={**read, "data": {"a": "3"}}, content_type="application/json")
        assert raised.value.reason == "Conflict"
        assert "the object has been modified" in raised.value.message
        assert client.get(CONFIG_MAP, "store", namespace)["data"] == {"a": "2"}

    def test_a_delete_whose_uid_precondition_fails_raises_conflict_and_keeps_the_object(
        self, client, admin_client, namespace
    ):
        admin_client.post(CONFIG_MAP.collection_path(namespace), json=config_map("kept", {})).raise_for_status()
        with pytest.raises(Conflict, match="the UID in the precondition"):
            client.delete(CONFIG_MAP, "kept", namespace, uid="00000000-0000-0000-0000-000000000000")
        assert client.get_or_none(CONFIG_MAP, "kept", namespace) is not None

    def test_applying_an_invalid_object_raises_invalid_naming_the_field(self, client, namespace):
        with pytest.raises(Invalid) as raised:
            client.apply(
                KUSTOMIZATION, kustomization(namespace, "broken", source_kind="Nope"), field_manager=FIELD_MANAGER
            )
        assert (raised.value.code, raised.value.reason) == (422, "Invalid")
        assert 'spec.sourceRef.kind: Unsupported value: "Nope"' in raised.value.message

    def test_a_request_rbac_denies_raises_forbidden_naming_the_user(self, cluster, namespace):
        reader = KubeAccess(kubeconfig=str(cluster.kubeconfig_path(READER_USER)))
        with pytest.raises(Forbidden) as raised, open_client(reader) as client:
            client.get(CONFIG_MAP, "anything", namespace)
        assert raised.value.reason == "Forbidden"
        assert f'User "{READER_USER}" cannot get resource "configmaps"' in raised.value.message

    def test_the_error_text_holds_method_path_code_reason_and_message(self, client, namespace):
        with pytest.raises(KubeError) as raised:
            client.get(CONFIG_MAP, "x", namespace)
        assert (
            str(raised.value)
            == f'GET /api/v1/namespaces/{namespace}/configmaps/x: 404 NotFound: configmaps "x" not found'
        )
