"""The live reader under API server faults: bounded retries, then the complete snapshot or an
error naming the kind and the server's answer, never a partial snapshot (invariant 1)."""

from __future__ import annotations

import pytest

from providers.kube import KubeClient, KubeError
from providers.live_reader import SnapshotReadError, read_snapshot
from tests.faults.conftest import ATTEMPTS, CLIENT_TIMEOUT, Faulty, in_namespace
from tests.faults.proxy import Action, Answer, Fault, Hold, Reset, ResetStage
from tests.live.world import load
from tests.planning.builders import runtime

CRDS_DISCOVERY = "/apis/apiextensions.k8s.io/v1"
NODES = "/api/v1/nodes"
NODE_FEATURES_DISCOVERY = "/apis/nfd.k8s-sigs.io/v1alpha1"
FLUX_CONFIG_MAPS = "/api/v1/namespaces/flux-system/configmaps"
KUSTOMIZATIONS = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations"
APPLIANCES = "/apis/appliance.magicstick.dev/v1alpha1/namespaces/[^/]+/appliances"
KUBEAI_DISCOVERY = "/apis/kubeai.org/v1"
PODS_IN_AI = "/api/v1/namespaces/ai/pods"


def test_every_list_that_fails_once_is_retried_once_and_the_snapshot_is_the_fault_free_one(faulty: Faulty, world: str):
    expected = read_snapshot(faulty.access, system_namespace=world)
    once: dict[str, Action] = {
        CRDS_DISCOVERY: Answer(429, retry_after="0"),
        NODES: Answer(500),
        FLUX_CONFIG_MAPS: Answer(503),
        PODS_IN_AI: Reset(),
        KUSTOMIZATIONS: Reset(ResetStage.MID_BODY),
        APPLIANCES: Hold(),
        KUBEAI_DISCOVERY: Answer(503),
    }
    fault_free = {path: faulty.proxy.count("GET", path) for path in once}
    faulty.proxy.plan(*(Fault("GET", path, action) for path, action in once.items()))

    assert read_snapshot(faulty.access, system_namespace=world) == expected
    assert fault_free[PODS_IN_AI] == 2, "the Pods of KubeAI Models, then those of direct runtimes"
    assert {path: faulty.proxy.count("GET", path) for path in once} == {
        path: 2 * fault_free[path] + 1 for path in once
    }, "each request once fault-free; faulted, each again and the faulted one retried"


PERSISTENT: dict[str, tuple[Action, str]] = {
    "429": (
        Answer(429, retry_after="0"),
        "429 TooManyRequests: fault injected by the test proxy into GET /api/v1/nodes",
    ),
    "500": (Answer(500), "500 InternalError: fault injected"),
    "503": (Answer(503), "503 ServiceUnavailable: fault injected"),
    "reset": (
        Reset(),
        "cannot reach https://127.0.0.1:[0-9]+: HTTP protocol error: Server disconnected without sending a response",
    ),
    "cut-body": (
        Reset(ResetStage.MID_BODY),
        "cannot reach https://127.0.0.1:[0-9]+: HTTP protocol error: peer closed connection without sending complete message body",
    ),
    "timeout": (
        Hold(),
        f"cannot reach https://127.0.0.1:[0-9]+: timed out after {CLIENT_TIMEOUT:g} s \\(waiting for the answer\\)",
    ),
}


@pytest.mark.parametrize(("action", "answer"), PERSISTENT.values(), ids=PERSISTENT.keys())
def test_a_list_failing_past_the_retry_budget_stops_the_read_naming_the_kind_and_the_answer(
    faulty: Faulty, world: str, action: Action, answer: str
):
    faulty.proxy.plan(Fault("GET", NODES, action, on=None))

    with pytest.raises(SnapshotReadError, match=rf"^reading Node \(v1\) failed: {answer}") as failure:
        read_snapshot(faulty.access, system_namespace=world)

    assert isinstance(failure.value.__cause__, KubeError)
    assert faulty.proxy.count("GET", NODES) == ATTEMPTS
    assert faulty.proxy.count("GET", NODE_FEATURES_DISCOVERY) == 0, "nothing is read after the failed LIST"


