"""The DirectRuntime provider against the real test API server: apply, converge, remove, read,
delete, force, and the API failures that become the runtime's `problem`.

A namespace per test; the admin applies what another field manager would own.
"""

from __future__ import annotations

from typing import Any

import pytest

from planning.models.direct import DirectRuntimeKind
from planning.settings import FIELD_MANAGER
from providers.direct_runtime import DirectRuntimeDeleteError, DirectRuntimeProvider
from providers.kinds import CONFIG_MAP, DEPLOYMENT, SERVICE
from providers.kube import Forbidden, KubeAccess, KubeClient
from tests.cluster.apiserver import READER_USER
from tests.live.conftest import admin, admin_access  # noqa: F401 - fixtures used by name
from tests.providers.direct_runtime_objects import (
    config_map,
    deployment,
    identity,
    inputs,
    provider_for,
    runtime_objects,
    service,
    unforced,
)

NAME = "omni"
OTHER_MANAGER = "someone-else"


def kind_of(body: dict[str, Any]):
    return {"ConfigMap": CONFIG_MAP, "Service": SERVICE, "Deployment": DEPLOYMENT}[body["kind"]]


def stored(client: KubeClient, body: dict[str, Any]) -> dict[str, Any] | None:
    return client.get_or_none(kind_of(body), body["metadata"]["name"], body["metadata"]["namespace"])


def versions(client: KubeClient, objects: list[dict[str, Any]]) -> list[str]:
    return [
        client.get(kind_of(body), body["metadata"]["name"], body["metadata"]["namespace"])["metadata"][
            "resourceVersion"
        ]
        for body in objects
    ]


@pytest.fixture
def provider(admin_access: KubeAccess) -> DirectRuntimeProvider:
    return provider_for(admin_access)


def created(provider: DirectRuntimeProvider, declared: dict[str, Any]):
    checked = provider.check({}, declared)
    assert checked.failures == []
    return checked.inputs, provider.create(checked.inputs)


class TestCreate:
    def test_create_applies_the_config_map_the_service_and_the_deployment_and_lists_them_as_applied(
        self, namespace, admin: KubeClient, provider
    ):
        objects = runtime_objects(namespace, NAME)

        _, result = created(provider, inputs(namespace, objects))

        assert all(stored(admin, body) is not None for body in objects)
        assert result.outs["applied"] == [identity(body) for body in objects]
        assert result.outs["problem"] == {}
        assert result.id == f"realtime/{namespace}/{NAME}"

    def test_the_objects_are_applied_under_the_programs_field_manager(self, namespace, admin: KubeClient, provider):
        objects = runtime_objects(namespace, NAME)

        created(provider, inputs(namespace, objects))

        managers = {entry["manager"] for entry in stored(admin, objects[-1])["metadata"]["managedFields"]}
        assert managers == {FIELD_MANAGER}

    def test_an_existing_object_is_adopted_not_refused(self, namespace, admin: KubeClient, provider):
        objects = runtime_objects(namespace, NAME)
        admin.apply(SERVICE, objects[1], field_manager=OTHER_MANAGER)

        _, result = created(provider, inputs(namespace, objects))

        assert result.outs["problem"] == {}
        assert result.outs["applied"] == [identity(body) for body in objects]


class TestUpdate:
    def test_a_converged_update_changes_no_object_and_diff_sees_no_change(self, namespace, admin: KubeClient, provider):
        objects = runtime_objects(namespace, NAME)
        checked, first = created(provider, inputs(namespace, objects))
        before = versions(admin, objects)

        again = provider.update(first.id, first.outs, checked)

        assert versions(admin, objects) == before
        assert again.outs == first.outs
        assert provider.diff(first.id, first.outs, checked).changes is False

    def test_an_update_applies_a_changed_object(self, namespace, admin: KubeClient, provider):
        checked, first = created(provider, inputs(namespace, runtime_objects(namespace, NAME)))
        changed = [*runtime_objects(namespace, NAME)[:2], deployment(namespace, NAME, image="example.com/vllm-omni:2")]
        news = provider.check(first.outs, inputs(namespace, changed)).inputs

        assert provider.diff(first.id, first.outs, news).changes is True
        result = provider.update(first.id, first.outs, news)

        assert result.outs["problem"] == {}
        containers = stored(admin, changed[-1])["spec"]["template"]["spec"]["containers"]
        assert containers[0]["image"] == "example.com/vllm-omni:2"

    def test_an_update_deletes_an_object_dropped_from_the_inputs(self, namespace, admin: KubeClient, provider):
        objects = runtime_objects(namespace, NAME)
        _, first = created(provider, inputs(namespace, objects))
        kept = objects[1:]
        news = provider.check(first.outs, inputs(namespace, kept)).inputs

        result = provider.update(first.id, first.outs, news)

        assert stored(admin, objects[0]) is None
        assert all(stored(admin, body) is not None for body in kept)
        assert result.outs["applied"] == [identity(body) for body in kept]
        assert result.outs["problem"] == {}

    def test_an_object_dropped_from_the_inputs_and_already_gone_is_no_problem(
        self, namespace, admin: KubeClient, provider
    ):
        objects = runtime_objects(namespace, NAME)
        _, first = created(provider, inputs(namespace, objects))
        admin.delete(CONFIG_MAP, objects[0]["metadata"]["name"], namespace)
        news = provider.check(first.outs, inputs(namespace, objects[1:])).inputs

        result = provider.update(first.id, first.outs, news)

        assert result.outs["problem"] == {}
        assert result.outs["applied"] == [identity(body) for body in objects[1:]]


