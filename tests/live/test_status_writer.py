"""Status write-back through the /status subresource, against the real apiserver."""

from __future__ import annotations

import pytest

from providers.kinds import MODULE_ACTIVATION
from providers.kube import KubeAccess, KubeClient
from providers.status_writer import STATUS_FIELD_MANAGER, StatusProvider, StatusTarget, write_status
from tests.live.world import load
from tests.planning.builders import activation
from tests.providers.engine import LEGACY_ACCESS, configured, kubeconfig_config


def _target(namespace: str, status: dict, name: str = "basis") -> StatusTarget:
    return StatusTarget(
        api_version="appliance.magicstick.dev/v1alpha1",
        kind="ModuleActivation",
        namespace=namespace,
        name=name,
        status=status,
    )


def _activation_in(namespace: str, name: str = "basis") -> dict:
    obj = activation(name)
    obj["metadata"]["namespace"] = namespace
    return obj


READY = {"phase": "Ready", "observedGeneration": 1, "message": "Kustomization platform-basis is ready."}


def test_the_status_is_written_with_its_own_field_manager_and_observed_generation(own_crds, namespace, admin: KubeClient):
    load(admin, [_activation_in(namespace)])
    assert write_status(admin, _target(namespace, READY)) is True
    stored = admin.get(MODULE_ACTIVATION, "basis", namespace)
    assert stored["status"] == READY
    managers = {entry["manager"] for entry in stored["metadata"]["managedFields"]}
    assert STATUS_FIELD_MANAGER in managers


def test_nothing_is_written_when_the_status_is_unchanged(own_crds, namespace, admin: KubeClient):
    load(admin, [_activation_in(namespace)])
    write_status(admin, _target(namespace, READY))
    version = admin.get(MODULE_ACTIVATION, "basis", namespace)["metadata"]["resourceVersion"]
    before = admin.requests
    assert write_status(admin, _target(namespace, READY)) is False
    assert admin.requests == before + 1
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["metadata"]["resourceVersion"] == version


def test_a_field_the_program_no_longer_plans_is_removed_from_the_status(own_crds, namespace, admin: KubeClient):
    load(admin, [_activation_in(namespace)])
    write_status(admin, _target(namespace, {**READY, "kustomization": "platform-basis"}))
    assert write_status(admin, _target(namespace, READY)) is True
    assert "kustomization" not in admin.get(MODULE_ACTIVATION, "basis", namespace)["status"]


def test_status_fields_of_other_writers_are_kept(own_crds, namespace, admin: KubeClient):
    load(admin, [_activation_in(namespace) | {"status": {"hostNote": "written by the host worker"}}])
    write_status(admin, _target(namespace, READY))
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"]["hostNote"] == "written by the host worker"


def test_writing_the_status_of_a_deleted_object_succeeds_and_writes_nothing(own_crds, namespace, admin: KubeClient):
    assert write_status(admin, _target(namespace, READY, name="gone")) is False


def test_the_status_write_does_not_change_the_spec_or_the_generation(own_crds, namespace, admin: KubeClient):
    load(admin, [_activation_in(namespace)])
    before = admin.get(MODULE_ACTIVATION, "basis", namespace)
    write_status(admin, _target(namespace, READY))
    after = admin.get(MODULE_ACTIVATION, "basis", namespace)
    assert after["spec"] == before["spec"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"]


def _inputs(namespace: str, status: dict) -> dict:
    return {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModuleActivation",
        "namespace": namespace,
        "name": "basis",
        "status": status,
    }


def _configured(access: KubeAccess) -> StatusProvider:
    assert access.kubeconfig is not None
    return configured(StatusProvider(), kubeconfig_config(access.kubeconfig))


def test_the_provider_creates_updates_reads_and_deletes_without_touching_the_object(own_crds, namespace, admin: KubeClient, admin_access):
    load(admin, [_activation_in(namespace)])
    provider = _configured(admin_access)
    inputs = _inputs(namespace, {**READY, "observedGeneration": 1.0})
    created = provider.create(inputs)
    assert created.id == f"ModuleActivation/{namespace}/basis"
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"]["observedGeneration"] == 1

    waiting = {"phase": "WaitingForModules", "observedGeneration": 1}
    assert provider.diff(created.id, created.outs, _inputs(namespace, waiting)).changes is True
    assert provider.diff(created.id, created.outs, inputs).changes is False
    provider.update(created.id, created.outs, _inputs(namespace, waiting))
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"]["phase"] == "WaitingForModules"

    read = provider.read(created.id, _inputs(namespace, waiting))
    assert read.outs["status"] == waiting
    provider.delete(created.id, created.outs)
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"]["phase"] == "WaitingForModules"


def test_a_changed_identity_replaces_the_status_resource():
    provider = StatusProvider()
    old = _inputs("a", READY)
    diff = provider.diff("id", old, {**old, "name": "other"})
    assert diff.replaces == ["name"]


@pytest.mark.parametrize("missing", ["apiVersion", "kind", "namespace", "name"])
def test_check_names_a_missing_identity_property(missing):
    inputs = _inputs("a", READY)
    del inputs[missing]
    result = StatusProvider().check({}, inputs)
    assert [f.property for f in result.failures] == [missing]


def test_check_rejects_a_kind_whose_status_the_program_does_not_own():
    result = StatusProvider().check({}, {**_inputs("a", READY), "kind": "Secret"})
    assert [f.property for f in result.failures] == ["kind"]


def test_a_configured_provider_reads_and_deletes_state_written_through_a_kubeconfig_absent_here(
    own_crds, namespace, admin: KubeClient, admin_access
):
    load(admin, [_activation_in(namespace) | {"status": {"phase": "Ready", "observedGeneration": 1}}])
    provider = _configured(admin_access)
    old_state = {**_inputs(namespace, {"phase": "WaitingForModules", "observedGeneration": 1.0}), **LEGACY_ACCESS}

    read = provider.read(f"ModuleActivation/{namespace}/basis", old_state)
    provider.delete(read.id, old_state)

    assert read.outs == _inputs(namespace, {"phase": "Ready", "observedGeneration": 1})
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"]["phase"] == "Ready"


def test_a_provider_never_configured_reaches_the_cluster_that_KUBECONFIG_names(
    own_crds, namespace, admin: KubeClient, admin_access, monkeypatch
):
    assert admin_access.kubeconfig is not None
    monkeypatch.setenv("KUBECONFIG", admin_access.kubeconfig)
    load(admin, [_activation_in(namespace)])
    StatusProvider().create(_inputs(namespace, READY))
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"] == READY
