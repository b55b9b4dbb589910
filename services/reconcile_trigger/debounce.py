"""Debouncing: a burst of changes becomes one run request, and status churn is held back.

A batch is due once no change came for the quiet period, or once its first change is
`max_delay` old, whichever comes first: a burst gives one request after it settles, and a
continuous stream still gives one every `max_delay`.

Churn (`watches.ChangeClass.CHURN`: a status written alone, such as a crash-looping Pod's
restarts or Flux's conditions) is debounced the same way, then held back by `ChurnBackoff`:
after a request that answered churn alone, the next one may not come before the first delay,
then twice that, and so on up to the bound, the Stack's resync interval (PKO runs the program
then anyway). A spec change (what someone wrote) is due as always, takes the churn held back
along (one run answers both) and starts the backoff over. So does churn that comes after a quiet
of a whole bound: churn rarer than the resync adds at most one run per resync.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from services.reconcile_trigger.stack import Backoff
from services.reconcile_trigger.watches import ChangeClass

KEPT_DESCRIPTIONS: Final = 20
"""How many changes of a batch are described (in the log and the request record); the rest are counted."""
DEFAULT_CHURN_BACKOFF: Final = Backoff(2.0, 300.0)
"""The maximum delay of a continuous stream, doubling up to PKO's resync interval (deploy/stack.yaml)."""


def due_at(*, first: float, last: float, quiet_seconds: float, max_delay_seconds: float) -> float:
    """When a batch whose first change came at `first` and whose last at `last` is due. Pure."""
    return min(last + quiet_seconds, first + max_delay_seconds)


@dataclass(frozen=True)
class Span:
    """Changes of one class waiting together: when the first and the last came, and how many."""

    first: float
    last: float
    count: int

    def merged(self, other: Span | None) -> Span:
        if other is None:
            return self
        return Span(first=min(self.first, other.first), last=max(self.last, other.last), count=self.count + other.count)


def batch_due(
    *,
    spec: Span | None,
    churn: Span | None,
    quiet_seconds: float,
    max_delay_seconds: float,
    churn_open_at: float | None,
) -> float | None:
    """When the waiting changes are due: spec changes when debounced; churn when debounced and
    no earlier than `churn_open_at`; None when nothing waits. Pure."""
    times = []
    if spec is not None:
        times.append(
            due_at(first=spec.first, last=spec.last, quiet_seconds=quiet_seconds, max_delay_seconds=max_delay_seconds)
        )
    if churn is not None:
        debounced = due_at(
            first=churn.first, last=churn.last, quiet_seconds=quiet_seconds, max_delay_seconds=max_delay_seconds
        )
        times.append(debounced if churn_open_at is None else max(debounced, churn_open_at))
    return min(times) if times else None


@dataclass(frozen=True)
class Batch:
    """The changes one run request answers."""

    descriptions: tuple[str, ...]
    """The first KEPT_DESCRIPTIONS changes, in the order they came."""
    spec: Span | None
    churn: Span | None

    @property
    def count(self) -> int:
        return sum(span.count for span in (self.spec, self.churn) if span is not None)

    @property
    def first_at(self) -> float:
        return min(span.first for span in (self.spec, self.churn) if span is not None)

    @property
    def last_at(self) -> float:
        return max(span.last for span in (self.spec, self.churn) if span is not None)

    @property
    def churn_only(self) -> bool:
        return self.spec is None


@dataclass(frozen=True)
class ChurnState:
    level: int
    """Requests for churn alone since the backoff last started over."""
    open_at: float | None
    """The earliest time of the next request for churn alone (None: no wait)."""


class ChurnBackoff:
    """When the next request for churn alone may be made. Not thread-safe: the Debouncer owns it."""

    def __init__(self, backoff: Backoff) -> None:
        self._backoff = backoff
        self._last_churn: float | None = None
        self.state = ChurnState(level=0, open_at=None)

    def seen(self, now: float) -> None:
        """Churn came at `now`; after a quiet of a whole bound, the backoff starts over."""
        if self._last_churn is not None and now - self._last_churn >= self._backoff.max_seconds:
            self.state = ChurnState(level=0, open_at=None)
        self._last_churn = now

    def requested(self, *, churn_only: bool, now: float) -> None:
        """A run was requested at `now`: for churn alone (the next one waits longer), or for a
        spec change (the backoff starts over)."""
        if not churn_only:
            self.state = ChurnState(level=0, open_at=None)
            return
        level = self.state.level
        self.state = ChurnState(level=level + 1, open_at=now + self._backoff.delay(level))


class Debouncer:
    """Collects changes from every watch; one consumer takes them batch by batch. Thread-safe."""

    def __init__(
        self,
        *,
        quiet_seconds: float,
        max_delay_seconds: float,
        churn_backoff: Backoff = DEFAULT_CHURN_BACKOFF,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._quiet = quiet_seconds
        self._max_delay = max_delay_seconds
        self._clock = clock
        self._condition = threading.Condition()
        self._descriptions: list[str] = []
        self._spec: Span | None = None
        self._churn: Span | None = None
        self._backoff = ChurnBackoff(churn_backoff)
        self._taken: Batch | None = None
        self._closed = False

    def add(self, description: str, change: ChangeClass = ChangeClass.SPEC) -> None:
        with self._condition:
            now = self._clock()
            span = Span(first=now, last=now, count=1)
            if change is ChangeClass.CHURN:
                self._backoff.seen(now)
                self._churn = span.merged(self._churn)
            else:
                self._spec = span.merged(self._spec)
            self._describe((description,))
            self._condition.notify_all()

    def next_batch(self) -> Batch | None:
        """Block until a batch is due and take it; None once closed.

        The batch stays taken until `settle`; `idle` is False meanwhile.
        """
        with self._condition:
            while not self._closed:
                due = self._due()
                if due is None:
                    self._condition.wait()
                    continue
                now = self._clock()
                if now >= due:
                    return self._take()
                self._condition.wait(due - now)
            return None

    def settle(self, batch: Batch, *, delivered: bool) -> None:
        """The taken batch is done: requested, or (not delivered) put back to be requested again."""
        with self._condition:
            self._taken = None
            if delivered:
                self._backoff.requested(churn_only=batch.churn_only, now=self._clock())
            else:
                self._spec = batch.spec.merged(self._spec) if batch.spec is not None else self._spec
                self._churn = batch.churn.merged(self._churn) if batch.churn is not None else self._churn
                self._describe(batch.descriptions)
            self._condition.notify_all()

    def close(self) -> None:
        with self._condition:
            self._closed = True
            self._condition.notify_all()

    def idle(self) -> bool:
        """No change waits and no batch is being requested."""
        with self._condition:
            return self._spec is None and self._churn is None and self._taken is None

    def churn_state(self) -> ChurnState:
        with self._condition:
            return self._backoff.state

    def _due(self) -> float | None:
        return batch_due(
            spec=self._spec,
            churn=self._churn,
            quiet_seconds=self._quiet,
            max_delay_seconds=self._max_delay,
            churn_open_at=self._backoff.state.open_at,
        )

    def _describe(self, descriptions: tuple[str, ...]) -> None:
        room = KEPT_DESCRIPTIONS - len(self._descriptions)
        self._descriptions.extend(descriptions[: max(room, 0)])

    def _take(self) -> Batch:
        batch = Batch(descriptions=tuple(self._descriptions), spec=self._spec, churn=self._churn)
        self._descriptions, self._spec, self._churn = [], None, None
        self._taken = batch
        return batch
