"""Status batches against the real API server: each member written through /status as one
object's write is, only the members that changed, each member's problem its own."""

from __future__ import annotations

from typing import Any

from planning.objects import encode_status
from providers.kinds import MODULE_ACTIVATION
from providers.kube import KubeAccess, KubeClient
from providers.status_batch import LIST_FROM, StatusBatchProvider, digest
from providers.status_writer import STATUS_FIELD_MANAGER, StatusProvider
from tests.live.world import load
from tests.planning.builders import activation
from tests.providers.engine import configured, kubeconfig_config

READY = {"phase": "Ready", "observedGeneration": 1, "message": "Kustomization platform-basis is ready."}
WAITING = {"phase": "WaitingForModules", "observedGeneration": 1, "message": "Waiting for basis."}


def _activations(admin: KubeClient, namespace: str, names: list[str]) -> None:
    objects = []
    for name in names:
        obj = activation(name)
        obj["metadata"]["namespace"] = namespace
        objects.append(obj)
    load(admin, objects)


def _batch(namespace: str, statuses: dict[str, dict[str, Any]]) -> dict[str, Any]:
    members = {
        f"{namespace}/{name}": {"namespace": namespace, "name": name, "status": encode_status(status)}
        for name, status in statuses.items()
    }
    return {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModuleActivation",
        "members": members,
        "problem": None,
    }


def _provider(access: KubeAccess) -> StatusBatchProvider:
    assert access.kubeconfig is not None
    return configured(StatusBatchProvider(), kubeconfig_config(access.kubeconfig))


def _checked(provider: StatusBatchProvider, inputs: dict[str, Any]) -> dict[str, Any]:
    result = provider.check({}, inputs)
    assert result.failures == []
    return result.inputs


def _versions(admin: KubeClient, namespace: str, names: list[str]) -> dict[str, str]:
    return {name: admin.get(MODULE_ACTIVATION, name, namespace)["metadata"]["resourceVersion"] for name in names}


def test_create_writes_every_member_under_the_status_field_manager(
    own_crds, namespace, admin: KubeClient, admin_access
):
    names = ["basis", "litellm"]
    _activations(admin, namespace, names)
    provider = _provider(admin_access)
    created = provider.create(_checked(provider, _batch(namespace, dict.fromkeys(names, READY))))
    assert (created.outs["problem"], created.outs["writeProblems"], created.outs["retries"]) == ({}, {}, {})
    for name in names:
        stored = admin.get(MODULE_ACTIVATION, name, namespace)
        assert stored["status"] == READY
        assert STATUS_FIELD_MANAGER in {entry["manager"] for entry in stored["metadata"]["managedFields"]}


def test_an_update_writes_only_the_member_that_changed(own_crds, namespace, admin: KubeClient, admin_access):
    names = [f"m{index}" for index in range(LIST_FROM + 2)]
    _activations(admin, namespace, names)
    provider = _provider(admin_access)
    first = _checked(provider, _batch(namespace, dict.fromkeys(names, READY)))
    created = provider.create(first)
    before = _versions(admin, namespace, names)

    changed = _checked(provider, _batch(namespace, {**dict.fromkeys(names, READY), "m3": WAITING}))
    assert provider.diff(created.id, created.outs, changed).changes is True
    provider.update(created.id, created.outs, changed)

    after = _versions(admin, namespace, names)
    assert [name for name in names if after[name] != before[name]] == ["m3"]
    assert admin.get(MODULE_ACTIVATION, "m3", namespace)["status"] == WAITING


def test_a_converged_batch_writes_nothing(own_crds, namespace, admin: KubeClient, admin_access):
    names = [f"m{index}" for index in range(LIST_FROM)]
    _activations(admin, namespace, names)
    provider = _provider(admin_access)
    inputs = _checked(provider, _batch(namespace, dict.fromkeys(names, READY)))
    created = provider.create(inputs)
    before = _versions(admin, namespace, names)
    assert provider.diff(created.id, created.outs, inputs).changes is False
    provider.create(inputs)
    assert _versions(admin, namespace, names) == before