class TestDelete:
    def test_delete_removes_every_object(self, namespace, admin: KubeClient, provider):
        objects = runtime_objects(namespace, NAME)
        _, first = created(provider, inputs(namespace, objects))

        provider.delete(first.id, first.outs)

        assert [stored(admin, body) for body in objects] == [None, None, None]

    def test_delete_of_objects_already_gone_succeeds(self, namespace, admin: KubeClient, provider):
        objects = runtime_objects(namespace, NAME)
        _, first = created(provider, inputs(namespace, objects))
        admin.delete(DEPLOYMENT, NAME, namespace)

        provider.delete(first.id, first.outs)
        provider.delete(first.id, first.outs)

        assert [stored(admin, body) for body in objects] == [None, None, None]

    def test_a_deletion_the_server_refuses_raises_with_its_status_and_keeps_every_object(
        self, namespace, admin: KubeClient, provider, cluster
    ):
        objects = runtime_objects(namespace, NAME)
        _, first = created(provider, inputs(namespace, objects))
        reader = provider_for(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(READER_USER))))

        with pytest.raises(
            DirectRuntimeDeleteError, match=f"^delete Deployment/{namespace}/{NAME}: 403 Forbidden: "
        ) as refused:
            reader.delete(first.id, first.outs)

        assert isinstance(refused.value.__cause__, Forbidden)
        assert all(stored(admin, body) is not None for body in objects)


class TestRead:
    def test_read_of_a_runtime_that_exists_returns_its_outputs_unchanged(self, namespace, provider):
        _, first = created(provider, inputs(namespace, runtime_objects(namespace, NAME)))

        read = provider.read(first.id, first.outs)

        assert (read.id, read.outs) == (first.id, first.outs)

    def test_read_leaves_out_an_object_someone_deleted_so_the_next_run_applies_it_again(
        self, namespace, admin: KubeClient, provider
    ):
        objects = runtime_objects(namespace, NAME)
        checked, first = created(provider, inputs(namespace, objects))
        admin.delete(SERVICE, NAME, namespace)

        read = provider.read(first.id, first.outs)

        assert read.outs["objects"] == [checked["objects"][0], checked["objects"][2]]
        assert read.outs["applied"] == [identity(objects[0]), identity(objects[2])]
        assert provider.diff(read.id, read.outs, checked).changes is True
        provider.update(read.id, read.outs, checked)
        assert stored(admin, objects[1]) is not None

    def test_read_of_a_runtime_none_of_whose_objects_exists_is_gone(self, namespace, admin: KubeClient, provider):
        objects = runtime_objects(namespace, NAME)
        _, first = created(provider, inputs(namespace, objects))
        for body in objects:
            admin.delete(kind_of(body), body["metadata"]["name"], namespace)

        read = provider.read(first.id, first.outs)

        assert (read.id, read.outs) == ("", {})


