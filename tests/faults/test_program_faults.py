"""One reconcile step (observe -> plan -> declare) of the real program under offline mocks, its
cluster reached through the fault proxy by `magicstick:kubeconfig`: transient faults leave the
run as it is without them; a read that fails for good stops the run before a single resource is
declared (invariant 1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from cli.offline import RecordingMonitor, run_offline
from program import main as program
from program import observe
from providers.live_reader import SnapshotReadError
from tests.faults.conftest import ATTEMPTS, Faulty, instant
from tests.faults.proxy import Action, Answer, Fault, Reset

MODULE_ACTIVATIONS = "/apis/appliance.magicstick.dev/v1alpha1/namespaces/[^/]+/moduleactivations"
PODS_IN_AI = "/api/v1/namespaces/ai/pods"
NODES = "/api/v1/nodes"
KUSTOMIZATIONS = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations"


@pytest.fixture
def instant_observe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's access as its settings name it, with the tests' instant retry policy."""
    settings_access = observe.kube_access
    monkeypatch.setattr(observe, "kube_access", lambda settings: instant(settings_access(settings)))


def run_step(faulty: Faulty, system_namespace: str, monitor: RecordingMonitor) -> dict[str, Mapping[str, Any]]:
    """The inputs of every resource the step declared, by URN."""
    config = {
        "kubeconfig": str(faulty.access.kubeconfig),
        "systemNamespace": system_namespace,
        "now": "2026-01-01T00:00:00Z",
    }
    _, run = run_offline(program.run, config, monitor=monitor)
    return {registration.urn: registration.inputs for registration in run.registrations}


def test_a_step_through_transient_faults_declares_what_a_step_without_them_declares(
    faulty: Faulty, world: str, instant_observe
):
    undisturbed = run_step(faulty, world, RecordingMonitor())
    once: dict[str, Action] = {
        NODES: Answer(429, retry_after="0"),
        MODULE_ACTIVATIONS: Answer(503),
        KUSTOMIZATIONS: Reset(),
        PODS_IN_AI: Answer(500),
    }
    fault_free = {path: faulty.proxy.count("GET", path) for path in once}
    faulty.proxy.plan(*(Fault("GET", path, action) for path, action in once.items()))

    assert run_step(faulty, world, RecordingMonitor()) == undisturbed
    assert any(urn.endswith("Kustomization::kustomization/flux-system/platform-basis") for urn in undisturbed)
    assert fault_free[PODS_IN_AI] == 2, "the Pods of KubeAI Models, then those of direct runtimes"
    assert {path: faulty.proxy.count("GET", path) for path in once} == {
        path: 2 * fault_free[path] + 1 for path in once
    }, "each request once fault-free; faulted, each again and the faulted one retried"


FAILING_READS: dict[str, tuple[str, Action, str]] = {
    "moduleactivations-503": (
        MODULE_ACTIVATIONS,
        Answer(503),
        r"reading ModuleActivation .* failed: 503 ServiceUnavailable",
    ),
    "model-pods-reset": (
        PODS_IN_AI,
        Reset(),
        r"reading Pod \(v1\) in namespace ai failed: cannot reach .*Server disconnected",
    ),
}


@pytest.mark.parametrize(("path", "action", "error"), FAILING_READS.values(), ids=FAILING_READS.keys())
def test_a_read_failing_past_the_retry_budget_stops_the_step_before_anything_is_declared(
    faulty: Faulty, world: str, instant_observe, path: str, action: Action, error: str
):
    faulty.proxy.plan(Fault("GET", path, action, on=None))
    monitor = RecordingMonitor()

    with pytest.raises(SnapshotReadError, match=error):
        run_step(faulty, world, monitor)

    assert monitor.registrations == []
    assert faulty.proxy.count("GET", path) == ATTEMPTS
    assert [e for e in faulty.proxy.exchanges if e.method != "GET"] == []
