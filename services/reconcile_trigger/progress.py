"""Progress: one condition every thread of the trigger notifies after it changes what it reports.

The trigger's observable state (its requests, whether it is idle, each watch's lists, events
and failures, the reads of the Stack) changes in its own threads. Whoever waits for a state
(the tests, the benchmark) waits on this condition and is woken by each change, instead of
asking again and again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Progress:
    def __init__(self) -> None:
        self._condition = threading.Condition()

    def notify(self) -> None:
        """Something observable changed: wake every waiter to look again."""
        with self._condition:
            self._condition.notify_all()

    def wait_for(self, check: Callable[[], T], timeout: float) -> T:
        """`check()` once it is truthy, looked at after each change; its last value (falsy)
        when `timeout` seconds pass first."""
        with self._condition:
            return self._condition.wait_for(check, timeout)
