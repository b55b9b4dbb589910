"""One watch, kept alive: list, watch from there, resume, relist when the server forgot.

In one fixed order, forever (until stopped):

1. LIST the collection; remember each object's fingerprints and the list's resourceVersion,
   and report one change: something may have happened while nothing watched (at start, after
   a 410, after a failure).
2. WATCH from the last resourceVersion seen (an event's or a bookmark's). Each event that can
   alter the plan (`watches.counts`) is reported, as spec or churn (`watches.classify`). When
   the server ends the watch (its timeout), watch again from there.
3. On 410 Gone (the server no longer holds that resourceVersion) or 504 ResourceVersionTooLarge
   (it does not hold it yet: its watch cache lags after a restart, or etcd was restored), as an
   answer or as an ERROR event, go back to 1 at once; such an answer to the first watch after a
   list counts as a failure (4), so a server that forgets at once is not listed in a tight loop.
4. On any other failure (no answer, a 5xx, a 403 or 404 of a kind not served yet), wait a
   bounded exponential backoff, then resume from 2 if a resourceVersion is known, else 1. A
   list, or a watch that delivered an event or lasted half its timeout, resets the backoff; a
   watch the server ended sooner without an event is a failure. A kind not served (a 404 of
   its LIST) counts as listed for the start request: nothing of it can alter a plan until it
   is served, and its first LIST then reports a change.

A quiet watch is told from a dead one by time: the server ends every watch after its
`timeoutSeconds` (45 s), and sends bookmarks when its kind changed elsewhere, so an open watch
that delivers nothing (no event, no bookmark, no end) for the read deadline (55 s) hung; it is
aborted and resumed from its resourceVersion (a failure of 4). TCP keepalive on the socket
finds a peer that vanished within 50 s. What the real kube-apiserver does: its watch cache
sends a bookmark shortly (about 2 s) before the watch's timeout and then every minute, but only
when the kind changed since the watch's resourceVersion; a watch of a kind nothing touches
receives nothing at all until the server ends it.

A watch refused with 403 `forbidden_after` times in a row is forbidden (`Refusal`): the trigger
reports it on /readyz and once as an Event on the Stack (`on_forbidden`), until a LIST or a
WATCH of it is answered again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from providers.kube import (
    ConnectionFailure,
    EventType,
    Forbidden,
    Gone,
    KubeAccess,
    KubeClient,
    KubeConfigError,
    KubeConnectionError,
    KubeError,
    NotFound,
    ResourceVersionTooLarge,
    TcpKeepalive,
    WatchStream,
    open_client,
)
from services.reconcile_trigger.progress import Progress
from services.reconcile_trigger.stack import Backoff
from services.reconcile_trigger.watches import ChangeClass, WatchTarget, classify, counts, fingerprint, spec_fingerprint

LOGGER = logging.getLogger("magicstick.reconcile_trigger")

ObjectKey = tuple[str, str]
KEPT_BACKOFFS = 32


@dataclass(frozen=True)
class WatchTiming:
    timeout_seconds: int = 45
    """The watch's timeoutSeconds: the server ends it then, and the watcher opens the next. That
    end is the one sign of life a quiet watch is sure to give."""
    read_deadline_seconds: float = 55.0
    """An open watch silent this long (no event, no bookmark, no end) hung: it is aborted and
    resumed. Longer than `timeout_seconds`, so a quiet healthy watch always ends first."""
    keepalive: TcpKeepalive = TcpKeepalive(idle_seconds=20, interval_seconds=10, probes=3)
    backoff: Backoff = Backoff(0.5, 30.0)
    """Between attempts after a failure other than 410 and 504 ResourceVersionTooLarge."""
    forbidden_after: int = 3
    """403 answers in a row after which a watch counts as forbidden (one alone may be RBAC
    still propagating a grant)."""

    def __post_init__(self) -> None:
        if not self.read_deadline_seconds > self.timeout_seconds > 0:
            raise ValueError(
                f"WatchTiming needs 0 < timeout_seconds ({self.timeout_seconds}) < read_deadline_seconds ({self.read_deadline_seconds})"
            )
        if self.forbidden_after < 1:
            raise ValueError(f"WatchTiming.forbidden_after must be at least 1, not {self.forbidden_after}")


class Verb(StrEnum):
    """The requests of a watch, named as RBAC names them."""

    LIST = "list"
    WATCH = "watch"


@dataclass(frozen=True)
class Refusal:
    """A watch the server refuses (403): which request, on what, and what the server said."""

    target: str
    verb: Verb
    resource: str
    """`plural.group` (`plural` for the core group), as RBAC and the server's messages name it."""
    namespace: str | None
    """None: cluster-wide."""
    message: str

    def describe(self) -> str:
        where = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return (
            f"watch {self.target}: forbidden to {self.verb} {self.resource} {where} "
            f"(the trigger needs list and watch); the API server said: {self.message}"
        )


