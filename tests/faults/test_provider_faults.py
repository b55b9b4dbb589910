"""The status writer, the stale removal, the pod recovery and the Ollama alias under API server
faults: a transient fault is retried and the change lands once; a persistent one stops after
the policy's attempts, changes nothing, and the outcome names the server's answer (raised, or
returned as the resource's `problem`: both are allowed here; an endless retry or a silent
success is not)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from providers.kinds import KUSTOMIZATION, MODULE_ACTIVATION
from providers.kube import KubeClient, ResourceKind
from providers.ollama import PROBE_ATTEMPTS, OllamaAliasProvider, proxy_path
from providers.pod_recovery import POD, PodRecoveryProvider
from providers.stale_removal import RemovalOutcome, StaleRemovalProvider
from providers.status_writer import StatusProvider, StatusTarget, write_status
from tests.faults.conftest import ATTEMPTS, Faulty, in_namespace, reported
from tests.faults.proxy import Answer, Fault, Hold, Reset, ResetStage
from tests.live.world import ensure_namespace, load
from tests.planning.builders import activation

READY = {"phase": "Ready", "observedGeneration": 1, "message": "Kustomization platform-basis is ready."}
STALE = "platform-stale-fault"
SERVICE_ACCOUNT = ResourceKind(group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True)


def status_inputs(namespace: str) -> dict:
    return {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModuleActivation",
        "namespace": namespace,
        "name": "basis",
        "status": READY,
    }


def status_path(namespace: str) -> str:
    return MODULE_ACTIVATION.object_path("basis", namespace) + "/status"


def test_a_status_write_through_a_500_and_a_reset_lands_once(
    faulty: Faulty, own_crds, admin: KubeClient, namespace: str
):
    load(admin, [in_namespace(activation("basis"), namespace)])
    faulty.proxy.plan(
        Fault("PATCH", status_path(namespace), Answer(500), on=(1,)),
        Fault("PATCH", status_path(namespace), Reset(), on=(2,)),
    )

    assert write_status(faulty.client, StatusTarget.from_inputs(status_inputs(namespace))) is True

    assert [e.upstream for e in faulty.proxy.exchanges if e.method == "PATCH"] == [None, None, 200]
    assert admin.get(MODULE_ACTIVATION, "basis", namespace)["status"] == READY


@pytest.mark.parametrize(
    ("code", "answer", "attempts"), [(500, "500 InternalError", ATTEMPTS), (409, "409 Conflict", 1)], ids=["500", "409"]
)
def test_a_status_write_the_server_keeps_refusing_stops_after_the_policys_attempts_and_writes_nothing(
    faulty: Faulty,
    own_crds,
    admin: KubeClient,
    namespace: str,
    through_proxy: Callable,
    code: int,
    answer: str,
    attempts: int,
):
    load(admin, [in_namespace(activation("basis"), namespace)])
    faulty.proxy.plan(Fault("PATCH", status_path(namespace), Answer(code), on=None))

    reply = reported(lambda: through_proxy(StatusProvider()).create(status_inputs(namespace)))

    assert answer in reply
    assert faulty.proxy.count("PATCH", status_path(namespace)) == attempts
    assert "status" not in admin.get(MODULE_ACTIVATION, "basis", namespace)


def test_a_status_write_whose_read_keeps_failing_sends_no_write(
    faulty: Faulty, own_crds, admin: KubeClient, namespace: str, through_proxy: Callable
):
    load(admin, [in_namespace(activation("basis"), namespace)])
    faulty.proxy.plan(Fault("GET", MODULE_ACTIVATION.object_path("basis", namespace), Reset(), on=None))

    answer = reported(lambda: through_proxy(StatusProvider()).create(status_inputs(namespace)))

    assert "Server disconnected without sending a response" in answer
    assert faulty.proxy.count("GET", MODULE_ACTIVATION.object_path("basis", namespace)) == ATTEMPTS
    assert faulty.proxy.count("PATCH", status_path(namespace)) == 0


def stale_kustomization(admin: KubeClient) -> dict:
    ensure_namespace(admin, "flux-system")
    body = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": STALE,
            "namespace": "flux-system",
            "labels": {"app.kubernetes.io/managed-by": "magicstick"},
        },
        "spec": {"interval": "10m0s", "prune": True, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
    }
    created = admin.apply(KUSTOMIZATION, body, field_manager="earlier-operator")
    return {
        "apiVersion": body["apiVersion"],
        "kind": "Kustomization",
        "namespace": "flux-system",
        "name": STALE,
        "uid": created["metadata"]["uid"],
    }


STALE_PATH = KUSTOMIZATION.object_path(STALE, "flux-system")


def test_a_removal_the_server_keeps_failing_is_a_failed_outcome_naming_the_answer(
    faulty: Faulty, clean_shared_namespaces, admin: KubeClient, through_proxy: Callable
):
    inputs = stale_kustomization(admin)
    faulty.proxy.plan(Fault("DELETE", STALE_PATH, Answer(503), on=None))

    outputs = through_proxy(StaleRemovalProvider()).create(inputs).outs

    assert outputs["outcome"] == RemovalOutcome.FAILED
    assert outputs["message"].startswith("503 ServiceUnavailable: fault injected")
    assert faulty.proxy.count("DELETE", STALE_PATH) == ATTEMPTS
    assert admin.get_or_none(KUSTOMIZATION, STALE, "flux-system") is not None


def test_a_removal_whose_answer_is_lost_is_retried_and_reports_the_object_gone(
    faulty: Faulty, clean_shared_namespaces, admin: KubeClient, through_proxy: Callable
):
    inputs = stale_kustomization(admin)
    faulty.proxy.plan(Fault("DELETE", STALE_PATH, Reset(ResetStage.AFTER_FORWARD)))

    outputs = through_proxy(StaleRemovalProvider()).create(inputs).outs

    assert outputs["outcome"] in (RemovalOutcome.REMOVED, RemovalOutcome.ALREADY_GONE)
    assert [e.upstream for e in faulty.proxy.exchanges if e.method == "DELETE"] == [200, 404]
    assert admin.get_or_none(KUSTOMIZATION, STALE, "flux-system") is None


def recovery_inputs(admin: KubeClient, namespace: str) -> dict:
    """A Pod in `namespace` (its phase does not matter to the deletion) and the inputs of its recovery."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}}
    admin.apply(SERVICE_ACCOUNT, account, field_manager="test-loader")
    spec = {"automountServiceAccountToken": False, "containers": [{"name": "server", "image": "ollama/ollama:example"}]}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "model-qwen-0", "namespace": namespace},
        "spec": spec,
    }
    metadata = admin.apply(POD, body, field_manager="test-loader")["metadata"]
    return (
        PodRecoveryProvider()
        .check(
            {},
            {
                "namespace": namespace,
                "pod": metadata["name"],
                "podUID": metadata["uid"],
                "resourceVersion": metadata["resourceVersion"],
                "attempt": 1.0,
            },
        )
        .inputs
    )


