"""Debouncing: a burst of changes becomes one run request.

A batch is due once no change came for the quiet period, or once its first change is
`max_delay` old, whichever comes first: a burst gives one request after it settles, and a
continuous stream still gives one every `max_delay`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

KEPT_DESCRIPTIONS: Final = 20
"""How many changes of a batch are described (in the log and the request record); the rest are counted."""


def due_at(*, first: float, last: float, quiet_seconds: float, max_delay_seconds: float) -> float:
    """When a batch whose first change came at `first` and whose last at `last` is due. Pure."""
    return min(last + quiet_seconds, first + max_delay_seconds)


@dataclass(frozen=True)
class Batch:
    """The changes one run request answers."""

    descriptions: tuple[str, ...]
    """The first KEPT_DESCRIPTIONS changes, in the order they came."""
    count: int
    first_at: float
    last_at: float


class Debouncer:
    """Collects changes from every watch; one consumer takes them batch by batch. Thread-safe."""

    def __init__(self, *, quiet_seconds: float, max_delay_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._quiet = quiet_seconds
        self._max_delay = max_delay_seconds
        self._clock = clock
        self._condition = threading.Condition()
        self._descriptions: list[str] = []
        self._count = 0
        self._first: float | None = None
        self._last: float | None = None
        self._taken: Batch | None = None
        self._closed = False

    def add(self, description: str) -> None:
        with self._condition:
            now = self._clock()
            self._merge((description,), 1, now, now)
            self._condition.notify_all()

    def next_batch(self) -> Batch | None:
        """Block until a batch is due and take it; None once closed.

        The batch stays taken until `settle`; `idle` is False meanwhile.
        """
        with self._condition:
            while not self._closed:
                if self._first is None or self._last is None:
                    self._condition.wait()
                    continue
                due = due_at(first=self._first, last=self._last, quiet_seconds=self._quiet, max_delay_seconds=self._max_delay)
                now = self._clock()
                if now >= due:
                    return self._take()
                self._condition.wait(due - now)
            return None

    def settle(self, batch: Batch, *, delivered: bool) -> None:
        """The taken batch is done: requested, or (not delivered) put back to be requested again."""
        with self._condition:
            self._taken = None
            if not delivered:
                self._merge(batch.descriptions, batch.count, batch.first_at, batch.last_at)
            self._condition.notify_all()

    def close(self) -> None:
        with self._condition:
            self._closed = True
            self._condition.notify_all()

    def idle(self) -> bool:
        """No change waits and no batch is being requested."""
        with self._condition:
            return self._first is None and self._taken is None

    def _merge(self, descriptions: tuple[str, ...], count: int, first: float, last: float) -> None:
        room = KEPT_DESCRIPTIONS - len(self._descriptions)
        self._descriptions.extend(descriptions[: max(room, 0)])
        self._count += count
        self._first = first if self._first is None else min(self._first, first)
        self._last = last if self._last is None else max(self._last, last)

    def _take(self) -> Batch:
        assert self._first is not None and self._last is not None
        batch = Batch(descriptions=tuple(self._descriptions), count=self._count, first_at=self._first, last_at=self._last)
        self._descriptions, self._count, self._first, self._last = [], 0, None, None
        self._taken = batch
        return batch
