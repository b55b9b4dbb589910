"""The program's next deadline: a run is requested when Appliance/local's status.nextReconcileAt comes.

The alarm's rules are tested with a clock the test moves; the whole path (the Appliance watch,
the alarm's thread, the debouncer, the patch of the Stack) against the real API server, with a
deadline two seconds ahead. With tests/planning/test_next_reconcile.py (a Model without a Pod
since T publishes T + 2 min, and a plan at that moment reports ModelPodCreationStalled), this
shows a stalled Pod reported within two minutes plus the debounce.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.meta import API_VERSION
from providers.kinds import APPLIANCE
from providers.kube import KubeClient
from services.reconcile_trigger.deadline import APPLIANCE_NAME, DeadlineAlarm, Published, read_published
from services.reconcile_trigger.stack import StackRef
from tests.services.reconcile_trigger.conftest import StartTrigger
from tests.services.reconcile_trigger.world import (
    FAST,
    LOADER,
    PROGRAM_STATUS,
    eventually,
    handled,
    request_annotation,
    stack_request_after,
    write_status,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SYSTEM = "ai-system"
KEY = (SYSTEM, APPLIANCE_NAME)
STALL = "ModelActivation ai-system/m: pod creation stall"


def text(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def appliance(
    status: dict[str, Any] | None = None, *, name: str = APPLIANCE_NAME, namespace: str = SYSTEM
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "Appliance",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"profile": "ai-workstation"},
    }
    if status is not None:
        obj["status"] = status
    return obj


def published(at: str, reason: str = STALL) -> dict[str, Any]:
    return appliance({"phase": "Reconciling", "nextReconcileAt": at, "nextReconcileReason": reason})


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def reported() -> list[str]:
    return []


@pytest.fixture
def alarm(clock: Clock, reported: list[str]) -> DeadlineAlarm:
    return DeadlineAlarm(report=reported.append, wall_clock=clock)


class TestReadingTheDeadline:
    def test_a_deadline_is_read_with_its_reason(self):
        assert read_published(published("2026-01-01T00:02:00Z")) == Published(
            at=T0 + timedelta(minutes=2), reason=STALL, text="2026-01-01T00:02:00Z"
        )

    def test_an_appliance_without_the_field_has_no_deadline(self):
        assert read_published(appliance({"phase": "Ready"})) is None
        assert read_published(appliance()) is None

    @pytest.mark.parametrize("value", ["soon", "2026-01-01T00:02:00", 1767225720, ""])
    def test_a_value_that_is_no_rfc_3339_time_with_a_zone_is_malformed(self, value):
        problem = read_published(published(value))
        assert isinstance(problem, str) and "nextReconcileAt" in problem


class TestTheAlarm:
    def test_a_future_deadline_is_armed_and_reported_once_when_it_comes(
        self, alarm: DeadlineAlarm, clock: Clock, reported: list[str]
    ):
        alarm.observe(KEY, published(text(T0 + timedelta(minutes=2))))
        assert alarm.seconds_left() == 120.0
        clock.now = T0 + timedelta(minutes=2) - timedelta(microseconds=1)
        assert not alarm.fire_if_due() and reported == []
        clock.now = T0 + timedelta(minutes=2)
        assert alarm.fire_if_due()
        assert not alarm.fire_if_due()
        assert reported == [f"Appliance {SYSTEM}/local: status.nextReconcileAt 2026-01-01T00:02:00Z reached ({STALL})"]
        assert alarm.armed is None

    def test_a_new_deadline_replaces_the_armed_one(self, alarm: DeadlineAlarm, clock: Clock, reported: list[str]):
        alarm.observe(KEY, published(text(T0 + timedelta(minutes=5))))
        alarm.observe(
            KEY, published(text(T0 + timedelta(seconds=10)), "ModelActivation ai-system/m: pod recovery attempt 2")
        )
        assert alarm.seconds_left() == 10.0
        clock.now = T0 + timedelta(seconds=10)
        assert alarm.fire_if_due()
        clock.now = T0 + timedelta(minutes=5)
        assert not alarm.fire_if_due()
        assert len(reported) == 1 and "pod recovery attempt 2" in reported[0]

    def test_the_same_deadline_seen_again_is_reported_once(
        self, alarm: DeadlineAlarm, clock: Clock, reported: list[str]
    ):
        deadline = published(text(T0 + timedelta(seconds=30)))
        alarm.observe(KEY, deadline)
        alarm.observe(KEY, deadline)
        clock.now = T0 + timedelta(seconds=30)
        alarm.fire_if_due()
        alarm.observe(KEY, deadline)
        assert not alarm.fire_if_due()
        assert len(reported) == 1

    def test_a_past_deadline_is_ignored_and_logged_once(
        self, alarm: DeadlineAlarm, clock: Clock, reported: list[str], caplog
    ):
        clock.now = T0 + timedelta(hours=1)
        with caplog.at_level(logging.INFO, logger="magicstick.reconcile_trigger"):
            for _ in range(3):
                alarm.observe(KEY, published(text(T0)))
        assert alarm.armed is None and alarm.seconds_left() is None
        assert not alarm.fire_if_due() and reported == []
        assert len([r for r in caplog.records if "2026-01-01T00:00:00Z" in r.getMessage()]) == 1

    def test_a_malformed_deadline_is_ignored_and_logged_once(self, alarm: DeadlineAlarm, reported: list[str], caplog):
        alarm.observe(KEY, published(text(T0 + timedelta(minutes=1))))
        with caplog.at_level(logging.WARNING, logger="magicstick.reconcile_trigger"):
            for _ in range(3):
                alarm.observe(KEY, published("tomorrow"))
        assert alarm.armed is None
        assert len([r for r in caplog.records if "tomorrow" in r.getMessage()]) == 1

    def test_a_deleted_appliance_or_a_removed_field_disarms(self, alarm: DeadlineAlarm):
        alarm.observe(KEY, published(text(T0 + timedelta(minutes=1))))
        alarm.observe(KEY, appliance({"phase": "Ready"}))
        assert alarm.armed is None
        alarm.observe(KEY, published(text(T0 + timedelta(minutes=1))))
        alarm.observe(KEY, None)
        assert alarm.armed is None

    def test_another_appliance_is_not_read(self, alarm: DeadlineAlarm):
        alarm.observe((SYSTEM, "other"), published(text(T0 + timedelta(minutes=1))))
        assert alarm.armed is None


class TestAgainstTheApiServer:
    def test_a_deadline_published_on_appliance_local_requests_a_run_at_that_moment_plus_the_debounce(
        self, start_trigger: StartTrigger, admin: KubeClient, namespace: str, stack: StackRef
    ):
        created = admin.apply(APPLIANCE, appliance(namespace=namespace), field_manager=LOADER)
        trigger = start_trigger()
        before = len(trigger.requests)
        previous = request_annotation(admin, stack)

        deadline = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
        status = {"phase": "Reconciling", "nextReconcileAt": text(deadline), "nextReconcileReason": STALL}
        written = write_status(admin, APPLIANCE, created, status, field_manager=PROGRAM_STATUS)
        handled(trigger, APPLIANCE, namespace, written)
        eventually(trigger, lambda: trigger.deadline is not None, what="the deadline armed")
        assert len(trigger.requests) == before, "a status write alone requests nothing"

        value = stack_request_after(admin, stack, previous)

        requested_at = datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert deadline <= requested_at <= deadline + timedelta(seconds=FAST.quiet_seconds + 2.0)
        eventually(trigger, trigger.idle, what="the trigger has nothing left to request")
        assert len(trigger.requests) == before + 1
        assert "status.nextReconcileAt" in trigger.requests[-1].batch.descriptions[0]
        assert trigger.deadline is None

    def test_a_new_deadline_from_the_program_replaces_the_one_waited_for(
        self, start_trigger: StartTrigger, admin: KubeClient, namespace: str, stack: StackRef
    ):
        created = admin.apply(APPLIANCE, appliance(namespace=namespace), field_manager=LOADER)
        far = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
        write_status(
            admin,
            APPLIANCE,
            created,
            {"phase": "Reconciling", "nextReconcileAt": text(far)},
            field_manager=PROGRAM_STATUS,
        )
        trigger = start_trigger()
        eventually(
            trigger, lambda: trigger.deadline is not None and trigger.deadline.at == far, what="the far deadline armed"
        )
        previous = request_annotation(admin, stack)

        near = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
        write_status(
            admin,
            APPLIANCE,
            created,
            {"phase": "Reconciling", "nextReconcileAt": text(near)},
            field_manager=PROGRAM_STATUS,
        )

        value = stack_request_after(admin, stack, previous)
        assert datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC) >= near
