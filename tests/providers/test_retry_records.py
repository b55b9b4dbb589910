"""Temporary problems with a memory: how many runs a problem has lasted and since when, shown in
the status, and Stalled once it has lasted past the limit. Pure: no test here opens a connection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from providers.outcomes import Persistence, Problem, ProblemReason
from providers.retry_records import (
    STALLED_AFTER,
    STALLED_AFTER_ATTEMPTS,
    RetryRecord,
    next_records,
    records_from,
    records_output,
)
from providers.status_writer import StatusProvider, status_with_problems

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
SOURCE = "runtime-profile/magicstick-cpu-4"
FULL = Problem(ProblemReason.PROFILE_STORE_FULL, "the limit is 64")
CONTENDED = Problem(ProblemReason.PROFILE_STORE_CONTENDED, "every attempt lost")
INVALID = Problem(ProblemReason.STATUS_WRITE_INVALID, "422", Persistence.PERMANENT)


def planned() -> dict:
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "message": "ok",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    return {"phase": "Ready", "reason": "Ready", "message": "ok", "observedGeneration": 3, "conditions": [ready]}


def test_a_first_temporary_problem_starts_a_record_at_one_attempt_now():
    assert next_records({SOURCE: FULL}, {}, NOW) == {
        SOURCE: RetryRecord(reason="ProfileStoreFull", attempts=1, since="2026-01-02T03:04:05Z")
    }


def test_a_temporary_problem_seen_again_counts_one_more_attempt_and_keeps_its_first_failure():
    before = {SOURCE: RetryRecord(reason="ProfileStoreFull", attempts=8, since="2026-01-02T02:50:00Z")}
    assert next_records({SOURCE: FULL}, before, NOW) == {
        SOURCE: RetryRecord(reason="ProfileStoreFull", attempts=9, since="2026-01-02T02:50:00Z")
    }


def test_a_problem_with_another_reason_starts_a_new_record():
    before = {SOURCE: RetryRecord(reason="ProfileStoreFull", attempts=8, since="2026-01-02T02:50:00Z")}
    assert next_records({SOURCE: CONTENDED}, before, NOW)[SOURCE].attempts == 1


def test_a_cleared_or_permanent_problem_keeps_no_record():
    before = {SOURCE: RetryRecord(reason="ProfileStoreFull", attempts=8, since="2026-01-02T02:50:00Z")}
    assert next_records({}, before, NOW) == {}
    assert next_records({SOURCE: INVALID}, {}, NOW) == {}


def test_records_survive_their_round_trip_through_outputs_and_unreadable_ones_read_as_none():
    records = {SOURCE: RetryRecord(reason="ProfileStoreFull", attempts=9, since="2026-01-02T02:50:00Z")}
    assert records_from(records_output(records)) == records
    assert records_from({SOURCE: {"attempts": "many"}, "other": 7}) == {}
    assert records_from(None) == {}


def test_the_status_says_how_long_and_how_often_a_temporary_problem_has_been_failing():
    record = RetryRecord(
        reason="ProfileStoreFull",
        attempts=9,
        since=(NOW - timedelta(minutes=14, seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    status = status_with_problems(planned(), (FULL,), previous={}, now=NOW, retries=(record,))
    assert status["message"] == "the limit is 64 (failing for 14 min, 9 attempts)"
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [("Ready", "False"), ("Reconciling", "True")]


def test_a_temporary_problem_failing_past_the_limit_is_stalled():
    since = (NOW - STALLED_AFTER).strftime("%Y-%m-%dT%H:%M:%SZ")
    record = RetryRecord(reason="ProfileStoreFull", attempts=STALLED_AFTER_ATTEMPTS, since=since)
    status = status_with_problems(planned(), (FULL,), previous={}, now=NOW, retries=(record,))
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Ready", "False", "ProfileStoreFull"),
        ("Stalled", "True", "ProfileStoreFull"),
    ]


def test_many_quick_attempts_are_not_enough_to_stall():
    record = RetryRecord(reason="ProfileStoreFull", attempts=STALLED_AFTER_ATTEMPTS * 10, since="2026-01-02T03:00:00Z")
    status = status_with_problems(planned(), (FULL,), previous={}, now=NOW, retries=(record,))
    assert "Stalled" not in [c["type"] for c in status["conditions"]]


def test_the_status_write_is_tried_again_while_a_temporary_problem_lasts_so_each_run_counts():
    inputs = {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModuleActivation",
        "namespace": "ai",
        "name": "basis",
        "status": planned(),
    }
    failing = {**inputs, "problems": {SOURCE: FULL.output()}}
    invalid = {**inputs, "problems": {SOURCE: INVALID.output()}}
    provider = StatusProvider()
    assert provider.diff("id", {**failing, "problem": {}}, failing).changes is True
    assert provider.diff("id", {**invalid, "problem": {}}, invalid).changes is False
    assert provider.diff("id", {**inputs, "problem": {}}, inputs).changes is False
