"""Retry records: since when, and over how many runs, a Temporary problem of one object has lasted.

The status write of an object keeps one record per dynamic resource whose Temporary problem it
reports, in its own outputs (`retries`), as kopf keeps a handler's progress: the reason, the
number of runs that met it (`attempts`) and the moment of the first (`since`). A run that meets
the same reason again counts one more attempt and keeps `since`; another reason starts a new
record; a cleared or Permanent problem ends it. The status says it ("failing for 14 min,
9 attempts"), and a problem that has lasted STALLED_AFTER and at least STALLED_AFTER_ATTEMPTS
runs makes the object Stalled: it is still tried again on every run, but it needs someone.

Pure: the provider passes the clock in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from planning.conditions import rfc3339
from providers.outcomes import Problem

RETRIES_OUTPUT: Final = "retries"
"""The status write's output: a RetryRecord's wire form by the logical name of the resource."""
STALLED_AFTER: Final = timedelta(minutes=30)
"""A Temporary problem that has lasted this long (and STALLED_AFTER_ATTEMPTS runs) stalls its object."""
STALLED_AFTER_ATTEMPTS: Final = 5
"""Runs a Temporary problem must have lasted to stall its object: a burst of quick runs does not."""


@dataclass(frozen=True)
class RetryRecord:
    reason: str
    attempts: int
    since: str
    """RFC 3339 UTC: when the first run met this problem."""

    def failing_for(self, now: datetime) -> timedelta:
        first = datetime.fromisoformat(self.since.replace("Z", "+00:00"))
        return now - (first if first.tzinfo is not None else first.replace(tzinfo=UTC))

    def stalls(self, now: datetime) -> bool:
        return self.attempts >= STALLED_AFTER_ATTEMPTS and self.failing_for(now) >= STALLED_AFTER

    def describe(self, now: datetime) -> str:
        """`failing for 14 min, 9 attempts`."""
        minutes = max(int(self.failing_for(now).total_seconds() // 60), 0)
        return f"failing for {minutes} min, {self.attempts} attempts"


def next_records(
    problems: Mapping[str, Problem], previous: Mapping[str, RetryRecord], now: datetime
) -> dict[str, RetryRecord]:
    """The records after a run that met `problems` (by resource name). Pure."""
    records = {}
    for source, problem in sorted(problems.items()):
        if not problem.retried:
            continue
        before = previous.get(source)
        if before is not None and before.reason == str(problem.reason):
            records[source] = RetryRecord(reason=before.reason, attempts=before.attempts + 1, since=before.since)
        else:
            records[source] = RetryRecord(reason=str(problem.reason), attempts=1, since=rfc3339(now))
    return records


def records_output(records: Mapping[str, RetryRecord]) -> dict[str, dict[str, Any]]:
    """The wire form of `records`. Pure."""
    return {
        source: {"reason": r.reason, "attempts": r.attempts, "since": r.since} for source, r in sorted(records.items())
    }


def records_from(value: Any) -> dict[str, RetryRecord]:
    """The records an output `retries` holds; an entry that cannot be read is left out. Pure."""
    if not isinstance(value, Mapping):
        return {}
    records = {}
    for source, entry in value.items():
        if not isinstance(entry, Mapping):
            continue
        reason, attempts, since = entry.get("reason"), entry.get("attempts"), entry.get("since")
        if isinstance(attempts, float) and attempts.is_integer():
            attempts = int(attempts)
        if isinstance(reason, str) and isinstance(attempts, int) and attempts > 0 and isinstance(since, str):
            try:
                datetime.fromisoformat(since.replace("Z", "+00:00"))
            except ValueError:
                continue
            records[str(source)] = RetryRecord(reason=reason, attempts=attempts, since=since)
    return records


def longest(records: Sequence[RetryRecord]) -> RetryRecord | None:
    """The record of the problem failing the longest, or None. Pure."""
    return min(records, key=lambda r: (r.since, -r.attempts), default=None)