def test_a_member_the_schema_refuses_is_its_own_permanent_problem_and_the_others_are_written(
    own_crds, namespace, admin: KubeClient, admin_access
):
    names = ["basis", "litellm", "kubeai"]
    _activations(admin, namespace, names)
    provider = _provider(admin_access)
    refused = {"phase": "Ready", "observedGeneration": 1.5}
    inputs = _checked(provider, _batch(namespace, {"basis": READY, "litellm": refused, "kubeai": READY}))

    created = provider.create(inputs)

    problem = created.outs["writeProblems"][f"{namespace}/litellm"]
    assert (problem["reason"], problem["persistence"]) == ("StatusWriteInvalid", "Permanent")
    assert set(created.outs["writeProblems"]) == {f"{namespace}/litellm"}
    assert created.outs["problem"]["message"].startswith(
        f"1 of 3 statuses not written: {namespace}/litellm: StatusWriteInvalid: 422 Invalid"
    )
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"] == READY
    assert admin.get(MODULE_ACTIVATION, "kubeai", namespace)["status"] == READY
    assert provider.diff(created.id, created.outs, inputs).changes is False
    fixed = _checked(provider, _batch(namespace, dict.fromkeys(names, READY)))
    assert provider.update(created.id, created.outs, fixed).outs["writeProblems"] == {}
    assert admin.get(MODULE_ACTIVATION, "litellm", namespace)["status"] == READY


def test_a_member_whose_object_is_gone_is_success(own_crds, namespace, admin: KubeClient, admin_access):
    _activations(admin, namespace, ["basis"])
    provider = _provider(admin_access)
    created = provider.create(_checked(provider, _batch(namespace, {"basis": READY, "gone": READY})))
    assert created.outs["writeProblems"] == {}


def test_read_records_every_members_live_status_so_a_status_changed_by_someone_else_is_written_back(
    own_crds, namespace, admin: KubeClient, admin_access
):
    names = [f"m{index}" for index in range(LIST_FROM + 1)]
    _activations(admin, namespace, names)
    provider = _provider(admin_access)
    inputs = _checked(provider, _batch(namespace, dict.fromkeys(names, READY)))
    created = provider.create(inputs)
    admin.apply(
        MODULE_ACTIVATION,
        {
            "apiVersion": "appliance.magicstick.dev/v1alpha1",
            "kind": "ModuleActivation",
            "metadata": {"name": "m2", "namespace": namespace},
            "status": WAITING,
        },
        field_manager=STATUS_FIELD_MANAGER,
        subresource="status",
    )

    read = provider.read(created.id, created.outs)

    assert read.outs["members"][f"{namespace}/m2"]["statusDigest"] == digest(WAITING)
    assert read.outs["members"][f"{namespace}/m1"]["statusDigest"] == digest(READY)
    assert provider.diff(created.id, read.outs, inputs).changes is True
    provider.update(created.id, read.outs, inputs)
    assert admin.get(MODULE_ACTIVATION, "m2", namespace)["status"] == READY


def test_delete_leaves_every_status_where_it_is(own_crds, namespace, admin: KubeClient, admin_access):
    _activations(admin, namespace, ["basis"])
    provider = _provider(admin_access)
    created = provider.create(_checked(provider, _batch(namespace, {"basis": READY})))
    provider.delete(created.id, created.outs)
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"] == READY


def test_the_status_resource_of_an_earlier_release_is_deleted_without_touching_its_object(
    own_crds, namespace, admin: KubeClient, admin_access
):
    _activations(admin, namespace, ["basis"])
    assert admin_access.kubeconfig is not None
    earlier = configured(StatusProvider(), kubeconfig_config(admin_access.kubeconfig))
    written = earlier.create(
        {
            "apiVersion": "appliance.magicstick.dev/v1alpha1",
            "kind": "ModuleActivation",
            "namespace": namespace,
            "name": "basis",
            "status": READY,
        }
    )
    version = admin.get(MODULE_ACTIVATION, "basis", namespace)["metadata"]["resourceVersion"]
    earlier.delete(written.id, written.outs)
    provider = _provider(admin_access)
    provider.create(_checked(provider, _batch(namespace, {"basis": READY})))
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["metadata"]["resourceVersion"] == version
