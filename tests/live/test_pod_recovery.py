"""Deleting terminal Model Pods under identity preconditions, against the real apiserver.

No kubelet runs here: the tests play it, writing each Pod's phase through /status.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from planning.models.recovery import TerminalPod, select_terminal_pods
from providers.kube import KubeAccess, KubeClient, ResourceKind
from providers.pod_recovery import POD, DeleteOutcome, PodRecoveryProvider, delete_exact_pod, delete_terminal_pod
from tests.cluster.apiserver import READER_USER
from tests.providers.engine import LEGACY_ACCESS, configured, kubeconfig_config

MODEL = ResourceKind(group="kubeai.org", version="v1", kind="Model", plural="models", namespaced=True)
SERVICE_ACCOUNT = ResourceKind(group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True)
KUBELET = "test-kubelet"
LOADER = "test-loader"


def create_model(client: KubeClient, namespace: str, name: str = "qwen") -> dict[str, Any]:
    body = {
        "apiVersion": "kubeai.org/v1",
        "kind": "Model",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "engine": "OLlama",
            "features": ["TextGeneration"],
            "url": "ollama://qwen2.5:0.5b",
            "scaleDownDelaySeconds": 30,
            "targetRequests": 32,
        },
    }
    return client.apply(MODEL, body, field_manager=LOADER)


def create_model_pod(
    client: KubeClient, namespace: str, model: dict[str, Any], name: str = "model-qwen-0", phase: str = "Failed"
) -> dict:
    """A Pod the Model controls, in `phase` as a kubelet would have reported it."""
    client.apply(
        SERVICE_ACCOUNT,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}},
        field_manager=LOADER,
    )
    owner = {
        "apiVersion": "kubeai.org/v1",
        "kind": "Model",
        "name": model["metadata"]["name"],
        "uid": model["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]},
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [{"name": "server", "image": "ollama/ollama:example"}],
        },
    }
    client.apply(POD, body, field_manager=LOADER)
    status = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "status": {"phase": phase, "reason": "Evicted", "message": "The node was low on resource: memory."},
    }
    return client.apply(POD, status, field_manager=KUBELET, subresource="status")


def the_terminal_pod(client: KubeClient, namespace: str, model: dict[str, Any]) -> TerminalPod:
    (found,) = select_terminal_pods(client.list(POD, namespace=namespace), model["metadata"]["uid"])
    return found


def touch(client: KubeClient, namespace: str, name: str) -> None:
    """Change the Pod after it was observed, as a kubelet or another controller might."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"touched": "yes"}},
    }
    client.apply(POD, body, field_manager="someone-else")


def test_the_failed_pod_written_through_status_is_selected_for_its_model(namespace, admin: KubeClient):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    create_model_pod(admin, namespace, model, name="model-qwen-1", phase="Running")
    selected = the_terminal_pod(admin, namespace, model)
    assert (selected.name, selected.phase, selected.reason) == ("model-qwen-0", "Failed", "Evicted")


def test_a_deletion_with_the_observed_uid_and_resource_version_removes_the_pod(namespace, admin: KubeClient):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    assert delete_terminal_pod(admin, namespace, the_terminal_pod(admin, namespace, model)) is DeleteOutcome.DELETED
    assert admin.get_or_none(POD, "model-qwen-0", namespace) is None


def test_a_pod_changed_since_it_was_observed_stays_and_the_conflict_is_reported(namespace, admin: KubeClient):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    observed = the_terminal_pod(admin, namespace, model)
    touch(admin, namespace, observed.name)
    assert delete_terminal_pod(admin, namespace, observed) is DeleteOutcome.CONFLICT
    assert admin.get(POD, observed.name, namespace)["metadata"]["uid"] == observed.uid


def test_a_pod_with_another_uid_under_the_same_name_stays(namespace, admin: KubeClient):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    observed = the_terminal_pod(admin, namespace, model)
    stranger = replace(observed, uid="00000000-0000-4000-8000-000000000000")
    assert delete_terminal_pod(admin, namespace, stranger) is DeleteOutcome.CONFLICT
    assert admin.get(POD, observed.name, namespace)["metadata"]["resourceVersion"] == observed.resource_version


def test_a_pod_that_is_already_gone_is_reported_gone(namespace, admin: KubeClient):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    observed = the_terminal_pod(admin, namespace, model)
    assert delete_terminal_pod(admin, namespace, observed) is DeleteOutcome.DELETED
    assert delete_terminal_pod(admin, namespace, observed) is DeleteOutcome.ALREADY_GONE


@pytest.mark.parametrize(("uid", "resource_version"), [("", "1"), ("u", ""), ("", "")])
def test_a_deletion_without_both_preconditions_is_refused_before_any_request(admin: KubeClient, uid, resource_version):
    before = admin.requests
    with pytest.raises(ValueError, match="preconditions"):
        delete_exact_pod(admin, namespace="ai-system", name="model-qwen-0", uid=uid, resource_version=resource_version)
    assert admin.requests == before


def _inputs(namespace: str, pod: TerminalPod, attempt: float = 1.0) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "pod": pod.name,
        "podUID": pod.uid,
        "resourceVersion": pod.resource_version,
        "attempt": attempt,
    }


def _configured(access: KubeAccess) -> PodRecoveryProvider:
    assert access.kubeconfig is not None
    return configured(PodRecoveryProvider(), kubeconfig_config(access.kubeconfig))


