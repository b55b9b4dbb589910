"""The trigger: every watch, the debouncer, the one writer of the request, the stall monitor.

Threads, each with its own connection to the API server:

- one per WatchTarget (`watcher.KindWatcher`): reports the changes that count, as spec or
  churn, and creates an Event on the Stack when its kind turns forbidden (events.py);
- the requester: takes each due batch from the debouncer (churn held back by its backoff,
  debounce.py) and sets the Stack's request annotation; a request that fails (the Stack
  missing, the server unreachable) is kept and tried again after a bounded exponential
  backoff, merged with what came meanwhile;
- the stall monitor: GETs the Stack every `stall_poll_seconds` and, while it is Stalled,
  reports a change when `StallRetry` says so (so the re-request is debounced like any other);
- the deadline alarm (deadline.py): the Appliance watch hands it Appliance/local as it changes;
  when the wall clock reaches its status.nextReconcileAt, it reports a change (debounced too);
- the runtime cleanup (cleanup.py): the ModelActivation watch hands it every activation as it
  changes; it holds those with a direct runtime with its finalizer and, once one is deleted,
  deletes that runtime's objects and releases it.

`health()` and `readiness()` are what /healthz and /readyz answer (probes.py).

A thread that ends by an unexpected exception sets `failed` (and the exception is printed by
Python's threading hook): the process then exits non-zero, and Kubernetes restarts it.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from providers.kinds import APPLIANCE, MODEL_ACTIVATION
from providers.kube import KubeAccess, KubeClient, KubeConfigError, KubeError, open_client
from services.reconcile_trigger.cleanup import DEFAULT_BACKOFF as CLEANUP_BACKOFF
from services.reconcile_trigger.cleanup import RELEASE_AFTER, RuntimeCleanup
from services.reconcile_trigger.deadline import DeadlineAlarm, Published
from services.reconcile_trigger.debounce import DEFAULT_CHURN_BACKOFF, Batch, ChurnState, Debouncer
from services.reconcile_trigger.events import create_event, forbidden_event
from services.reconcile_trigger.probes import ProbeReport, WatchHealth, health_report, readiness_report
from services.reconcile_trigger.progress import Progress
from services.reconcile_trigger.stack import (
    STACK,
    Backoff,
    StackRef,
    StallRetry,
    is_stalled,
    next_request_time,
    request_run,
    request_value,
)
from services.reconcile_trigger.watcher import KindWatcher, Refusal, WatchTiming
from services.reconcile_trigger.watches import WatchTarget, runtime_namespaces

LOGGER = logging.getLogger("magicstick.reconcile_trigger")


@dataclass(frozen=True)
class Timing:
    quiet_seconds: float = 0.5
    max_delay_seconds: float = 2.0
    churn_backoff: Backoff = DEFAULT_CHURN_BACKOFF
    """After a request for status churn alone, the wait before the next one: the maximum delay,
    doubling up to the Stack's resync interval (`--resync-seconds`)."""
    watch: WatchTiming = field(default_factory=WatchTiming)
    request_backoff: Backoff = Backoff(1.0, 60.0)
    """Between attempts to set the annotation, when one failed."""
    stall_backoff: Backoff = Backoff(30.0, 600.0)
    """From the first sight of a Stalled Stack to the first re-request, then doubling."""
    stall_poll_seconds: float = 10.0
    """How often the Stack is read to learn whether it is Stalled."""
    start_grace_seconds: float = 10.0
    """At start, the first request waits until every watch listed, at most this long."""
    stop_seconds: float = 5.0
    """How long `stop` waits for the threads."""
    stale_seconds: float = 120.0
    """/healthz fails when a watch heard nothing from the API server this long: longer than a
    hung watch's read deadline, the longest backoff and one more attempt together."""
    cleanup_backoff: Backoff = CLEANUP_BACKOFF
    """Between attempts of one activation's finalizer cleanup (cleanup.py)."""
    cleanup_release_after: int = RELEASE_AFTER
    """Failed cleanups of one activation after which its finalizer is released anyway."""


@dataclass(frozen=True)
class Request:
    """One run request that reached the Stack."""

    value: str
    """The annotation's new value."""
    at: float
    """When the patch returned (time.monotonic)."""
    batch: Batch


