"""Deadlines: the moments at which a time-based state of the plan changes with no other change.

A few rules compare `now` with a time the cluster holds: a Pod creation stall (planning.models.
lifecycle), the backoff between Pod recovery attempts (planning.models.recovery) and the age of
host evidence (planning.hardware.evidence). A run sees such a change only when it happens, so
each rule also says when its state will next change, and Appliance/local publishes the earliest
one still to come (status.nextReconcileAt); the reconcile trigger requests a run then.

Invariant 4 holds: each deadline is computed from a time the cluster holds (a persisted timer,
an annotation), never from `now`, so it moves only when that time moves. `now` only decides
which deadlines are still to come; a past one is never published.

Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True, order=True)
class Deadline:
    """The moment a time-based state changes, and what changes then."""

    at: datetime
    """The first whole second at which a run sees the change."""
    reason: str
    """What is awaited: `<Kind> <namespace>/<name>: <what changes>`."""


def whole_second_from(moment: datetime) -> datetime:
    """The first whole second at or after `moment`, in UTC: a run then sees what `moment` brings. Pure."""
    utc = moment.astimezone(UTC)
    floor = utc.replace(microsecond=0)
    return floor if floor == utc else floor + timedelta(seconds=1)


def whole_second_after(moment: datetime) -> datetime:
    """The first whole second strictly after `moment`, in UTC (for a rule that compares with `>`). Pure."""
    utc = moment.astimezone(UTC)
    return utc.replace(microsecond=0) + timedelta(seconds=1)


def next_deadline(deadlines: Iterable[Deadline], *, now: datetime) -> Deadline | None:
    """The earliest deadline after `now` (the reason breaks ties), or None. Pure."""
    future = [deadline for deadline in deadlines if deadline.at > now]
    return min(future, default=None)
