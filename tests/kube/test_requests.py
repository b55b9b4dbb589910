"""The REST verbs of KubeClient against the real server: paginated LIST, discovery, server-side apply, delete."""

from __future__ import annotations

import pytest

from providers.kinds import CONFIG_MAP, KUSTOMIZATION
from providers.kube import NotFound, open_client
from tests.kube import admin_access

FIELD_MANAGER = "magicstick-tests"


def config_map(name: str, namespace: str, data: dict[str, str], labels: dict[str, str] | None = None) -> dict:
    metadata = {"name": name, "namespace": namespace, "labels": labels or {}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def kustomization(namespace: str, name: str) -> dict:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "interval": "10m0s",
            "path": "./modules/example",
            "prune": True,
            "sourceRef": {"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"},
        },
    }


@pytest.fixture
def client(cluster):
    with open_client(admin_access(cluster)) as opened:
        yield opened


@pytest.fixture
def seven_config_maps(admin_client, namespace) -> list[str]:
    names = [f"entry-{index}" for index in range(7)]
    for index, name in enumerate(names):
        labels = {"parity": "even" if index % 2 == 0 else "odd"}
        admin_client.post(
            CONFIG_MAP.collection_path(namespace), json=config_map(name, namespace, {}, labels)
        ).raise_for_status()
    return names


class TestList:
    def test_seven_objects_in_pages_of_three_take_exactly_three_list_requests(
        self, client, namespace, seven_config_maps
    ):
        before = client.requests
        items = client.list(CONFIG_MAP, namespace=namespace, page_size=3)
        assert sorted(item["metadata"]["name"] for item in items) == seven_config_maps
        assert client.requests - before == 3

    def test_listed_items_carry_their_api_version_and_kind(self, client, namespace, seven_config_maps):
        items = client.list(CONFIG_MAP, namespace=namespace)
        assert {(item["apiVersion"], item["kind"]) for item in items} == {("v1", "ConfigMap")}

    def test_a_label_selector_holds_across_pages(self, client, namespace, seven_config_maps):
        items = client.list(CONFIG_MAP, namespace=namespace, label_selector="parity=even", page_size=2)
        assert sorted(item["metadata"]["name"] for item in items) == ["entry-0", "entry-2", "entry-4", "entry-6"]

    def test_an_empty_namespace_lists_nothing_in_one_request(self, client, namespace):
        before = client.requests
        assert client.list(CONFIG_MAP, namespace=namespace, page_size=3) == []
        assert client.requests - before == 1


class TestServedResources:
    def test_a_group_version_that_is_not_served_gives_none(self, client):
        assert client.served_resources("nothing.example.com", "v1") is None

    def test_a_served_group_version_gives_its_plural_names_without_subresources(self, client):
        assert client.served_resources("kustomize.toolkit.fluxcd.io", "v1") == frozenset({"kustomizations"})

    def test_the_core_group_is_addressed_by_the_empty_string(self, client):
        assert {"configmaps", "namespaces", "nodes"} <= client.served_resources("", "v1")


class TestApply:
    def test_apply_creates_an_object_the_field_manager_then_owns(self, client, namespace):
        applied = client.apply(CONFIG_MAP, config_map("owned", namespace, {"a": "1"}), field_manager=FIELD_MANAGER)
        assert applied["data"] == {"a": "1"}
        assert [entry["manager"] for entry in applied["metadata"]["managedFields"]] == [FIELD_MANAGER]

    def test_applying_the_same_object_again_changes_nothing(self, client, namespace):
        first = client.apply(CONFIG_MAP, config_map("stable", namespace, {"a": "1"}), field_manager=FIELD_MANAGER)
        second = client.apply(CONFIG_MAP, config_map("stable", namespace, {"a": "1"}), field_manager=FIELD_MANAGER)
        assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]

    def test_a_dry_run_apply_answers_the_result_and_stores_nothing(self, client, namespace):
        answered = client.apply(
            CONFIG_MAP, config_map("dry", namespace, {"a": "1"}), field_manager=FIELD_MANAGER, dry_run=True
        )
        assert answered["data"] == {"a": "1"}
        assert client.get_or_none(CONFIG_MAP, "dry", namespace) is None

    def test_applying_the_status_subresource_writes_status_and_leaves_spec_alone(self, client, namespace):
        created = client.apply(KUSTOMIZATION, kustomization(namespace, "app"), field_manager=FIELD_MANAGER)
        condition = {
            "type": "Ready",
            "status": "True",
            "reason": "ReconciliationSucceeded",
            "message": "Applied revision: main@sha1:0000000",
            "lastTransitionTime": "2025-01-01T00:00:00Z",
        }
        status = {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "app", "namespace": namespace},
            "status": {"conditions": [condition]},
        }
        client.apply(KUSTOMIZATION, status, field_manager="flux-controller", subresource="status")
        stored = client.get(KUSTOMIZATION, "app", namespace)
        assert stored["status"]["conditions"] == [condition]
        assert stored["spec"] == created["spec"]

    def test_applying_to_a_namespace_that_does_not_exist_raises_not_found(self, client):
        with pytest.raises(NotFound):
            client.apply(CONFIG_MAP, config_map("orphan", "no-such-namespace", {}), field_manager=FIELD_MANAGER)


class TestDelete:
    def test_delete_removes_the_object(self, client, namespace):
        client.apply(CONFIG_MAP, config_map("doomed", namespace, {}), field_manager=FIELD_MANAGER)
        client.delete(CONFIG_MAP, "doomed", namespace)
        assert client.get_or_none(CONFIG_MAP, "doomed", namespace) is None

    def test_delete_with_the_current_uid_and_resource_version_removes_the_object(self, client, namespace):
        applied = client.apply(CONFIG_MAP, config_map("exact", namespace, {}), field_manager=FIELD_MANAGER)
        metadata = applied["metadata"]
        client.delete(CONFIG_MAP, "exact", namespace, uid=metadata["uid"], resource_version=metadata["resourceVersion"])
        assert client.get_or_none(CONFIG_MAP, "exact", namespace) is None

    def test_deleting_a_missing_object_raises_not_found(self, client, namespace):
        with pytest.raises(NotFound):
            client.delete(CONFIG_MAP, "never-there", namespace)
