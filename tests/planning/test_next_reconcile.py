"""Time-based states arrive on time: Appliance/local publishes the plan's next deadline.

A state that changes with time alone (a Pod creation stall, the next Pod recovery attempt, host
evidence turning stale) is seen only by a run. The plan names the earliest such moment still to
come in status.nextReconcileAt (and what it waits for in status.nextReconcileReason); the
reconcile trigger requests a run then (tests/services/reconcile_trigger/test_deadline.py).
Together: a stalled Pod is reported within two minutes plus the trigger's debounce.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from planning.conditions import rfc3339
from planning.deadlines import Deadline, next_deadline
from planning.hardware.evidence import EVIDENCE_MAX_AGE
from tests.planning.builders import NOW, appliance, plan_of, status_of
from tests.planning.hardware.strix_halo import amd_installed, consented, evidence, halo_feature, halo_node
from tests.planning.models.world import later, local_model, observed_model, platform, pod


def appliance_status(result) -> dict:
    return status_of(result, "Appliance", "local")


def with_status(obj: dict, status: dict) -> dict:
    return {**obj, "status": status}


def waiting_model(*, now: datetime = NOW, status: dict | None = None, extra: tuple[dict, ...] = ()):
    """A ModelActivation whose KubeAI Model exists without a Pod, planned at `now`."""
    activation = local_model("m") if status is None else with_status(local_model("m"), status)
    return plan_of(*platform(), activation, observed_model("m"), *extra, now=now)


class TestPodCreationStall:
    def test_a_model_without_a_pod_since_t_publishes_t_plus_two_minutes(self):
        result = waiting_model()
        published = appliance_status(result)
        assert published["nextReconcileAt"] == rfc3339(NOW + timedelta(minutes=2))
        assert published["nextReconcileReason"] == "ModelActivation ai-system/m: pod creation stall"
        assert result.next_reconcile == Deadline(
            at=NOW + timedelta(minutes=2), reason="ModelActivation ai-system/m: pod creation stall"
        )

    def test_planning_at_the_published_deadline_reports_the_stalled_pod(self):
        first = waiting_model()
        deadline = datetime.fromisoformat(appliance_status(first)["nextReconcileAt"])
        stalled = waiting_model(now=deadline, status=status_of(first, "ModelActivation", "m"))
        model = status_of(stalled, "ModelActivation", "m")
        assert (model["phase"], model["reason"]) == ("Degraded", "ModelPodCreationStalled")
        assert "nextReconcileAt" not in appliance_status(stalled)

    def test_the_deadline_does_not_move_while_the_pod_is_awaited(self):
        first = waiting_model()
        model = status_of(first, "ModelActivation", "m")
        again = waiting_model(now=later(1), status=model)
        assert appliance_status(again)["nextReconcileAt"] == appliance_status(first)["nextReconcileAt"]
        assert status_of(again, "ModelActivation", "m") == model

    def test_a_pod_clears_the_deadline(self):
        first = waiting_model()
        started = waiting_model(
            now=later(1), status=status_of(first, "ModelActivation", "m"), extra=(pod("m-0", "m", ready=False),)
        )
        assert status_of(started, "ModelActivation", "m")["phase"] == "Starting"
        assert "nextReconcileAt" not in appliance_status(started)
        assert started.next_reconcile is None


class TestPodRecoveryBackoff:
    def test_a_terminal_pod_waiting_for_its_next_attempt_publishes_the_attempt_time(self):
        failed = pod("m-0", "m", phase="Failed", ready=False, reason="Error")
        first = waiting_model(extra=(failed,))
        recovery = status_of(first, "ModelActivation", "m")["podRecovery"]
        assert recovery["attempts"] == 1
        waiting = waiting_model(
            now=NOW + timedelta(seconds=3), status=status_of(first, "ModelActivation", "m"), extra=(failed,)
        )
        published = appliance_status(waiting)
        assert published["nextReconcileAt"] == rfc3339(NOW + timedelta(seconds=10))
        assert published["nextReconcileReason"] == "ModelActivation ai-system/m: pod recovery attempt 2"

    def test_planning_at_the_attempt_time_makes_the_attempt(self):
        failed = pod("m-0", "m", phase="Failed", ready=False, reason="Error")
        first = waiting_model(extra=(failed,))
        deadline = datetime.fromisoformat(appliance_status(first)["nextReconcileAt"])
        attempted = waiting_model(now=deadline, status=status_of(first, "ModelActivation", "m"), extra=(failed,))
        assert attempted.models.outcomes[0].pod_deletion is not None
        assert status_of(attempted, "ModelActivation", "m")["podRecovery"]["attempts"] == 2

    def test_exhausted_recovery_waits_for_nothing_but_the_pod_creation_stall(self):
        failed = pod("m-0", "m", phase="Failed", ready=False)
        previous = status_of(waiting_model(extra=(failed,)), "ModelActivation", "m")
        moment = NOW
        for _ in range(5):
            moment += timedelta(minutes=10)
            result = waiting_model(now=moment, status=previous, extra=(failed,))
            previous = status_of(result, "ModelActivation", "m")
        assert previous["reason"] == "ModelPodRecoveryExhausted"
        assert "nextReconcileAt" not in appliance_status(result)


class TestHostEvidence:
    def test_current_host_evidence_publishes_the_moment_it_turns_stale(self):
        observed = NOW - timedelta(minutes=2)
        result = plan_of(
            appliance(),
            consented(),
            *amd_installed(),
            halo_node(annotation=evidence(observed=observed)),
            halo_feature(),
        )
        published = appliance_status(result)
        stale_at = observed + EVIDENCE_MAX_AGE + timedelta(seconds=1)
        assert published["nextReconcileAt"] == rfc3339(stale_at)
        assert published["nextReconcileReason"] == "Node halo: host evidence turns stale"
        later_plan = plan_of(
            appliance(),
            consented(),
            *amd_installed(),
            halo_node(annotation=evidence(observed=observed)),
            halo_feature(),
            now=stale_at,
        )
        (node,) = appliance_status(later_plan)["hardwareOperators"]["amd-gpu"]["compatibility"]["nodes"]
        assert node["evidence"] == "Stale"

    def test_evidence_dated_ahead_of_the_allowed_skew_publishes_when_it_becomes_current(self):
        observed = NOW + timedelta(minutes=7)
        result = plan_of(
            appliance(),
            consented(),
            *amd_installed(),
            halo_node(annotation=evidence(observed=observed)),
            halo_feature(),
        )
        assert appliance_status(result)["nextReconcileAt"] == rfc3339(NOW + timedelta(minutes=2))
        assert appliance_status(result)["nextReconcileReason"] == "Node halo: host evidence becomes current"


class TestPublishing:
    def test_without_a_timer_the_appliance_publishes_no_deadline(self):
        result = plan_of(*platform())
        assert "nextReconcileAt" not in appliance_status(result)
        assert "nextReconcileReason" not in appliance_status(result)

    def test_a_deadline_already_past_is_never_published(self):
        stalled_since = {"since": rfc3339(NOW - timedelta(minutes=5)), "revision": "model-uid-m/1/1"}
        result = waiting_model(status={"phase": "WaitingForPod", "podCreation": stalled_since})
        assert status_of(result, "ModelActivation", "m")["reason"] == "ModelPodCreationStalled"
        assert "nextReconcileAt" not in appliance_status(result)

    def test_the_earliest_future_deadline_wins_and_ties_are_ordered_by_reason(self):
        deadlines = [
            Deadline(at=NOW + timedelta(minutes=2), reason="b"),
            Deadline(at=NOW - timedelta(minutes=1), reason="past"),
            Deadline(at=NOW, reason="now is not the future"),
            Deadline(at=NOW + timedelta(minutes=2), reason="a"),
            Deadline(at=NOW + timedelta(minutes=3), reason="later"),
        ]
        assert next_deadline(deadlines, now=NOW) == Deadline(at=NOW + timedelta(minutes=2), reason="a")
        assert next_deadline(reversed(deadlines), now=NOW) == Deadline(at=NOW + timedelta(minutes=2), reason="a")

    def test_two_runs_at_different_moments_before_the_deadline_write_the_same_status(self):
        first = waiting_model()
        model = status_of(first, "ModelActivation", "m")
        appliance_obj = appliance(status=appliance_status(first))
        objects = [appliance_obj, *platform()[1:], with_status(local_model("m"), model), observed_model("m")]
        a = plan_of(*objects, now=NOW + timedelta(seconds=30))
        b = plan_of(*objects, now=NOW + timedelta(seconds=90))
        assert appliance_status(a) == appliance_status(b) == appliance_status(first)