def test_a_pod_deletion_the_server_keeps_failing_stops_after_the_policys_attempts_naming_the_answer(
    faulty: Faulty, admin: KubeClient, namespace: str, through_proxy: Callable
):
    inputs = recovery_inputs(admin, namespace)
    pod_path = POD.object_path(inputs["pod"], namespace)
    faulty.proxy.plan(Fault("DELETE", pod_path, Answer(500), on=None))

    answer = reported(lambda: through_proxy(PodRecoveryProvider()).create(inputs))

    assert "500 InternalError" in answer
    assert faulty.proxy.count("DELETE", pod_path) == ATTEMPTS
    assert admin.get_or_none(POD, inputs["pod"], namespace) is not None


def test_a_pod_deletion_held_past_the_client_timeout_is_retried_and_deletes_that_pod(
    faulty: Faulty, admin: KubeClient, namespace: str, through_proxy: Callable
):
    inputs = recovery_inputs(admin, namespace)
    pod_path = POD.object_path(inputs["pod"], namespace)
    faulty.proxy.plan(Fault("DELETE", pod_path, Hold()))

    outputs = through_proxy(PodRecoveryProvider()).create(inputs).outs

    assert outputs["outcome"] == "Deleted"
    assert faulty.proxy.count("DELETE", pod_path) == 2
    assert admin.get_or_none(POD, inputs["pod"], namespace) is None


def test_an_alias_whose_pod_proxy_answers_503_is_the_resources_problem_after_one_attempt(
    faulty: Faulty, namespace: str, through_proxy: Callable
):
    provider = through_proxy(OllamaAliasProvider())
    alias = {
        "namespace": namespace,
        "pods": ["model-qwen-0"],
        "source": "qwen2.5:0.5b",
        "alias": "qwen2505bcpu",
        "port": 8000,
    }
    inputs = provider.check({}, alias).inputs
    tags = proxy_path(namespace, "model-qwen-0", "api/tags", port=8000)
    faulty.proxy.plan(Fault("GET", tags, Answer(503), on=None))

    outputs = provider.create(inputs).outs

    assert outputs["problem"]["reason"] == "OllamaUnreachable"
    assert "503 ServiceUnavailable" in outputs["problem"]["message"]
    assert faulty.proxy.count("GET", tags) == PROBE_ATTEMPTS
