"""Terminal Model Pods are recovered by bounded, exact, persistent deletion attempts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from planning.models.recovery import (
    RECOVERY_EXHAUSTED,
    PodFailure,
    RecoveryDecision,
    RecoveryState,
    TerminalPod,
    backoff,
    decide_recovery,
    select_terminal_pods,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
MODEL_UID = "6f1c0d5e-0000-4000-8000-000000000001"
OTHER_MODEL_UID = "6f1c0d5e-0000-4000-8000-000000000002"
REVISION = "model-uid-1/generation-1/activation-generation-1"


def owner(
    uid: str = MODEL_UID, *, controller: Any = True, kind: str = "Model", api_version: str = "kubeai.org/v1"
) -> dict:
    return {"apiVersion": api_version, "kind": kind, "name": "qwen", "uid": uid, "controller": controller}


def pod(
    name: str = "model-qwen-0",
    phase: str = "Failed",
    *,
    owners: list[dict] | None = None,
    uid: str | None = None,
    resource_version: str = "101",
    status: dict | None = None,
    **metadata: Any,
) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ai-system",
            "uid": uid or f"uid-{name}",
            "resourceVersion": resource_version,
            "ownerReferences": [owner()] if owners is None else owners,
            **metadata,
        },
        "status": {"phase": phase, "reason": "Evicted", "message": "The node was low on resource: memory."}
        | (status or {}),
    }


def terminal(name: str = "model-qwen-0", *, uid: str | None = None, reason: str = "Evicted") -> TerminalPod:
    return TerminalPod(
        name=name,
        uid=uid or f"uid-{name}",
        resource_version="101",
        phase="Failed",
        reason=reason,
        message="The node was low on resource: memory.",
        owner_uid=MODEL_UID,
    )


def decide(
    previous: RecoveryState | None,
    *pods: TerminalPod,
    at: timedelta = timedelta(0),
    revision: str = REVISION,
    ready: bool = False,
) -> RecoveryDecision:
    return decide_recovery(previous=previous, revision=revision, terminal=pods, ready=ready, now=NOW + at)


def state_after(*, attempts: int) -> RecoveryState:
    return RecoveryState(
        revision=REVISION,
        attempts=attempts,
        last_attempt_time=NOW,
        pod_uid="uid-model-qwen-0",
        failure=PodFailure(phase="Failed", reason="Evicted", message="The node was low on resource: memory."),
    )


# Which Pods are candidates


@pytest.mark.parametrize(
    ("case", "candidate"),
    [
        (pod(phase="Failed"), True),
        (pod(phase="Succeeded"), True),
        (pod(phase="Running"), False),
        (pod(phase="Pending"), False),
        (pod(phase="Unknown"), False),
        (pod(owners=[owner(OTHER_MODEL_UID)]), False),
        (pod(owners=[owner(controller=False)]), False),
        (pod(owners=[owner(controller=None)]), False),
        (pod(owners=[owner(kind="ReplicaSet")]), False),
        (pod(owners=[owner(api_version="kubeai.org/v2")]), False),
        (pod(owners=[]), False),
        (pod(owners=[owner(OTHER_MODEL_UID), owner(controller=False)]), False),
        (pod(owners=[owner(OTHER_MODEL_UID, controller=False), owner()]), True),
        (pod(deletionTimestamp="2026-01-01T00:00:00Z"), False),
        (pod(resource_version=""), False),
    ],
    ids=[
        "failed",
        "succeeded",
        "running",
        "pending",
        "unknown",
        "another-model",
        "owned-not-controlled",
        "controller-unset",
        "controlled-by-another-kind",
        "another-api-version",
        "no-owner",
        "controller-is-another-model",
        "controller-is-this-model-among-owners",
        "already-being-deleted",
        "no-resource-version",
    ],
)
def test_only_ended_pods_controlled_by_the_model_are_candidates(case, candidate):
    assert bool(select_terminal_pods([case], MODEL_UID)) is candidate


def test_a_candidate_carries_the_identity_for_the_preconditions_and_how_it_ended():
    (selected,) = select_terminal_pods([pod(uid="abc", resource_version="42")], MODEL_UID)
    assert selected == TerminalPod(
        name="model-qwen-0",
        uid="abc",
        resource_version="42",
        phase="Failed",
        reason="Evicted",
        message="The node was low on resource: memory.",
        owner_uid=MODEL_UID,
    )


def test_a_pod_without_its_own_reason_reports_its_first_failed_container():
    containers = [
        {"name": "sidecar", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "server", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}},
    ]
    ended = pod(status={"reason": None, "message": None, "containerStatuses": containers})
    (selected,) = select_terminal_pods([ended], MODEL_UID)
    assert (selected.reason, selected.message) == ("OOMKilled", "container server exited with code 137")


def test_candidates_are_sorted_by_name_whatever_the_listing_order():
    listed = [pod("model-qwen-b"), pod("model-qwen-a", phase="Running"), pod("model-qwen-a2"), pod("model-qwen-0")]
    assert [p.name for p in select_terminal_pods(listed, MODEL_UID)] == [
        "model-qwen-0",
        "model-qwen-a2",
        "model-qwen-b",
    ]


def test_a_model_without_uid_has_no_candidates():
    assert select_terminal_pods([pod(owners=[owner("")])], "") == ()


# When Pods are deleted


def test_the_first_attempt_deletes_at_once_and_records_the_failure():
    decision = decide(None, terminal())
    assert decision.delete == terminal()
    assert decision.attempt == 1
    assert decision.state == RecoveryState(
        revision=REVISION,
        attempts=1,
        last_attempt_time=NOW,
        pod_uid="uid-model-qwen-0",
        failure=PodFailure(phase="Failed", reason="Evicted", message="The node was low on resource: memory."),
    )
    assert decision.exhausted is False


@pytest.mark.parametrize(("attempt", "wait"), [(1, 10), (2, 20), (3, 40), (4, 80), (5, 160), (6, 300), (40, 300)])
def test_the_wait_after_an_attempt_doubles_from_ten_seconds_up_to_five_minutes(attempt, wait):
    assert backoff(attempt) == timedelta(seconds=wait)


def test_five_attempts_follow_the_backoff_schedule_and_no_sixth_is_made():
    state, made = None, []
    for second in range(0, 400):
        decision = decide(state, terminal(), at=timedelta(seconds=second))
        if decision.delete is not None:
            made.append((decision.attempt, second))
        state = decision.state
    assert made == [(1, 0), (2, 10), (3, 30), (4, 70), (5, 150)]


@pytest.mark.parametrize("attempts", [1, 2, 3, 4])
def test_no_pod_is_deleted_before_the_backoff_has_elapsed(attempts):
    previous = state_after(attempts=attempts)
    waited = backoff(attempts)
    assert decide(previous, terminal(), at=waited - timedelta(seconds=1)).delete is None
    assert decide(previous, terminal(), at=waited).delete is not None


def test_a_run_that_deletes_nothing_returns_the_state_unchanged():
    previous = state_after(attempts=2)
    assert decide(previous, terminal(), at=timedelta(seconds=5)) == RecoveryDecision(state=previous)


def test_at_most_one_pod_is_deleted_per_run():
    decision = decide(None, terminal("model-qwen-b"), terminal("model-qwen-a"))
    assert decision.delete == terminal("model-qwen-a")


def test_after_five_attempts_recovery_is_exhausted_and_degraded():
    previous = state_after(attempts=5)
    decision = decide(previous, terminal(), at=timedelta(hours=1))
    assert decision.delete is None
    assert decision.exhausted is True
    assert decision.state == previous
    assert (decision.phase, decision.reason) == ("Degraded", RECOVERY_EXHAUSTED)
    assert "5 recovery attempts" in (decision.message or "")
    assert "Evicted" in (decision.message or "")


def test_a_decision_that_is_not_exhausted_sets_no_phase():
    decision = decide(None, terminal())
    assert (decision.phase, decision.reason, decision.message) == (None, None, None)


def test_the_original_failure_is_kept_across_attempts():
    first = decide(None, terminal("model-qwen-0", reason="Evicted"))
    second = decide(first.state, terminal("model-qwen-1", reason="OOMKilled"), at=timedelta(seconds=10))
    assert second.delete == terminal("model-qwen-1", reason="OOMKilled")
    assert second.state is not None and first.state is not None
    assert second.state.failure == first.state.failure
    assert second.state.pod_uid == "uid-model-qwen-1"
    assert second.state.attempts == 2


def test_the_same_pod_is_tried_again_when_an_earlier_deletion_left_it_in_place():
    first = decide(None, terminal())
    again = decide(first.state, terminal(), at=timedelta(seconds=10))
    assert again.delete == terminal()
    assert again.attempt == 2


# When recovery starts over


def test_a_new_revision_resets_recovery_and_deletes_at_once():
    exhausted = state_after(attempts=5)
    decision = decide(exhausted, terminal(), revision="model-uid-1/generation-2/activation-generation-1")
    assert decision.delete == terminal()
    assert decision.state is not None
    assert (decision.state.attempts, decision.state.revision) == (1, "model-uid-1/generation-2/activation-generation-1")
    assert decision.exhausted is False


def test_a_new_revision_without_a_terminal_pod_clears_recovery():
    assert decide(state_after(attempts=3), revision="model-uid-2/generation-1/activation-generation-1").state is None


def test_recovery_is_cleared_when_the_terminal_pod_is_gone_and_a_replica_is_ready():
    assert decide(state_after(attempts=3), ready=True) == RecoveryDecision(state=None)


def test_recovery_is_kept_while_the_replacement_pod_is_gone_but_not_yet_ready():
    previous = state_after(attempts=3)
    assert decide(previous, at=timedelta(minutes=10)) == RecoveryDecision(state=previous)


def test_an_exhausted_recovery_without_a_terminal_pod_is_not_degraded():
    previous = state_after(attempts=5)
    assert decide(previous).exhausted is False


def test_a_replica_ready_beside_a_terminal_pod_does_not_restart_the_count():
    decision = decide(state_after(attempts=2), terminal(), at=timedelta(seconds=20), ready=True)
    assert decision.attempt == 3


def test_nothing_is_recorded_when_there_was_no_recovery_and_there_is_no_terminal_pod():
    assert decide(None) == RecoveryDecision(state=None)


# The persisted status.podRecovery


def test_the_state_round_trips_through_its_camel_case_status():
    state = state_after(attempts=3)
    wire = state.to_status()
    assert wire == {
        "revision": REVISION,
        "attempts": 3,
        "lastAttemptTime": "2026-01-01T00:00:00Z",
        "podUID": "uid-model-qwen-0",
        "failure": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."},
    }
    assert RecoveryState.from_status(wire) == state


def test_the_attempt_time_is_stored_in_whole_seconds_so_a_persisted_state_reads_back_equal():
    decision = decide(None, terminal(), at=timedelta(seconds=1, microseconds=500))
    assert decision.state is not None
    assert RecoveryState.from_status(decision.state.to_status()) == decision.state


@pytest.mark.parametrize(
    "broken",
    [
        None,
        "recovering",
        {},
        {
            "revision": REVISION,
            "attempts": "3",
            "lastAttemptTime": "2026-01-01T00:00:00Z",
            "podUID": "u",
            "failure": {"phase": "Failed"},
        },
        {
            "revision": REVISION,
            "attempts": 0,
            "lastAttemptTime": "2026-01-01T00:00:00Z",
            "podUID": "u",
            "failure": {"phase": "Failed"},
        },
        {
            "revision": REVISION,
            "attempts": 1,
            "lastAttemptTime": "yesterday",
            "podUID": "u",
            "failure": {"phase": "Failed"},
        },
        {
            "revision": REVISION,
            "attempts": 1,
            "lastAttemptTime": "2026-01-01T00:00:00Z",
            "podUID": "u",
            "failure": "Evicted",
        },
    ],
    ids=["absent", "not-a-mapping", "empty", "attempts-text", "attempts-zero", "time-unreadable", "failure-text"],
)
def test_an_unreadable_persisted_state_reads_as_no_recovery(broken):
    assert RecoveryState.from_status(broken) is None


def test_a_whole_float_attempt_count_reads_as_an_integer():
    wire = state_after(attempts=2).to_status() | {"attempts": 2.0}
    state = RecoveryState.from_status(wire)
    assert state is not None and state.attempts == 2 and isinstance(state.attempts, int)


def test_a_time_without_a_timezone_is_refused():
    with pytest.raises(ValueError, match="timezone"):
        decide_recovery(previous=None, revision=REVISION, terminal=(terminal(),), ready=False, now=datetime(2026, 1, 1))