class Failed(Exception):
    """A watch that did not work though the server refused nothing: it ended early without an
    event, or answered 410 right after a list."""


class Hung(Exception):
    """An open watch that delivered nothing (no event, no bookmark, no end) for its read deadline."""


class KindWatcher:
    """Runs one WatchTarget in its own thread, with its own connection; `report` is called with a
    one-line description and the class of each change that counts. Thread-safe to observe and to
    `abort`."""

    def __init__(
        self,
        target: WatchTarget,
        *,
        access: KubeAccess,
        report: Callable[[str, ChangeClass], None],
        stop: threading.Event,
        timing: WatchTiming = WatchTiming(),
        on_listed: Callable[[], None] = lambda: None,
        on_forbidden: Callable[[Refusal], bool] = lambda refusal: True,
        progress: Progress | None = None,
        observe: Callable[[ObjectKey, dict[str, Any] | None], None] | None = None,
    ) -> None:
        self.target = target
        self._observe = observe
        """Told each object as the watch now knows it (None: gone), status included, whether
        or not the change counts (deadline.py reads Appliance/local's status so)."""
        self._on_listed = on_listed
        self._on_forbidden = on_forbidden
        self._progress = progress or Progress()
        self._access = access
        self._report = report
        self._stop = stop
        self._timing = timing
        self._lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._known: dict[ObjectKey, tuple[str, str]] = {}
        self._watches_since_list = 0
        self._verb = Verb.LIST
        self._refusals_in_a_row = 0
        self._event_reported = False
        self.listed = threading.Event()
        """Set once the first LIST succeeded."""
        self.lists = 0
        self.events = 0
        self.failures = 0
        self.watches_ended = 0
        """Watches the server ended (their timeout), with or without events."""
        self.backoffs: deque[float] = deque(maxlen=KEPT_BACKOFFS)
        """The last waits after failures, in order."""
        self.resource_version: str | None = None
        """The last resourceVersion handled (from a list, an event or a bookmark)."""
        self.unserved = False
        """The last LIST found the kind not served (404); reset by a LIST that succeeds."""
        self.heard_at = time.monotonic()
        """When the API server last answered this watch (time.monotonic): a list, a watch opened,
        an event or bookmark, a watch ended, a refusal. Starts at construction."""
        self.forbidden: Refusal | None = None
        """Set after `forbidden_after` refusals (403) in a row; cleared by a request answered."""

    def run(self) -> None:
        """The thread's body; returns once stopped."""
        attempt = 0
        while not self._stop.is_set():
            try:
                with open_client(self._access, sleep=self._stop.wait) as client:
                    while not self._stop.is_set():
                        self._step(client)
                        attempt = 0
            except (KubeError, KubeConfigError, Failed, Hung) as error:
                if self._stop.is_set():
                    return
                self.failures += 1
                if isinstance(error, Failed) or (
                    isinstance(error, KubeError) and not isinstance(error, KubeConnectionError)
                ):
                    self.heard_at = time.monotonic()
                if isinstance(error, Forbidden):
                    self._refused(error)
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
        """A LIST when no resourceVersion is known, else one watch; a 410 or a 504
        ResourceVersionTooLarge of a watch means list again at once (a 410 of a LIST, an expired
        continue token, is a failure like others)."""
        if self.resource_version is None:
            self._list(client)
            return
        first_after_list = self._watches_since_list == 0
        self._watches_since_list += 1
        try:
            self._watch(client, self.resource_version)
        except (Gone, ResourceVersionTooLarge) as error:
            self.resource_version = None
            if first_after_list:
                raise Failed(f"{error.detail}, in the first watch after a list") from error
            LOGGER.info("%s: %s; listing again", self.target, error.detail)

    def _list(self, client: KubeClient) -> None:
        target = self.target
        self._verb = Verb.LIST
        try:
            collection = client.list_collection(
                target.kind, namespace=target.namespace, label_selector=target.label_selector
            )
        except NotFound:
            self.unserved = True
            if not self.listed.is_set():
                self.listed.set()
                self._on_listed()
            raise
        self._answered()
        self.unserved = False
        before = set(self._known)
        self._known = {
            _key(item): (fingerprint(target.sensitivity, item), spec_fingerprint(item, target.sensitivity))
            for item in collection.items
        }
        if self._observe is not None:
            for item in collection.items:
                self._observe(_key(item), item)
            for gone in sorted(before - set(self._known)):
                self._observe(gone, None)
        self.lists += 1
        self._report(
            f"{target}: listed {len(collection.items)} (changes while not watching may have been missed)",
            ChangeClass.SPEC,
        )
        self.resource_version = collection.resource_version
        self._watches_since_list = 0
        self.listed.set()
        self._on_listed()
        self._progress.notify()

    def _watch(self, client: KubeClient, version: str) -> None:
        target = self.target
        timing = self._timing
        started = time.monotonic()
        delivered = False
        self._verb = Verb.WATCH
        with client.watch(
            target.kind,
            namespace=target.namespace,
            label_selector=target.label_selector,
            resource_version=version,
            timeout_seconds=timing.timeout_seconds,
            read_deadline_seconds=timing.read_deadline_seconds,
            keepalive=timing.keepalive,
        ) as stream:
            with self._lock:
                self._stream = stream
            if self._stop.is_set():
                stream.abort()
            self._answered()
            try:
                for event in stream:
                    delivered = True
                    self.heard_at = time.monotonic()
                    self._handle(event.type, event.object)
                    self.events += 1
                    self.resource_version = event.resource_version or self.resource_version
                    self._progress.notify()
            except KubeConnectionError as error:
                if error.failure is ConnectionFailure.TIMEOUT:
                    raise Hung(
                        f"nothing came for {timing.read_deadline_seconds:g} s (no event, no bookmark, no end): the watch hung"
                    ) from error
                raise
            finally:
                with self._lock:
                    self._stream = None
        self.heard_at = time.monotonic()
        self.watches_ended += 1
        self._progress.notify()
        if not (delivered or self._stop.is_set() or time.monotonic() - started >= timing.timeout_seconds / 2):
            raise Failed(f"the server ended the watch after {time.monotonic() - started:.1f} s without an event")

    def _answered(self) -> None:
        """The server answered a LIST or opened a WATCH: alive, and not (or no longer) forbidden."""
        self.heard_at = time.monotonic()
        self._refusals_in_a_row = 0
        if self.forbidden is not None:
            LOGGER.info("%s: allowed again (%s answered)", self.target, self._verb)
            self.forbidden = None
            self._progress.notify()

    def _refused(self, error: Forbidden) -> None:
        self._refusals_in_a_row += 1
        if self._refusals_in_a_row < self._timing.forbidden_after:
            return
        if self.forbidden is None:
            kind = self.target.kind
            resource = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
            self.forbidden = Refusal(
                target=str(self.target),
                verb=self._verb,
                resource=resource,
                namespace=self.target.namespace,
                message=error.message,
            )
            self._event_reported = False
            LOGGER.error("%s", self.forbidden.describe())
        if not self._event_reported:
            self._event_reported = self._on_forbidden(self.forbidden)

    def _handle(self, event: EventType, obj: dict[str, Any]) -> None:
        if event is EventType.BOOKMARK:
            return
        key = _key(obj)
        current = (fingerprint(self.target.sensitivity, obj), spec_fingerprint(obj, self.target.sensitivity))
        previous = self._known.pop(key, None) if event is EventType.DELETED else self._known.get(key)
        if event is not EventType.DELETED:
            self._known[key] = current
        if self._observe is not None:
            self._observe(key, None if event is EventType.DELETED else obj)
        if counts(event, previous[0] if previous else None, current[0]):
            change = classify(event, previous[1] if previous else None, current[1])
            namespace, name = key
            where = f"{namespace}/{name}" if namespace else name
            version = (obj.get("metadata") or {}).get("resourceVersion")
            self._report(
                f"{self.target.kind.kind} {where} {event.value.lower()} (resourceVersion {version}, {change})", change
            )
        else:
            LOGGER.debug("%s: %s %s changes nothing the plan reads", self.target, event.value, key)


def _key(obj: dict[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _describe(error: Exception) -> str:
    return error.detail if isinstance(error, KubeError) else str(error)