def test_a_discovery_failing_past_the_retry_budget_is_a_failed_read_not_an_absent_kind(faulty: Faulty, world: str):
    faulty.proxy.plan(Fault("GET", KUBEAI_DISCOVERY, Answer(503), on=None))

    with pytest.raises(
        SnapshotReadError, match=r"^reading Model \(kubeai.org/v1\) in namespace ai failed: 503 ServiceUnavailable"
    ):
        read_snapshot(faulty.access, system_namespace=world)

    assert faulty.proxy.count("GET", KUBEAI_DISCOVERY) == ATTEMPTS


TARGET = "faults-team-x"
"""A namespace only one ModelActivation targets: not one that every run needs."""


def targeting(world: str, admin: KubeClient) -> str:
    """A ModelActivation of `world` that targets TARGET; the path of the Pod LIST there."""
    local = {"preset": "qwen2505bcpu", "computeTarget": "cpu", "engine": "VLLM"}
    spec = {"type": "local", "enabled": True, "targetNamespace": TARGET, "local": local}
    load(admin, [in_namespace(runtime("ModelActivation", "in-team-x", spec), world)])
    return f"/api/v1/namespaces/{TARGET}/pods"


def test_a_server_fault_in_a_target_namespace_stops_the_read(faulty: Faulty, world: str, admin: KubeClient):
    pods = targeting(world, admin)
    faulty.proxy.plan(Fault("GET", pods, Answer(503), on=None))

    with pytest.raises(
        SnapshotReadError, match=rf"^reading Pod \(v1\) in namespace {TARGET} failed: 503 ServiceUnavailable"
    ):
        read_snapshot(faulty.access, system_namespace=world)

    assert faulty.proxy.count("GET", pods) == ATTEMPTS


def test_a_refusal_in_a_target_namespace_is_recorded_once_and_the_read_goes_on(
    faulty: Faulty, world: str, admin: KubeClient
):
    pods = targeting(world, admin)
    faulty.proxy.plan(Fault("GET", pods, Answer(403), on=None))

    snapshot = read_snapshot(faulty.access, system_namespace=world)

    assert [(u.namespace, u.kind) for u in snapshot.unreadable] == [(TARGET, "Pod")]
    assert faulty.proxy.count("GET", pods) == 1


def test_a_refused_list_of_runtime_deployments_in_a_target_namespace_is_recorded_and_nothing_there_is_kept(
    faulty: Faulty, world: str, admin: KubeClient
):
    targeting(world, admin)
    deployments = f"/apis/apps/v1/namespaces/{TARGET}/deployments"
    faulty.proxy.plan(Fault("GET", deployments, Answer(403), on=None))

    snapshot = read_snapshot(faulty.access, system_namespace=world)

    assert [(u.namespace, u.kind, u.resource, u.verb) for u in snapshot.unreadable] == [
        (TARGET, "Deployment", "deployments.apps", "list")
    ]
    assert [p for p in snapshot.pods if p.meta.namespace == TARGET] == []
    assert faulty.proxy.count("GET", f"/api/v1/namespaces/{TARGET}/configmaps") == 0, "nothing more is listed there"


def test_a_refused_list_of_runtime_deployments_in_a_namespace_every_run_needs_stops_the_read(
    faulty: Faulty, world: str
):
    faulty.proxy.plan(Fault("GET", "/apis/apps/v1/namespaces/ai/deployments", Answer(403), on=None))

    with pytest.raises(
        SnapshotReadError, match=r"^reading Deployment \(apps/v1\) in namespace ai failed: 403 Forbidden"
    ):
        read_snapshot(faulty.access, system_namespace=world)
