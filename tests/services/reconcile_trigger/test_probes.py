"""/healthz and /readyz: what they say of the trigger's state (pure), and how they are served.

The served probes of a running trigger are tested with the faults that fail them
(test_watch_faults.py) and as a process (test_main.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from services.flags import ListenAddress
from services.reconcile_trigger.probes import (
    ProbePath,
    ProbeReport,
    ProbeServer,
    WatchHealth,
    health_report,
    readiness_report,
)
from services.reconcile_trigger.watcher import Refusal, Verb

NOW = 1000.0
STALE = 120.0


def watch(
    target: str = "ModelActivation in ai-system",
    *,
    listed: bool = True,
    heard_at: float = NOW - 1.0,
    forbidden: Refusal | None = None,
) -> WatchHealth:
    return WatchHealth(target=target, listed=listed, heard_at=heard_at, forbidden=forbidden)


def refusal(namespace: str | None = "ai-system") -> Refusal:
    return Refusal(
        target="ModelActivation in ai-system",
        verb=Verb.LIST,
        resource="modelactivations.appliance.magicstick.dev",
        namespace=namespace,
        message='modelactivations.appliance.magicstick.dev is forbidden: User "x" cannot list resource "modelactivations"',
    )


def test_a_trigger_whose_watches_all_heard_from_the_server_lately_is_healthy():
    report = health_report(
        failed=False, watches=[watch(), watch("Node", heard_at=NOW - STALE)], now=NOW, stale_seconds=STALE
    )

    assert report == ProbeReport()
    assert report.body() == "ok\n"


def test_a_failed_thread_makes_the_trigger_unhealthy():
    report = health_report(failed=True, watches=[watch()], now=NOW, stale_seconds=STALE)

    assert report.problems == ("a thread of the trigger failed",)


def test_a_watch_that_heard_nothing_past_the_liveness_bound_makes_the_trigger_unhealthy_naming_it():
    report = health_report(
        failed=False, watches=[watch(), watch("Node", heard_at=NOW - STALE - 5)], now=NOW, stale_seconds=STALE
    )

    assert report.problems == ("watch Node: nothing heard from the API server for 125 s (bound 120 s)",)


def test_a_watch_not_listed_yet_makes_the_trigger_not_ready_naming_it():
    report = readiness_report(watches=[watch(), watch("Node", listed=False)])

    assert report.problems == ("watch Node: not listed yet",)


def test_a_forbidden_watch_makes_the_trigger_not_ready_naming_the_refused_verb_the_resource_and_the_namespace():
    (problem,) = readiness_report(watches=[watch(forbidden=refusal())]).problems

    assert problem.startswith(
        "watch ModelActivation in ai-system: forbidden to list modelactivations.appliance.magicstick.dev in namespace ai-system"
    )
    assert "(the trigger needs list and watch)" in problem and 'cannot list resource "modelactivations"' in problem


def test_a_forbidden_watch_that_never_listed_is_named_once_for_its_refusal():
    (problem,) = readiness_report(watches=[watch(listed=False, forbidden=refusal())]).problems

    assert "forbidden to list" in problem


def test_a_cluster_wide_refusal_says_so():
    assert "forbidden to list modelactivations.appliance.magicstick.dev cluster-wide" in refusal(None).describe()


@pytest.fixture
def served() -> Iterator[tuple[str, dict[ProbePath, ProbeReport]]]:
    reports = {ProbePath.HEALTHZ: ProbeReport(), ProbePath.READYZ: ProbeReport(("watch Node: not listed yet",))}
    server = ProbeServer(
        listen=ListenAddress("127.0.0.1", 0), reports={path: (lambda p=path: reports[p]) for path in ProbePath}
    ).start()
    try:
        yield f"http://127.0.0.1:{server.address.port}", reports
    finally:
        server.stop()


def test_the_probe_server_answers_200_ok_for_a_good_report_and_503_with_the_problems_otherwise(served):
    base, _ = served

    healthy, ready = httpx.get(base + ProbePath.HEALTHZ), httpx.get(base + ProbePath.READYZ)

    assert (healthy.status_code, healthy.text) == (200, "ok\n")
    assert (ready.status_code, ready.text) == (503, "watch Node: not listed yet\n")


def test_the_probe_server_answers_each_request_with_the_report_of_that_moment(served):
    base, reports = served
    reports[ProbePath.READYZ] = ProbeReport()

    assert httpx.get(base + ProbePath.READYZ).status_code == 200


def test_the_probe_server_answers_404_on_any_other_path(served):
    base, _ = served

    assert httpx.get(base + "/metrics").status_code == 404
