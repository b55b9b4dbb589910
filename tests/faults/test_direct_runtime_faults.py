"""The DirectRuntime provider under API server outages: a 5xx, a 429, a lost connection or a
held answer is the runtime's ApiUnavailable problem (Temporary, Starting), never an exception;
the next run tries again and, the server answering again, clears it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from planning.models.direct import DirectRuntimeKind
from providers.direct_runtime import DirectRuntimeProvider
from providers.kinds import CONFIG_MAP
from providers.kube import KubeClient
from providers.status_writer import problems_of, status_with_problems
from tests.faults.conftest import ATTEMPTS, Faulty
from tests.faults.proxy import Action, Answer, Fault, Hold, Reset
from tests.providers.direct_runtime_objects import identity, inputs, runtime_objects

NAME = "omni"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
OUTAGES: dict[str, tuple[Action, str]] = {
    "503": (Answer(503), "503 ServiceUnavailable: fault injected"),
    "500": (Answer(500), "500 InternalError: fault injected"),
    "429": (Answer(429, retry_after="0"), "429 TooManyRequests: fault injected"),
    "no connection": (Reset(), "Server disconnected without sending a response"),
    "no answer in time": (Hold(), "timed out after 1 s (waiting for the answer)"),
}


def first_path(namespace: str, kind: DirectRuntimeKind) -> str:
    """The path of the runtime's first object: the ConfigMap of the realtime runtime, else the Service."""
    first = runtime_objects(namespace, NAME, kind)[0]
    return f"/api/v1/namespaces/{namespace}/{'configmaps' if first['kind'] == 'ConfigMap' else 'services'}/{first['metadata']['name']}"


@pytest.mark.parametrize(("action", "answer"), OUTAGES.values(), ids=OUTAGES.keys())
def test_an_outage_is_an_unavailable_problem_after_the_policys_attempts_and_applies_nothing_after_it(
    faulty: Faulty, admin: KubeClient, namespace: str, through_proxy: Callable, action: Action, answer: str
):
    path = first_path(namespace, DirectRuntimeKind.REALTIME)
    faulty.proxy.plan(Fault("PATCH", path, action, on=None))
    provider = through_proxy(DirectRuntimeProvider())

    result = provider.create(provider.check({}, inputs(namespace, runtime_objects(namespace, NAME))).inputs)

    problem = result.outs["problem"]
    assert (problem["reason"], problem["persistence"]) == ("RealtimeApiUnavailable", "Temporary")
    assert (
        problem["message"].startswith(f"apply ConfigMap/{namespace}/{NAME}-stages: ") and answer in problem["message"]
    )
    assert faulty.proxy.count("PATCH", path) == ATTEMPTS
    assert result.outs["applied"] == []
    assert faulty.proxy.count("PATCH", rf"/api.*/namespaces/{namespace}/(services|deployments)/.*") == 0


@pytest.mark.parametrize("kind", list(DirectRuntimeKind), ids=str)
def test_the_next_run_after_an_outage_tries_again_and_clears_the_problem_once_the_server_answers(
    faulty: Faulty, admin: KubeClient, namespace: str, through_proxy: Callable, kind: DirectRuntimeKind
):
    objects = runtime_objects(namespace, NAME, kind)
    faulty.proxy.plan(Fault("PATCH", first_path(namespace, kind), Answer(503), on=None))
    provider = through_proxy(DirectRuntimeProvider())
    checked = provider.check({}, inputs(namespace, objects, kind)).inputs
    failed = provider.create(checked)
    assert failed.outs["problem"]["reason"] == f"{kind.value}ApiUnavailable"

    faulty.proxy.plan()
    assert provider.diff(failed.id, failed.outs, checked).changes is True
    recovered = provider.update(failed.id, failed.outs, checked)

    assert recovered.outs["problem"] == {}
    assert recovered.outs["applied"] == [identity(body) for body in objects]
    assert provider.diff(failed.id, recovered.outs, checked).changes is False


def test_the_outage_problem_leaves_the_activation_starting_not_degraded(
    faulty: Faulty, admin: KubeClient, namespace: str, through_proxy: Callable
):
    faulty.proxy.plan(Fault("PATCH", first_path(namespace, DirectRuntimeKind.REALTIME), Answer(503), on=None))
    provider = through_proxy(DirectRuntimeProvider())
    outputs = provider.create(provider.check({}, inputs(namespace, runtime_objects(namespace, NAME))).inputs).outs
    planned = {
        "phase": "Ready",
        "reason": "Ready",
        "message": "The realtime runtime is ready.",
        "observedGeneration": 1,
    }

    status = status_with_problems(
        planned, problems_of({f"realtime/{namespace}/{NAME}": outputs["problem"]}), previous={}, now=NOW
    )

    assert (status["phase"], status["reason"]) == ("Starting", "RealtimeApiUnavailable")
    assert "503 ServiceUnavailable" in status["message"]


def test_a_read_during_an_outage_keeps_the_state_and_asks_for_another_try(
    faulty: Faulty, admin: KubeClient, namespace: str, through_proxy: Callable
):
    objects = runtime_objects(namespace, NAME)
    provider = through_proxy(DirectRuntimeProvider())
    created = provider.create(provider.check({}, inputs(namespace, objects)).inputs)
    faulty.proxy.plan(Fault("GET", rf"/api/v1/namespaces/{namespace}/configmaps/.*", Answer(503), on=None))

    read = provider.read(created.id, created.outs)

    assert read.id == created.id
    assert read.outs["applied"] == created.outs["applied"]
    assert read.outs["problem"]["reason"] == "RealtimeApiUnavailable"
    assert admin.get_or_none(CONFIG_MAP, f"{NAME}-stages", namespace) is not None
