"""The trigger and the Stack: re-requests while PKO reports it Stalled, a Stack that is missing.

PKO is played: the test writes the Stalled condition to the Stack's status as PKO does (a
metav1.Condition in `status.conditions`, through /status), and replaces it with Ready once an
update succeeds (server-side apply drops the Stalled entry PKO no longer applies).
"""

from __future__ import annotations

from dataclasses import replace

from providers.kube import KubeClient
from services.reconcile_trigger.stack import STACK, Backoff, StackRef
from services.reconcile_trigger.trigger import ReconcileTrigger, Request
from tests.services.reconcile_trigger.conftest import StartTrigger
from tests.services.reconcile_trigger.world import (
    FAST,
    PKO,
    create_stack,
    eventually,
    ready_condition,
    request_annotation,
    stack_body,
    stalled_condition,
    write_status,
)

STALL = Backoff(0.2, 0.8)
"""0.2 s after the Stack is first seen Stalled, then 0.4, 0.8, 0.8...: growing gaps, then the bound."""
SLACK = 0.01
"""The report's time is taken a moment after the monitor's own reading of the clock."""


def stall_requests(trigger: ReconcileTrigger) -> list[Request]:
    return [r for r in trigger.requests if any("is Stalled" in d for d in r.batch.descriptions)]


def test_a_stalled_stack_is_re_requested_with_growing_delays_up_to_the_bound_and_no_more_once_it_is_not(
    start_trigger: StartTrigger, admin: KubeClient, stack: StackRef
):
    trigger = start_trigger(timing=replace(FAST, stall_backoff=STALL))
    body = stack_body(stack.namespace, stack.name)

    write_status(admin, STACK, body, {"conditions": [stalled_condition()]}, field_manager=PKO)
    eventually(trigger, lambda: len(stall_requests(trigger)) >= 4, what="four re-requests of the Stalled Stack")
    write_status(admin, STACK, body, {"conditions": [ready_condition()]}, field_manager=PKO)
    eventually(trigger, lambda: trigger.stalled is False, what="the trigger reads the Stack as not Stalled")

    # When each re-request was decided (the report's time): never before its delay, late only
    # by the monitor's poll and the server's answer.
    first, second, third, fourth = (r.batch.first_at for r in stall_requests(trigger)[:4])
    gaps = [second - first, third - second, fourth - third]
    assert [round(STALL.delay(attempt), 3) for attempt in (1, 2, 3)] == [0.4, 0.8, 0.8]
    assert gaps[0] >= 0.4 - SLACK
    assert gaps[1] >= 0.8 - SLACK
    assert 0.8 - SLACK <= gaps[2] < 1.6, "bounded: the doubled delay would be 1.6 s"

    count = len(stall_requests(trigger))
    cleared_at = trigger.stack_read_at or 0.0
    would_be_due = cleared_at + STALL.max_seconds
    eventually(
        trigger,
        lambda: (trigger.stack_read_at or 0.0) > would_be_due,
        what="the Stack is read after a retry would have been due",
    )
    eventually(trigger, trigger.idle, what="nothing left to request")
    assert len(stall_requests(trigger)) == count
    assert request_annotation(admin, stack) == trigger.requests[-1].value


def test_a_stack_that_is_not_stalled_is_never_re_requested(
    start_trigger: StartTrigger, admin: KubeClient, stack: StackRef
):
    trigger = start_trigger(timing=replace(FAST, stall_backoff=STALL))
    write_status(
        admin, STACK, stack_body(stack.namespace, stack.name), {"conditions": [ready_condition()]}, field_manager=PKO
    )
    eventually(trigger, lambda: trigger.stalled is False, what="the trigger reads the Stack as not Stalled")
    reads = trigger.stack_reads
    seen_at = trigger.stack_read_at or 0.0

    eventually(
        trigger,
        lambda: (trigger.stack_read_at or 0.0) > seen_at + STALL.first_seconds and trigger.stack_reads > reads + 1,
        what="later reads",
    )

    assert stall_requests(trigger) == []


def test_a_request_for_a_stack_that_does_not_exist_yet_is_kept_and_made_once_it_exists(
    start_trigger: StartTrigger, admin: KubeClient, namespace: str
):
    later = StackRef(namespace, "created-later")
    trigger = start_trigger(of=later, ready=False)
    eventually(trigger, trigger.synced, what="every watch listed its collection")
    eventually(trigger, lambda: trigger.stalled is None and trigger.stack_reads > 0, what="the trigger finds no Stack")
    assert trigger.requests == ()

    create_stack(admin, namespace, later.name)
    eventually(trigger, lambda: trigger.requests, what="the kept request is made")

    assert request_annotation(admin, later) == trigger.requests[0].value
    assert all(w.lists > 0 for w in trigger.watchers), (
        "the test server serves every watched kind, resource.k8s.io/v1 included"
    )
    assert trigger.requests[0].batch.count >= len(trigger.watchers)
