"""The trigger's timing rules and request values. Pure: the clock is passed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from services.reconcile_trigger.debounce import KEPT_DESCRIPTIONS, Debouncer, due_at
from services.reconcile_trigger.stack import Backoff, StallRetry, is_stalled, next_request_time, request_patch, request_value

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
        ({"conditions": [{"type": "Ready", "status": "False"}, {"type": "Stalled", "status": "True", "reason": "UpdateFailed"}]}, True),
    ],
)
def test_a_stack_is_stalled_when_its_stalled_condition_is_true(status, stalled):
    stack = {"metadata": {"name": "magicstick"}} if status is None else {"metadata": {"name": "magicstick"}, "status": status}

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
