"""The program's next deadline: a run requested when Appliance/local's status.nextReconcileAt comes.

Some states of the plan change with time alone (a Pod creation stall, the next Pod recovery
attempt, host evidence turning stale). The program publishes the earliest such moment still to
come in Appliance/local's `status.nextReconcileAt` (RFC 3339, UTC) and what it waits for in
`status.nextReconcileReason`. The Appliance watch hands every version of Appliance/local to
`DeadlineAlarm.observe`; the alarm keeps the one deadline it publishes and, when the wall clock
reaches it, reports a change like any watch does (spec class: requested after the quiet period).

- A new value replaces the one waited for; a value removed, or the Appliance deleted, cancels it.
- A value already past, or not an RFC 3339 time with a zone, is ignored, and logged once per value.
- A deadline is reported once: seen again (a relist, a status write that kept it), it is past.
- The periodic resync goes on regardless.

The wait is bounded by `max_wait_seconds` and the wall clock read again after it, so a clock
that steps is followed within that bound.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from services.reconcile_trigger.progress import Progress

LOGGER = logging.getLogger("magicstick.reconcile_trigger")

APPLIANCE_NAME: Final = "local"
NEXT_RECONCILE_AT: Final = "nextReconcileAt"
NEXT_RECONCILE_REASON: Final = "nextReconcileReason"
MAX_WAIT_SECONDS: Final = 60.0
KEPT_DONE: Final = 16


@dataclass(frozen=True)
class Published:
    """The deadline Appliance/local publishes."""

    at: datetime
    reason: str
    text: str
    """The value as written, to name it in logs and requests."""


def read_published(appliance: Mapping[str, Any]) -> Published | str | None:
    """The deadline in `appliance`'s status; None without one; a string saying why the value
    cannot be used. Pure."""
    status = appliance.get("status")
    if not isinstance(status, Mapping) or NEXT_RECONCILE_AT not in status:
        return None
    value = status[NEXT_RECONCILE_AT]
    reason = status.get(NEXT_RECONCILE_REASON)
    if not isinstance(value, str):
        return f"status.{NEXT_RECONCILE_AT} {value!r} is not a string"
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return f"status.{NEXT_RECONCILE_AT} {value!r} is not an RFC 3339 time"
    if moment.tzinfo is None:
        return f"status.{NEXT_RECONCILE_AT} {value!r} has no time zone"
    return Published(at=moment, reason=reason if isinstance(reason, str) else "", text=value)


class DeadlineAlarm:
    """Waits for the one deadline Appliance/local publishes; `report` is called with a one-line
    description when it comes. Thread-safe: watches observe, one thread runs `run`."""

    def __init__(
        self,
        *,
        report: Callable[[str], None],
        wall_clock: Callable[[], datetime],
        progress: Progress | None = None,
        max_wait_seconds: float = MAX_WAIT_SECONDS,
    ) -> None:
        self._report = report
        self._clock = wall_clock
        self._progress = progress or Progress()
        self._max_wait = max_wait_seconds
        self._condition = threading.Condition()
        self._armed: Published | None = None
        self._where = ""
        self._done: deque[str] = deque(maxlen=KEPT_DONE)
        """The last values reported or ignored: seen again, they are neither armed nor logged."""
        self._closed = False

    @property
    def armed(self) -> Published | None:
        """The deadline waited for, if any."""
        with self._condition:
            return self._armed

    def observe(self, key: tuple[str, str], obj: Mapping[str, Any] | None) -> None:
        """The Appliance `key` (namespace, name) is now `obj`, or gone (None)."""
        namespace, name = key
        if name != APPLIANCE_NAME:
            return
        found = read_published(obj) if obj is not None else None
        where = f"Appliance {namespace}/{name}"
        with self._condition:
            if isinstance(found, str):
                if found not in self._done:
                    self._done.append(found)
                    LOGGER.warning("%s: %s; no run is requested for it", where, found)
                changed = self._arm(None)
            elif found is None or found.text in self._done:
                changed = self._arm(None)
            elif found.at <= self._clock():
                self._done.append(found.text)
                LOGGER.info(
                    "%s: status.%s %s is already past; no run is requested for it", where, NEXT_RECONCILE_AT, found.text
                )
                changed = self._arm(None)
            else:
                self._where = where
                changed = self._arm(found)
        if changed:
            self._progress.notify()

    def seconds_left(self) -> float | None:
        """Seconds until the armed deadline by the wall clock (0 once due), or None."""
        with self._condition:
            return self._left()

    def fire_if_due(self) -> bool:
        """Report the armed deadline if the wall clock reached it; whether it did."""
        with self._condition:
            left = self._left()
            if left is None or left > 0 or self._armed is None:
                return False
            due = self._armed
            self._done.append(due.text)
            self._arm(None)
            where = self._where
        said = f" ({due.reason})" if due.reason else ""
        LOGGER.info("%s: status.%s %s reached%s", where, NEXT_RECONCILE_AT, due.text, said)
        self._report(f"{where}: status.{NEXT_RECONCILE_AT} {due.text} reached{said}")
        self._progress.notify()
        return True

    def run(self) -> None:
        """The thread's body: wait for each deadline and report it; returns once closed."""
        while True:
            with self._condition:
                if self._closed:
                    return
                left = self._left()
                if left is None or left > 0:
                    self._condition.wait(self._max_wait if left is None else min(left, self._max_wait))
                    continue
            self.fire_if_due()

    def close(self) -> None:
        with self._condition:
            self._closed = True
            self._condition.notify_all()

    def _left(self) -> float | None:
        if self._armed is None:
            return None
        return max(0.0, (self._armed.at - self._clock()).total_seconds())

    def _arm(self, deadline: Published | None) -> bool:
        """Wait for `deadline` from now on (the lock held); whether that changed anything.
        The caller notifies `progress` after releasing the lock: its waiters read `armed`."""
        if deadline == self._armed:
            return False
        self._armed = deadline
        self._condition.notify_all()
        return True
