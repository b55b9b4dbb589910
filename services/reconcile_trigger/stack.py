"""The PKO Stack: requesting a run, and reading whether it is Stalled.

PKO v2 reconciles a Stack when the value of its `pulumi.com/reconciliation-request` annotation
changes (it records the last value it handled in `status.observedReconcileRequest`). A request
is therefore a merge patch of that one annotation with a value never used before: an RFC 3339
UTC timestamp with microseconds, strictly later than the previous one even if the clock steps
back.

A Stack is Stalled when its `status.conditions` (a list of metav1.Condition, keyed by `type`)
holds `type: Stalled` with `status: "True"`: PKO stopped retrying after failures. The trigger
re-requests a run of a Stalled Stack with a growing delay (`StallRetry`) until it is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from providers.kinds import STACK as STACK
from providers.kube import KubeClient
from providers.kube.client import MERGE_PATCH

RECONCILIATION_REQUEST: Final = "pulumi.com/reconciliation-request"
FIELD_MANAGER: Final = "magicstick-reconcile-trigger"
STALLED: Final = "Stalled"
_ONE_TICK: Final = timedelta(microseconds=1)


@dataclass(frozen=True)
class StackRef:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def next_request_time(now: datetime, previous: datetime | None) -> datetime:
    """The time a new request carries: `now` in UTC, or just after `previous` if not later. Pure."""
    current = now.astimezone(UTC)
    if previous is not None and current <= previous:
        return previous + _ONE_TICK
    return current


def request_value(moment: datetime) -> str:
    """`moment` as RFC 3339 in UTC with microseconds: `2026-01-01T00:00:00.000001Z`. Pure."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def request_patch(value: str) -> dict[str, Any]:
    """The merge patch that sets the request annotation to `value`. Pure."""
    return {"metadata": {"annotations": {RECONCILIATION_REQUEST: value}}}


def request_run(client: KubeClient, stack: StackRef, value: str) -> dict[str, Any]:
    """Set the Stack's reconciliation request to `value`; the patched Stack. Raises KubeError."""
    return client.request(
        "PATCH",
        STACK.object_path(stack.name, stack.namespace),
        params={"fieldManager": FIELD_MANAGER},
        body=request_patch(value),
        content_type=MERGE_PATCH,
    )


def is_stalled(stack: Mapping[str, Any]) -> bool:
    """Whether the Stack's Stalled condition is True. Pure."""
    conditions = (stack.get("status") or {}).get("conditions") or ()
    return any(isinstance(c, Mapping) and c.get("type") == STALLED and c.get("status") == "True" for c in conditions)


@dataclass(frozen=True)
class Backoff:
    """Bounded exponential delays: first, twice that, ... never more than the maximum."""

    first_seconds: float
    max_seconds: float

    def __post_init__(self) -> None:
        if not 0 < self.first_seconds <= self.max_seconds:
            raise ValueError(f"Backoff needs 0 < first ({self.first_seconds}) <= max ({self.max_seconds})")

    def delay(self, attempt: int) -> float:
        """The wait before retry number `attempt` (0 for the first). Pure."""
        return min(self.max_seconds, self.first_seconds * 2.0 ** min(attempt, 62))


class StallRetry:
    """When to re-request a run of a Stalled Stack: a first delay after it is seen Stalled, then
    doubling delays up to the bound, until it is seen not Stalled (which starts over). Not
    thread-safe: one monitor owns it."""

    def __init__(self, backoff: Backoff) -> None:
        self._backoff = backoff
        self.attempts = 0
        self.due: float | None = None

    def observe(self, *, stalled: bool, now: float) -> bool:
        """Record what the Stack says at `now`; True when a run should be requested now."""
        if not stalled:
            self.attempts, self.due = 0, None
            return False
        if self.due is None:
            self.due = now + self._backoff.delay(0)
            return False
        if now < self.due:
            return False
        self.attempts += 1
        self.due = now + self._backoff.delay(self.attempts)
        return True
