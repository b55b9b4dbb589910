"""One watch, kept alive: list, watch from there, resume, relist when the server forgot.

In one fixed order, forever (until stopped):

1. LIST the collection; remember each object's fingerprint and the list's resourceVersion,
   and report one change: something may have happened while nothing watched (at start, after
   a 410, after a failure).
2. WATCH from the last resourceVersion seen (an event's or a bookmark's). Each event that can
   alter the plan (`watches.counts`) is reported. When the server ends the watch (its
   timeout), watch again from there.
3. On 410 Gone (the server no longer holds that resourceVersion; as an answer or as an ERROR
   event), go back to 1 at once; a 410 of the first watch after a list counts as a failure
   (4), so a server that forgets at once is not listed in a tight loop.
4. On any other failure (no answer, a 5xx, a 403 or 404 of a kind not served yet), wait a
   bounded exponential backoff, then resume from 2 if a resourceVersion is known, else 1. A
   list, or a watch that delivered an event or lasted half its timeout, resets the backoff; a
   watch the server ended sooner without an event is a failure. A kind not served (a 404 of
   its LIST) counts as listed for the start request: nothing of it can alter a plan until it
   is served, and its first LIST then reports a change.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from providers.kube import EventType, Gone, KubeAccess, KubeClient, KubeConfigError, KubeError, NotFound, WatchStream, open_client
from services.reconcile_trigger.progress import Progress
from services.reconcile_trigger.stack import Backoff
from services.reconcile_trigger.watches import WatchTarget, counts, fingerprint

LOGGER = logging.getLogger("magicstick.reconcile_trigger")

ObjectKey = tuple[str, str]
KEPT_BACKOFFS = 32


@dataclass(frozen=True)
class WatchTiming:
    timeout_seconds: int = 240
    """How long the server keeps one watch open before the watcher opens the next."""
    backoff: Backoff = Backoff(0.5, 30.0)
    """Between attempts after a failure other than 410."""


class Failed(Exception):
    """A watch that did not work though the server refused nothing: it ended early without an
    event, or answered 410 right after a list."""


class KindWatcher:
    """Runs one WatchTarget in its own thread, with its own connection; `report` is called with a
    one-line description of each change that counts. Thread-safe to observe and to `abort`."""

    def __init__(
        self,
        target: WatchTarget,
        *,
        access: KubeAccess,
        report: Callable[[str], None],
        stop: threading.Event,
        timing: WatchTiming = WatchTiming(),
        on_listed: Callable[[], None] = lambda: None,
        progress: Progress | None = None,
    ) -> None:
        self.target = target
        self._on_listed = on_listed
        self._progress = progress or Progress()
        self._access = access
        self._report = report
        self._stop = stop
        self._timing = timing
        self._lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._known: dict[ObjectKey, str] = {}
        self._watches_since_list = 0
        self.listed = threading.Event()
        """Set once the first LIST succeeded."""
        self.lists = 0
        self.events = 0
        self.failures = 0
        self.backoffs: deque[float] = deque(maxlen=KEPT_BACKOFFS)
        """The last waits after failures, in order."""
        self.resource_version: str | None = None
        """The last resourceVersion handled (from a list, an event or a bookmark)."""
        self.unserved = False
        """The last LIST found the kind not served (404); reset by a LIST that succeeds."""

    def run(self) -> None:
        """The thread's body; returns once stopped."""
        attempt = 0
        while not self._stop.is_set():
            try:
                with open_client(self._access, sleep=self._stop.wait) as client:
                    while not self._stop.is_set():
                        self._step(client)
                        attempt = 0
            except (KubeError, KubeConfigError, Failed) as error:
                if self._stop.is_set():
                    return
                self.failures += 1
                delay = self._timing.backoff.delay(attempt)
                attempt += 1
                self.backoffs.append(delay)
                self._progress.notify()
                LOGGER.warning("%s: %s; retrying in %.1f s", self.target, _describe(error), delay)
                self._stop.wait(delay)

    def abort(self) -> None:
        """End the watch in progress now (the stop event must be set first)."""
        with self._lock:
            if self._stream is not None:
                self._stream.abort()

    def _step(self, client: KubeClient) -> None:
        """A LIST when no resourceVersion is known, else one watch; a 410 of a watch means list
        again at once (a 410 of a LIST, an expired continue token, is a failure like others)."""
        if self.resource_version is None:
            self._list(client)
            return
        first_after_list = self._watches_since_list == 0
        self._watches_since_list += 1
        try:
            self._watch(client, self.resource_version)
        except Gone as error:
            self.resource_version = None
            if first_after_list:
                raise Failed(f"{error.detail}, in the first watch after a list") from error
            LOGGER.info("%s: %s; listing again", self.target, error.detail)

    def _list(self, client: KubeClient) -> None:
        target = self.target
        try:
            collection = client.list_collection(target.kind, namespace=target.namespace, label_selector=target.label_selector)
        except NotFound:
            self.unserved = True
            if not self.listed.is_set():
                self.listed.set()
                self._on_listed()
            raise
        self.unserved = False
        self._known = {_key(item): fingerprint(target.sensitivity, item) for item in collection.items}
        self.lists += 1
        self._report(f"{target}: listed {len(collection.items)} (changes while not watching may have been missed)")
        self.resource_version = collection.resource_version
        self._watches_since_list = 0
        self.listed.set()
        self._on_listed()
        self._progress.notify()

    def _watch(self, client: KubeClient, version: str) -> None:
        target = self.target
        started = time.monotonic()
        delivered = False
        with client.watch(
            target.kind,
            namespace=target.namespace,
            label_selector=target.label_selector,
            resource_version=version,
            timeout_seconds=self._timing.timeout_seconds,
        ) as stream:
            with self._lock:
                self._stream = stream
            if self._stop.is_set():
                stream.abort()
            try:
                for event in stream:
                    delivered = True
                    self._handle(event.type, event.object)
                    self.events += 1
                    self.resource_version = event.resource_version or self.resource_version
                    self._progress.notify()
            finally:
                with self._lock:
                    self._stream = None
        if not (delivered or self._stop.is_set() or time.monotonic() - started >= self._timing.timeout_seconds / 2):
            raise Failed(f"the server ended the watch after {time.monotonic() - started:.1f} s without an event")

    def _handle(self, event: EventType, obj: dict[str, Any]) -> None:
        if event is EventType.BOOKMARK:
            return
        key = _key(obj)
        current = fingerprint(self.target.sensitivity, obj)
        previous = self._known.pop(key, None) if event is EventType.DELETED else self._known.get(key)
        if event is not EventType.DELETED:
            self._known[key] = current
        if counts(event, previous, current):
            namespace, name = key
            where = f"{namespace}/{name}" if namespace else name
            version = (obj.get("metadata") or {}).get("resourceVersion")
            self._report(f"{self.target.kind.kind} {where} {event.value.lower()} (resourceVersion {version})")
        else:
            LOGGER.debug("%s: %s %s changes nothing the plan reads", self.target, event.value, key)


def _key(obj: dict[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _describe(error: Exception) -> str:
    return error.detail if isinstance(error, KubeError) else str(error)
