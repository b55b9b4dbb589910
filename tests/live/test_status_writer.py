"""Status write-back through the /status subresource, against the real apiserver."""

from __future__ import annotations

import pytest

from providers.kinds import MODULE_ACTIVATION
from providers.kube import KubeAccess, KubeClient, ResourceKind
from providers.outcomes import ProblemReason, problem_output
from providers.status_writer import STATUS_FIELD_MANAGER, StatusProvider, StatusTarget, write_status
from tests.cluster.apiserver import READER_USER
from tests.live.world import load, wait_until_rbac_says
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


def test_the_status_is_written_with_its_own_field_manager_and_observed_generation(
    own_crds, namespace, admin: KubeClient
):
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


def test_the_provider_creates_updates_reads_and_deletes_without_touching_the_object(
    own_crds, namespace, admin: KubeClient, admin_access
):
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


ROLE = ResourceKind(group="rbac.authorization.k8s.io", version="v1", kind="Role", plural="roles", namespaced=True)
ROLE_BINDING = ResourceKind(
    group="rbac.authorization.k8s.io", version="v1", kind="RoleBinding", plural="rolebindings", namespaced=True
)
PLANNED_READY = {
    "phase": "Ready",
    "reason": "Ready",
    "message": "Kustomization platform-basis is ready.",
    "observedGeneration": 1,
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "Kustomization platform-basis is ready.",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ],
}
STORE_FULL = problem_output(
    ProblemReason.PROFILE_STORE_FULL, "cannot add resource profile 'magicstick-cpu-4': the limit is 64"
)


def _reader_may_only_get_activations(admin: KubeClient, namespace: str) -> None:
    """The reader may read ModuleActivations in `namespace`, and nothing more: no status writes."""
    rule = {"apiGroups": ["appliance.magicstick.dev"], "resources": ["moduleactivations"], "verbs": ["get"]}
    admin.apply(
        ROLE,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "reader", "namespace": namespace},
            "rules": [rule],
        },
        field_manager="test-rbac",
    )
    subject = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": READER_USER}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "reader", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [subject],
    }
    admin.apply(ROLE_BINDING, binding, field_manager="test-rbac")
    wait_until_rbac_says(
        admin,
        user=READER_USER,
        verb="get",
        group="appliance.magicstick.dev",
        resource="moduleactivations",
        namespace=namespace,
        allowed=True,
    )


def test_a_status_write_refused_with_403_is_the_writes_problem_not_an_error_and_is_tried_again(
    own_crds, namespace, admin: KubeClient, cluster
):
    load(admin, [_activation_in(namespace)])
    _reader_may_only_get_activations(admin, namespace)
    provider = configured(StatusProvider(), kubeconfig_config(str(cluster.kubeconfig_path(READER_USER))))

    created = provider.create(_inputs(namespace, READY))

    problem = created.outs["problem"]
    assert (problem["reason"], problem["persistence"]) == ("StatusWriteRefused", "Temporary")
    assert problem["message"].startswith("403 Forbidden: ") and "status" in problem["message"]
    assert "status" not in admin.get(MODULE_ACTIVATION, "basis", namespace)
    assert provider.diff(created.id, created.outs, _inputs(namespace, READY)).changes is True


def test_a_status_the_schema_refuses_with_422_is_a_permanent_problem_tried_again_only_when_the_status_changes(
    own_crds, namespace, admin: KubeClient, admin_access
):
    load(admin, [_activation_in(namespace)])
    provider = _configured(admin_access)
    refused = {"phase": "Ready", "observedGeneration": 1.5}

    created = provider.create(_inputs(namespace, refused))

    problem = created.outs["problem"]
    assert (problem["reason"], problem["persistence"]) == ("StatusWriteInvalid", "Permanent")
    assert problem["message"].startswith("422 Invalid: ") and "observedGeneration" in problem["message"]
    assert provider.diff(created.id, created.outs, _inputs(namespace, refused)).changes is False
    assert provider.diff(created.id, created.outs, _inputs(namespace, READY)).changes is True
    assert provider.update(created.id, created.outs, _inputs(namespace, READY)).outs["problem"] == {}
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"] == READY


def test_a_problem_of_the_objects_dynamic_resources_is_written_as_its_degraded_status_in_the_same_run(
    own_crds, namespace, admin: KubeClient, admin_access
):
    load(admin, [_activation_in(namespace)])
    provider = _configured(admin_access)

    created = provider.create(
        {**_inputs(namespace, PLANNED_READY), "problems": {"runtime-profile/magicstick-cpu-4": STORE_FULL}}
    )

    assert created.outs["problem"] == {}
    status = admin.get(MODULE_ACTIVATION, "basis", namespace)["status"]
    assert (status["phase"], status["reason"], status["message"]) == (
        "Degraded",
        "ProfileStoreFull",
        STORE_FULL["message"],
    )
    ready, reconciling = status["conditions"]
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "ProfileStoreFull", STORE_FULL["message"])
    assert (reconciling["type"], reconciling["status"], reconciling["reason"]) == (
        "Reconciling",
        "True",
        "ProfileStoreFull",
    )


def test_a_temporary_problem_that_persists_is_counted_on_the_next_run_and_its_clearing_restores_the_planned_status(
    own_crds, namespace, admin: KubeClient, admin_access
):
    load(admin, [_activation_in(namespace)])
    provider = _configured(admin_access)
    failing = {**_inputs(namespace, PLANNED_READY), "problems": {"runtime-profile/magicstick-cpu-4": STORE_FULL}}
    created = provider.create(failing)
    assert created.outs["retries"]["runtime-profile/magicstick-cpu-4"]["attempts"] == 1

    assert provider.diff(created.id, created.outs, failing).changes is True
    again = provider.update(created.id, created.outs, failing)
    record = again.outs["retries"]["runtime-profile/magicstick-cpu-4"]
    assert (record["attempts"], record["since"]) == (
        2,
        created.outs["retries"]["runtime-profile/magicstick-cpu-4"]["since"],
    )
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"]["message"].endswith(", 2 attempts)")

    cleared = provider.check(
        {}, {**_inputs(namespace, PLANNED_READY), "problems": {"runtime-profile/magicstick-cpu-4": None}}
    ).inputs
    assert provider.diff(created.id, created.outs, cleared).changes is True
    provider.update(created.id, created.outs, cleared)
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"] == PLANNED_READY


def test_a_converged_run_without_problems_writes_nothing(own_crds, namespace, admin: KubeClient, admin_access):
    load(admin, [_activation_in(namespace)])
    provider = _configured(admin_access)
    inputs = provider.check({}, _inputs(namespace, PLANNED_READY)).inputs
    created = provider.create(inputs)
    version = admin.get(MODULE_ACTIVATION, "basis", namespace)["metadata"]["resourceVersion"]

    assert provider.diff(created.id, created.outs, provider.check({}, inputs).inputs).changes is False
    assert provider.update(created.id, created.outs, inputs).outs["problem"] == {}
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["metadata"]["resourceVersion"] == version