def test_the_provider_create_makes_one_deletion_and_records_its_outcome(namespace, admin: KubeClient, admin_access):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    observed = the_terminal_pod(admin, namespace, model)
    provider = _configured(admin_access)
    inputs = provider.check({}, _inputs(namespace, observed)).inputs

    created = provider.create(inputs)

    assert created.id == f"{namespace}/model-qwen-0/{observed.uid}/1"
    assert created.outs["outcome"] == "Deleted"
    assert created.outs["attempt"] == 1
    assert admin.get_or_none(POD, "model-qwen-0", namespace) is None


def test_the_provider_reports_a_conflict_and_leaves_the_changed_pod(namespace, admin: KubeClient, admin_access):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    observed = the_terminal_pod(admin, namespace, model)
    touch(admin, namespace, observed.name)
    created = _configured(admin_access).create(_inputs(namespace, observed))
    assert created.outs["outcome"] == "Conflict"
    assert admin.get_or_none(POD, observed.name, namespace) is not None


def test_a_conflict_is_a_permanent_problem_with_the_servers_answer_and_the_next_plans_new_preconditions_replace_the_attempt(
    namespace, admin: KubeClient, admin_access
):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    observed = the_terminal_pod(admin, namespace, model)
    touch(admin, namespace, observed.name)
    provider = _configured(admin_access)
    inputs = provider.check({}, _inputs(namespace, observed)).inputs

    created = provider.create(inputs)

    problem = created.outs["problem"]
    assert (problem["reason"], problem["persistence"]) == ("PodRecoveryConflict", "Permanent")
    assert (
        problem["message"].startswith("409 Conflict: ") and "ResourceVersion in the precondition" in problem["message"]
    )
    assert provider.diff(created.id, created.outs, inputs).changes is False
    replanned = provider.check({}, _inputs(namespace, the_terminal_pod(admin, namespace, model))).inputs
    assert provider.diff(created.id, created.outs, replanned).replaces == ["resourceVersion"]


def test_a_deletion_the_api_server_refuses_is_a_temporary_problem_and_the_attempt_is_made_again(
    namespace, admin: KubeClient, cluster
):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    observed = the_terminal_pod(admin, namespace, model)
    provider = configured(PodRecoveryProvider(), kubeconfig_config(str(cluster.kubeconfig_path(READER_USER))))
    inputs = provider.check({}, _inputs(namespace, observed)).inputs

    created = provider.create(inputs)

    assert created.outs["outcome"] == "Failed"
    problem = created.outs["problem"]
    assert (problem["reason"], problem["persistence"]) == ("PodRecoveryRefused", "Temporary")
    assert problem["message"].startswith("403 Forbidden: ")
    assert admin.get_or_none(POD, observed.name, namespace) is not None
    again = provider.diff(created.id, created.outs, inputs)
    assert again.changes and again.replaces == ["problem"]


def test_a_deleted_pod_has_no_problem(namespace, admin: KubeClient, admin_access):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    provider = _configured(admin_access)
    created = provider.create(provider.check({}, _inputs(namespace, the_terminal_pod(admin, namespace, model))).inputs)
    assert (created.outs["outcome"], created.outs["problem"]) == ("Deleted", {})


def test_reading_or_deleting_an_attempt_whose_state_names_a_kubeconfig_absent_here_touches_nothing(
    namespace, admin: KubeClient, admin_access
):
    model = create_model(admin, namespace)
    create_model_pod(admin, namespace, model)
    observed = the_terminal_pod(admin, namespace, model)
    provider = _configured(admin_access)
    outputs = {**_inputs(namespace, observed), "outcome": "Conflict"}
    before = admin.get(POD, observed.name, namespace)["metadata"]["resourceVersion"]

    assert provider.read("id", {**outputs, **LEGACY_ACCESS}).outs == outputs
    provider.delete("id", {**outputs, **LEGACY_ACCESS})

    assert admin.get(POD, observed.name, namespace)["metadata"]["resourceVersion"] == before


def test_every_changed_input_replaces_the_attempt():
    pod = TerminalPod(name="p", uid="u", resource_version="1", phase="Failed", reason="", message="", owner_uid="m")
    old = {**_inputs("ai-system", pod), "outcome": "Deleted"}
    provider = PodRecoveryProvider()
    assert provider.diff("id", old, _inputs("ai-system", pod)).changes is False
    for changed in ({"attempt": 2.0}, {"resourceVersion": "2"}, {"podUID": "v"}, {"pod": "q"}, {"namespace": "ai"}):
        diff = provider.diff("id", old, {**_inputs("ai-system", pod), **changed})
        assert diff.replaces == list(changed)


@pytest.mark.parametrize(
    ("change", "failing"),
    [
        ({"podUID": ""}, ["podUID"]),
        ({"resourceVersion": None}, ["resourceVersion"]),
        ({"attempt": 0}, ["attempt"]),
        ({"attempt": 1.5}, ["attempt"]),
        ({"namespace": "", "pod": ""}, ["namespace", "pod"]),
    ],
)
def test_check_names_every_missing_or_malformed_input(change, failing):
    pod = TerminalPod(name="p", uid="u", resource_version="1", phase="Failed", reason="", message="", owner_uid="m")
    result = PodRecoveryProvider().check({}, {**_inputs("ai-system", pod), **change})
    assert [failure.property for failure in result.failures] == failing


def test_check_restores_the_attempt_number_as_an_integer():
    pod = TerminalPod(name="p", uid="u", resource_version="1", phase="Failed", reason="", message="", owner_uid="m")
    result = PodRecoveryProvider().check({}, _inputs("ai-system", pod, attempt=3.0))
    assert result.failures == [] and result.inputs["attempt"] == 3 and isinstance(result.inputs["attempt"], int)