class TestForce:
    def test_with_the_force_annotation_a_field_another_manager_owns_is_taken_over(
        self, namespace, admin: KubeClient, provider
    ):
        body = deployment(namespace, NAME)
        admin.apply(DEPLOYMENT, deployment(namespace, NAME, image="example.com/other:1"), field_manager=OTHER_MANAGER)

        _, result = created(provider, inputs(namespace, [body]))

        assert result.outs["problem"] == {}
        assert stored(admin, body)["spec"]["template"]["spec"]["containers"][0]["image"] == "example.com/vllm-omni:1"

    def test_without_the_force_annotation_a_field_another_manager_owns_is_a_conflict_problem_not_an_exception(
        self, namespace, admin: KubeClient, provider
    ):
        body = unforced(deployment(namespace, NAME))
        admin.apply(DEPLOYMENT, deployment(namespace, NAME, image="example.com/other:1"), field_manager=OTHER_MANAGER)

        checked, result = created(provider, inputs(namespace, [body]))

        problem = result.outs["problem"]
        assert (problem["reason"], problem["persistence"]) == ("RealtimeApiRejected", "Temporary")
        assert problem["message"].startswith(f"apply Deployment/{namespace}/{NAME}: 409 Conflict: ")
        assert stored(admin, body)["spec"]["template"]["spec"]["containers"][0]["image"] == "example.com/other:1"
        assert result.outs["applied"] == []
        assert provider.diff(result.id, result.outs, checked).changes is True


def selector_mismatch(namespace: str) -> dict[str, Any]:
    """A Deployment whose selector does not select its own Pod template: the server refuses it (422)."""
    body = deployment(namespace, NAME)
    body["spec"]["selector"] = {"matchLabels": {"app": "elsewhere"}}
    return body


def invalid_port(namespace: str) -> dict[str, Any]:
    body = service(namespace, NAME)
    body["spec"]["ports"] = [{"name": "http", "port": 0, "protocol": "TCP"}]
    return body


class TestApiFailures:
    def test_a_body_the_server_refuses_as_invalid_is_a_permanent_rejection_retried_only_when_the_inputs_change(
        self, namespace, admin: KubeClient, provider
    ):
        objects = [config_map(namespace, NAME), service(namespace, NAME), selector_mismatch(namespace)]

        checked, result = created(provider, inputs(namespace, objects))

        problem = result.outs["problem"]
        assert (problem["reason"], problem["persistence"]) == ("RealtimeApiRejected", "Permanent")
        assert problem["message"].startswith(f"apply Deployment/{namespace}/{NAME}: 422 Invalid: ")
        assert "`selector` does not match template `labels`" in problem["message"]
        assert provider.diff(result.id, result.outs, checked).changes is False
        fixed = provider.check(result.outs, inputs(namespace, runtime_objects(namespace, NAME))).inputs
        assert provider.diff(result.id, result.outs, fixed).changes is True

    def test_an_apply_stops_at_the_first_refused_object_and_applies_nothing_after_it(
        self, namespace, admin: KubeClient, provider
    ):
        objects = [config_map(namespace, NAME), invalid_port(namespace), deployment(namespace, NAME)]

        _, result = created(provider, inputs(namespace, objects))

        assert result.outs["problem"]["message"].startswith(f"apply Service/{namespace}/{NAME}: 422 Invalid: ")
        assert result.outs["applied"] == [identity(objects[0])]
        assert [stored(admin, body) is not None for body in objects] == [True, False, False]

    @pytest.mark.parametrize(
        ("kind", "reason"),
        [(DirectRuntimeKind.REALTIME, "RealtimeApiRejected"), (DirectRuntimeKind.FREETOKEN, "FreeTokenApiRejected")],
    )
    def test_a_missing_namespace_is_a_temporary_rejection_named_for_the_runtime(self, cluster, provider, kind, reason):
        absent = "no-such-namespace"
        objects = runtime_objects(absent, NAME, kind)

        checked, result = created(provider, inputs(absent, objects, kind))

        problem = result.outs["problem"]
        assert (problem["reason"], problem["persistence"]) == (reason, "Temporary")
        assert problem["message"].startswith(
            f"apply {objects[0]['kind']}/{absent}/{objects[0]['metadata']['name']}: 404 NotFound: "
        )
        assert provider.diff(result.id, result.outs, checked).changes is True

    def test_an_update_that_fails_keeps_what_it_did_not_remove_in_applied(self, namespace, admin: KubeClient, provider):
        objects = runtime_objects(namespace, NAME)
        _, first = created(provider, inputs(namespace, objects))
        news = provider.check(first.outs, inputs(namespace, [objects[1], selector_mismatch(namespace)])).inputs

        result = provider.update(first.id, first.outs, news)

        assert result.outs["problem"]["reason"] == "RealtimeApiRejected"
        assert stored(admin, objects[0]) is not None
        assert result.outs["applied"] == [identity(objects[1]), identity(objects[0])]
        fixed = provider.check(result.outs, inputs(namespace, objects[1:])).inputs
        provider.update(first.id, result.outs, fixed)
        assert stored(admin, objects[0]) is None
