"""Status churn against the real API server: a crash-looping model Pod, and a spec edit meanwhile.

The test plays the kubelet of a crash-looping Pod: it writes the Pod's status again and again
(only its restart count moves), each write once the trigger's watch handled the previous one,
so the churn is continuous for as long as the test needs it. The trigger's timing is FAST's:
churn held back 0.2 s after a request for it alone, then 0.4, 0.8, 1.6 s...
"""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import pairwise

from providers.kinds import MODEL_ACTIVATION, POD
from providers.kube import KubeClient
from services.reconcile_trigger.trigger import ReconcileTrigger, Request
from services.reconcile_trigger.watches import MODEL_POD_SELECTOR
from tests.services.reconcile_trigger.conftest import StartTrigger
from tests.services.reconcile_trigger.world import (
    DEADLINE,
    FAST,
    KUBELET,
    LOADER,
    crash_looping,
    eventually,
    handled,
    model_activation,
    model_pod,
    version_of,
    write_status,
)

BACKOFF = FAST.churn_backoff
SLACK = 0.01
"""The gate opens at the settle of a request, a moment after its `at` was taken."""


def churn_requests(trigger: ReconcileTrigger) -> list[Request]:
    return [r for r in trigger.requests if r.batch.churn_only]


class CrashLoop:
    """Restarts of one model Pod, as the kubelet reports them."""

    def __init__(self, admin: KubeClient, trigger: ReconcileTrigger, pod: dict) -> None:
        self.admin, self.trigger, self.pod = admin, trigger, pod
        self.restarts = 0

    def until(self, done: Callable[[], bool]) -> None:
        """Restart again and again until `done()`; AssertionError after DEADLINE seconds."""
        deadline = time.monotonic() + DEADLINE
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {DEADLINE:g} s of churn")
            self.restarts += 1
            version = write_status(self.admin, POD, self.pod, crash_looping(self.restarts), field_manager=KUBELET)
            handled(self.trigger, POD, self.pod["metadata"]["namespace"], version, MODEL_POD_SELECTOR)


def test_a_crash_looping_pods_status_is_requested_after_doubling_waits_not_on_every_restart(
    start_trigger: StartTrigger, admin: KubeClient, namespace: str
):
    pod = admin.apply(POD, model_pod(namespace, "qwen-0", "qwen"), field_manager=LOADER)
    trigger = start_trigger()
    loop = CrashLoop(admin, trigger, pod)

    loop.until(lambda: len(churn_requests(trigger)) >= 5)

    first, *others = (r.at for r in churn_requests(trigger)[:5])
    gaps = [later - earlier for earlier, later in pairwise([first, *others])]
    assert [gap >= BACKOFF.delay(level) - SLACK for level, gap in enumerate(gaps)] == [True] * 4, gaps
    assert loop.restarts > 3 * len(churn_requests(trigger)), "most restarts wait for a request already due"


def test_a_spec_edit_during_held_back_churn_is_requested_at_once_and_starts_the_backoff_over(
    start_trigger: StartTrigger, admin: KubeClient, namespace: str
):
    pod = admin.apply(POD, model_pod(namespace, "qwen-0", "qwen"), field_manager=LOADER)
    admin.apply(MODEL_ACTIVATION, model_activation(namespace, "qwen"), field_manager=LOADER)
    trigger = start_trigger()
    loop = CrashLoop(admin, trigger, pod)
    loop.until(lambda: trigger.churn().level >= 4)
    held_until = trigger.churn().open_at
    assert held_until is not None

    edited = admin.apply(
        MODEL_ACTIVATION, model_activation(namespace, "qwen", preset="qwen2515bcpu"), field_manager=LOADER
    )
    described = f"ModelActivation {namespace}/qwen modified (resourceVersion {version_of(edited)}, spec)"
    edit = eventually(
        trigger,
        lambda: next((r for r in trigger.requests if described in r.batch.descriptions), None),
        what="the edit's request",
    )

    assert not edit.batch.churn_only
    assert edit.at < held_until, "the edit did not wait for the churn's backoff"
    eventually(trigger, trigger.idle, what="the held churn went with the edit's request")
    assert trigger.churn().level == 0
    loop.until(lambda: len(churn_requests(trigger)) > 4)
    assert churn_requests(trigger)[-1].at < held_until, "the next churn did not wait for the backoff the edit ended"