class ReconcileTrigger:
    """Start with `start()` or `with ReconcileTrigger(...) as trigger:`; `stop()` ends every thread."""

    def __init__(
        self,
        *,
        access: KubeAccess,
        stack: StackRef,
        targets: Sequence[WatchTarget],
        timing: Timing = Timing(),
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        instance: str | None = None,
    ) -> None:
        self.stack = stack
        self._access = access
        self._timing = timing
        self._wall_clock = wall_clock
        self._instance = instance or socket.gethostname()
        """Who reports Events: the Pod's name in the cluster (its host name)."""
        self._stop = threading.Event()
        self.failed = threading.Event()
        """Set when a thread ended by an unexpected exception."""
        self._debouncer = Debouncer(
            quiet_seconds=timing.quiet_seconds,
            max_delay_seconds=timing.max_delay_seconds,
            churn_backoff=timing.churn_backoff,
        )
        self._listed_all = threading.Event()
        self.progress = Progress()
        """Notified after each change of what the trigger and its watches report."""
        self._alarm = DeadlineAlarm(report=self._debouncer.add, wall_clock=wall_clock, progress=self.progress)
        self.cleanup = RuntimeCleanup(
            access=access,
            namespaces=runtime_namespaces(targets),
            stop=self._stop,
            progress=self.progress,
            backoff=timing.cleanup_backoff,
            release_after=timing.cleanup_release_after,
        )
        """Holds ModelActivations with a direct runtime and deletes that runtime with them."""
        observers = {APPLIANCE: self._alarm.observe, MODEL_ACTIVATION: self.cleanup.observe}
        self.watchers = tuple(
            KindWatcher(
                target,
                access=access,
                report=self._debouncer.add,
                stop=self._stop,
                timing=timing.watch,
                on_listed=self._on_listed,
                on_forbidden=self._report_forbidden,
                progress=self.progress,
                observe=observers.get(target.kind),
            )
            for target in targets
        )
        self._stack_uid: str | None = None
        self._events: list[dict[str, Any]] = []
        self._requests: list[Request] = []
        self._records_lock = threading.Lock()
        self._last_request_time: datetime | None = None
        self._stall = StallRetry(timing.stall_backoff)
        self.stalled: bool | None = None
        """What the last read of the Stack said; None before the first, or when it was not found."""
        self.stack_reads = 0
        self.stack_read_at: float | None = None
        """When the last read of the Stack was answered (time.monotonic), whatever the answer."""
        self._threads: list[threading.Thread] = []

    # --- life cycle -----------------------------------------------------------------------

    def start(self) -> ReconcileTrigger:
        bodies: list[tuple[str, Callable[[], None]]] = [(f"watch {w.target}", w.run) for w in self.watchers]
        bodies += [
            ("requester", self._request_loop),
            ("stall monitor", self._stall_loop),
            ("deadline alarm", self._alarm.run),
            ("runtime cleanup", self.cleanup.run),
        ]
        for name, body in bodies:
            thread = threading.Thread(target=self._guarded, args=(body,), name=name, daemon=True)
            self._threads.append(thread)
            thread.start()
        LOGGER.info("watching %d collections; requesting runs of Stack %s", len(self.watchers), self.stack)
        return self

    def stop(self) -> None:
        """Stop every thread: watches are aborted, a request in progress finishes."""
        self._stop.set()
        self._listed_all.set()
        self._debouncer.close()
        self._alarm.close()
        self.cleanup.close()
        for watcher in self.watchers:
            watcher.abort()
        deadline = time.monotonic() + self._timing.stop_seconds
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> ReconcileTrigger:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    # --- what tests and the benchmark observe ---------------------------------------------

    @property
    def requests(self) -> tuple[Request, ...]:
        with self._records_lock:
            return tuple(self._requests)

    @property
    def events(self) -> tuple[dict[str, Any], ...]:
        """The Events created on the Stack, as the server returned them."""
        with self._records_lock:
            return tuple(self._events)

    @property
    def deadline(self) -> Published | None:
        """The program's next deadline (Appliance/local's status.nextReconcileAt) waited for, if any."""
        return self._alarm.armed

    def synced(self) -> bool:
        """Every watch has listed its collection once."""
        return all(watcher.listed.is_set() for watcher in self.watchers)

    def idle(self) -> bool:
        """No change waits to be requested and no request is in progress."""
        return self._debouncer.idle()

    def churn(self) -> ChurnState:
        """Where the backoff of status churn stands."""
        return self._debouncer.churn_state()

    def health(self) -> ProbeReport:
        """What /healthz answers: no thread failed, every watch heard from the server lately."""
        return health_report(
            failed=self.failed.is_set(),
            watches=self._watch_health(),
            now=time.monotonic(),
            stale_seconds=self._timing.stale_seconds,
        )

    def readiness(self) -> ProbeReport:
        """What /readyz answers: every watch listed once, none forbidden."""
        return readiness_report(watches=self._watch_health())

    def _watch_health(self) -> list[WatchHealth]:
        return [
            WatchHealth(target=str(w.target), listed=w.listed.is_set(), heard_at=w.heard_at, forbidden=w.forbidden)
            for w in self.watchers
        ]

    # --- threads --------------------------------------------------------------------------

    def _guarded(self, body: Callable[[], None]) -> None:
        finished = False
        try:
            body()
            finished = True
        finally:
            if not finished and not self._stop.is_set():
                self.failed.set()
                self.progress.notify()

    def _on_listed(self) -> None:
        if self.synced():
            self._listed_all.set()

    def _report_forbidden(self, refusal: Refusal) -> bool:
        """Create the Event of a watch turned forbidden (in the watch's thread); True once created.
        A failure is logged, and the watch asks again at its next refusal."""
        try:
            with open_client(self._access, sleep=self._stop.wait) as client:
                if self._stack_uid is None:
                    found = client.get_or_none(STACK, self.stack.name, self.stack.namespace)
                    self._stack_uid = None if found is None else found["metadata"].get("uid")
                body = forbidden_event(
                    stack=self.stack,
                    stack_uid=self._stack_uid,
                    refusal=refusal,
                    now=self._wall_clock(),
                    instance=self._instance,
                )
                created = create_event(client, body)
        except KubeError as error:
            LOGGER.warning("creating the Event of a forbidden watch on Stack %s: %s", self.stack, error.detail)
            return False
        except KubeConfigError as error:
            LOGGER.warning("creating the Event of a forbidden watch on Stack %s: %s", self.stack, error)
            return False
        with self._records_lock:
            self._events.append(created)
        self.progress.notify()
        LOGGER.info("reported on Stack %s: Event %s (%s)", self.stack, created["metadata"]["name"], refusal.target)
        return True

    def _request_loop(self) -> None:
        self._wait_for_first_lists()
        attempt = 0
        while not self._stop.is_set():
            try:
                with open_client(self._access, sleep=self._stop.wait) as client:
                    while (batch := self._debouncer.next_batch()) is not None:
                        delivered = self._request(client, batch)
                        self._debouncer.settle(batch, delivered=delivered)
                        self.progress.notify()
                        if delivered:
                            attempt = 0
                        else:
                            self._back_off(attempt)
                            attempt += 1
                    return
            except KubeConfigError as error:
                LOGGER.warning("requesting runs of Stack %s: %s", self.stack, error)
                self._back_off(attempt)
                attempt += 1

    def _wait_for_first_lists(self) -> None:
        """The first LIST of every watch reports a change: at start they make one request, once
        all are listed (a kind not served yet would hold it forever, hence the bound)."""
        if not self._listed_all.wait(self._timing.start_grace_seconds):
            waiting = ", ".join(str(w.target) for w in self.watchers if not w.listed.is_set())
            LOGGER.warning(
                "not every watch listed within %.0f s (%s); requesting anyway",
                self._timing.start_grace_seconds,
                waiting,
            )

    def _back_off(self, attempt: int) -> None:
        delay = self._timing.request_backoff.delay(attempt)
        LOGGER.warning("requesting a run of Stack %s failed; trying again in %.1f s", self.stack, delay)
        self._stop.wait(delay)

    def _request(self, client: KubeClient, batch: Batch) -> bool:
        moment = next_request_time(self._wall_clock(), self._last_request_time)
        value = request_value(moment)
        try:
            request_run(client, self.stack, value)
        except KubeError as error:
            LOGGER.warning("setting the reconciliation request of Stack %s: %s", self.stack, error.detail)
            return False
        self._last_request_time = moment
        with self._records_lock:
            self._requests.append(Request(value=value, at=time.monotonic(), batch=batch))
        shown = "; ".join(batch.descriptions[:3])
        more = f"; and {batch.count - 3} more" if batch.count > 3 else ""
        LOGGER.info(
            "requested a run of Stack %s (%s) for %d change(s): %s%s", self.stack, value, batch.count, shown, more
        )
        return True

    def _stall_loop(self) -> None:
        while not self._stop.is_set():
            try:
                with open_client(self._access, sleep=self._stop.wait) as client:
                    while not self._stop.is_set():
                        self._read_stack(client)
                        self._stop.wait(self._next_poll())
            except KubeConfigError as error:
                LOGGER.warning("reading Stack %s: %s", self.stack, error)
                self._stop.wait(self._timing.stall_poll_seconds)

    def _read_stack(self, client: KubeClient) -> None:
        """Read the Stack once; report a change when it is Stalled and its retry is due."""
        try:
            stack = client.get_or_none(STACK, self.stack.name, self.stack.namespace)
        except KubeError as error:
            LOGGER.warning("reading Stack %s: %s", self.stack, error.detail)
            self._count_read(time.monotonic())
            return
        now = time.monotonic()
        if stack is not None:
            self._stack_uid = stack["metadata"].get("uid")
        stalled = stack is not None and is_stalled(stack)
        self.stalled = None if stack is None else stalled
        if self._stall.observe(stalled=stalled, now=now):
            LOGGER.warning("Stack %s is Stalled: requesting a run (retry %d)", self.stack, self._stall.attempts)
            self._debouncer.add(f"Stack {self.stack} is Stalled (retry {self._stall.attempts})")
        self._count_read(now)

    def _count_read(self, now: float) -> None:
        self.stack_read_at = now
        self.stack_reads += 1
        self.progress.notify()

    def _next_poll(self) -> float:
        due = self._stall.due
        if due is None:
            return self._timing.stall_poll_seconds
        return max(0.0, min(self._timing.stall_poll_seconds, due - time.monotonic()))
