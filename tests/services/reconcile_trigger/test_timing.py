"""The trigger's timing rules and request values. Pure: the clock is passed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from providers.kube import KubeAccess
from services.reconcile_trigger.debounce import (
    KEPT_DESCRIPTIONS,
    ChurnBackoff,
    ChurnState,
    Debouncer,
    Span,
    batch_due,
    due_at,
)
from services.reconcile_trigger.settings import DEFAULT_RESYNC_SECONDS
from services.reconcile_trigger.stack import (
    Backoff,
    StallRetry,
    is_stalled,
    next_request_time,
    request_patch,
    request_value,
)
from services.reconcile_trigger.trigger import Timing
from services.reconcile_trigger.watcher import WatchTiming
from services.reconcile_trigger.watches import ChangeClass

NOON = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("first", "last", "due"),
    [
        (10.0, 10.0, 10.5),  # one change: the quiet period
        (10.0, 10.4, 10.9),  # a short burst: quiet after its last change
        (10.0, 11.9, 12.0),  # a long stream: bounded by the maximum delay from its first change
    ],
)
def test_a_batch_is_due_after_the_quiet_period_or_at_the_maximum_delay(first, last, due):
    assert due_at(first=first, last=last, quiet_seconds=0.5, max_delay_seconds=2.0) == pytest.approx(due)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_debouncer_gives_a_burst_as_one_batch_and_keeps_a_failed_one():
    clock = Clock()
    debouncer = Debouncer(quiet_seconds=0.5, max_delay_seconds=2.0, clock=clock)
    for index in range(KEPT_DESCRIPTIONS + 5):
        debouncer.add(f"change {index}")
        clock.now += 0.01
    clock.now += 0.5

    batch = debouncer.next_batch()
    assert batch is not None and batch.count == KEPT_DESCRIPTIONS + 5 and len(batch.descriptions) == KEPT_DESCRIPTIONS
    assert not debouncer.idle()

    debouncer.settle(batch, delivered=False)
    again = debouncer.next_batch()
    assert again == batch
    debouncer.settle(again, delivered=True)
    assert debouncer.idle()


def test_a_closed_debouncer_gives_no_batch():
    debouncer = Debouncer(quiet_seconds=0.5, max_delay_seconds=2.0, clock=Clock())
    debouncer.close()

    assert debouncer.next_batch() is None


def test_a_request_value_is_rfc_3339_in_utc_with_microseconds():
    value = request_value(NOON.astimezone(timezone(timedelta(hours=2))))

    assert value == "2026-01-01T12:00:00.123456Z"
    assert datetime.fromisoformat(value) == NOON
    assert request_patch(value) == {"metadata": {"annotations": {"pulumi.com/reconciliation-request": value}}}


def test_each_request_value_is_new_even_when_the_clock_stands_still_or_steps_back():
    first = next_request_time(NOON, None)
    same = next_request_time(NOON, first)
    back = next_request_time(NOON - timedelta(seconds=5), same)

    assert [request_value(t) for t in (first, same, back)] == [
        "2026-01-01T12:00:00.123456Z",
        "2026-01-01T12:00:00.123457Z",
        "2026-01-01T12:00:00.123458Z",
    ]
    assert next_request_time(NOON + timedelta(seconds=1), back) == NOON + timedelta(seconds=1)


@pytest.mark.parametrize(
    ("status", "stalled"),
    [
        (None, False),
        ({}, False),
        ({"conditions": [{"type": "Ready", "status": "True"}]}, False),
        ({"conditions": [{"type": "Stalled", "status": "False"}]}, False),
        ({"conditions": [{"type": "Stalled", "status": "Unknown"}]}, False),
        (
            {
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {"type": "Stalled", "status": "True", "reason": "UpdateFailed"},
                ]
            },
            True,
        ),
    ],
)
def test_a_stack_is_stalled_when_its_stalled_condition_is_true(status, stalled):
    stack = (
        {"metadata": {"name": "magicstick"}}
        if status is None
        else {"metadata": {"name": "magicstick"}, "status": status}
    )

    assert is_stalled(stack) is stalled


def test_backoff_doubles_from_its_first_delay_and_stays_at_its_bound():
    backoff = Backoff(30.0, 600.0)

    assert [backoff.delay(attempt) for attempt in range(7)] == [30.0, 60.0, 120.0, 240.0, 480.0, 600.0, 600.0]
    assert backoff.delay(10_000) == 600.0


@pytest.mark.parametrize(("first", "bound"), [(0.0, 1.0), (2.0, 1.0), (-1.0, 5.0)])
def test_a_backoff_needs_a_positive_first_delay_within_its_bound(first, bound):
    with pytest.raises(ValueError):
        Backoff(first, bound)


def test_a_stalled_stack_is_re_requested_after_growing_delays_until_it_is_no_longer_stalled():
    retry = StallRetry(Backoff(30.0, 600.0))
    seen = [(t, retry.observe(stalled=True, now=t)) for t in (0.0, 29.0, 30.0, 89.0, 90.0, 209.0, 210.0)]

    assert [t for t, requested in seen if requested] == [30.0, 90.0, 210.0]
    assert retry.observe(stalled=False, now=211.0) is False
    assert (retry.attempts, retry.due) == (0, None)
    assert retry.observe(stalled=True, now=300.0) is False
    assert retry.due == 330.0


# --- status churn ---------------------------------------------------------------------------


def test_continuous_churn_alone_is_requested_after_doubling_waits_up_to_the_bound():
    backoff = ChurnBackoff(Backoff(2.0, 16.0))
    requested_at = []
    for now in range(100):  # churn every second
        backoff.seen(float(now))
        if backoff.state.open_at is None or now >= backoff.state.open_at:
            backoff.requested(churn_only=True, now=float(now))
            requested_at.append(now)

    assert requested_at == [0, 2, 6, 14, 30, 46, 62, 78, 94]


def test_a_request_that_answers_a_spec_change_starts_the_churn_backoff_over():
    backoff = ChurnBackoff(Backoff(2.0, 16.0))
    for now in (0.0, 2.0, 6.0):
        backoff.seen(now)
        backoff.requested(churn_only=True, now=now)

    backoff.requested(churn_only=False, now=7.0)

    assert backoff.state == ChurnState(level=0, open_at=None)


def test_churn_after_a_quiet_of_a_whole_bound_starts_the_backoff_over_and_not_sooner():
    backoff = ChurnBackoff(Backoff(2.0, 16.0))
    for now in (0.0, 2.0, 6.0):
        backoff.seen(now)
        backoff.requested(churn_only=True, now=now)

    backoff.seen(6.0 + 15.9)
    assert backoff.state.level == 3
    backoff.seen(6.0 + 15.9 + 16.0)
    assert backoff.state == ChurnState(level=0, open_at=None)


@pytest.mark.parametrize(
    ("spec", "churn", "open_at", "due"),
    [
        (None, None, None, None),
        (None, Span(10.0, 10.0, 1), None, 10.5),  # churn, nothing held back: debounced like a spec change
        (None, Span(10.0, 10.0, 1), 14.0, 14.0),  # churn held back until the gate opens
        (Span(11.0, 11.0, 1), Span(10.0, 10.0, 1), 14.0, 11.5),  # a spec change is due as always, held churn or not
        (Span(10.0, 10.0, 1), Span(10.0, 11.9, 30), None, 10.5),
    ],
    ids=["nothing", "churn", "held churn", "spec with held churn", "spec and free churn"],
)
def test_spec_changes_are_due_when_debounced_and_churn_no_earlier_than_its_backoff(spec, churn, open_at, due):
    assert batch_due(spec=spec, churn=churn, quiet_seconds=0.5, max_delay_seconds=2.0, churn_open_at=open_at) == due


def test_a_spec_change_takes_the_held_churn_along_and_starts_the_backoff_over():
    clock = Clock()
    debouncer = Debouncer(quiet_seconds=0.5, max_delay_seconds=2.0, churn_backoff=Backoff(2.0, 300.0), clock=clock)
    debouncer.add("Pod ai/qwen-0 modified", ChangeClass.CHURN)
    clock.now += 0.5
    churn = debouncer.next_batch()
    assert churn is not None and churn.churn_only
    debouncer.settle(churn, delivered=True)
    assert debouncer.churn_state() == ChurnState(level=1, open_at=clock.now + 2.0)

    debouncer.add("Pod ai/qwen-0 modified", ChangeClass.CHURN)
    debouncer.add("ModelActivation ai-system/qwen modified", ChangeClass.SPEC)
    clock.now += 0.5
    both = debouncer.next_batch()

    assert both is not None and not both.churn_only and both.count == 2
    debouncer.settle(both, delivered=True)
    assert debouncer.churn_state() == ChurnState(level=0, open_at=None)
    assert debouncer.idle()


def test_a_batch_not_delivered_keeps_its_churn_apart_from_its_spec_changes():
    clock = Clock()
    debouncer = Debouncer(quiet_seconds=0.5, max_delay_seconds=2.0, clock=clock)
    debouncer.add("Pod ai/qwen-0 modified", ChangeClass.CHURN)
    clock.now += 0.5
    batch = debouncer.next_batch()
    assert batch is not None

    debouncer.settle(batch, delivered=False)
    again = debouncer.next_batch()

    assert again == batch and again.churn_only
    assert debouncer.churn_state() == ChurnState(level=0, open_at=None), "a failed request holds nothing back"


# --- the production defaults ----------------------------------------------------------------

HANG_BOUND = 60.0
"""A watch that hangs silently is caught within this (the issue's bound)."""
SERVER_END_MARGIN = 5.0
"""How late the server's end of a quiet watch may come, against its timeoutSeconds, before the
read deadline would kill a healthy watch (a loaded server answers late by well under that)."""


def test_the_default_read_deadline_catches_a_hung_watch_within_a_minute_and_never_kills_a_quiet_healthy_one():
    timing = WatchTiming()

    assert timing.read_deadline_seconds <= HANG_BOUND
    assert timing.timeout_seconds + SERVER_END_MARGIN <= timing.read_deadline_seconds
    assert timing.keepalive.bound_seconds <= HANG_BOUND, "a vanished peer is found within the bound too"


def test_the_default_liveness_bound_outlasts_a_hung_watch_a_longest_backoff_and_one_more_attempt():
    timing = Timing()
    one_attempt = KubeAccess().timeout_seconds

    assert timing.stale_seconds > timing.watch.read_deadline_seconds + timing.watch.backoff.max_seconds + one_attempt


def test_the_default_churn_backoff_starts_at_the_maximum_delay_and_stops_at_the_stacks_resync():
    timing = Timing()

    assert timing.churn_backoff == Backoff(timing.max_delay_seconds, DEFAULT_RESYNC_SECONDS)


def test_a_watch_timing_whose_read_deadline_is_not_past_its_timeout_is_refused():
    with pytest.raises(ValueError):
        WatchTiming(timeout_seconds=60, read_deadline_seconds=55.0)
