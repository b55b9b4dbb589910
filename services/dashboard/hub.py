"""The live status hub: one shared set of watches per identity, fanned out to that identity's
open streams, and the bounds on how many streams may be open.

- **Shared per identity.** The API server decides, per impersonated user and groups, what may
  be listed, so watches are shared only between the streams of one identity (the same
  Kubernetes user and groups: FeedKey). The first stream of an identity starts its watches
  (a Feed, fed by the FeedSource); the last one to close stops them.
- **Current state first.** A Feed keeps the summary of every object its watches have seen. A new
  stream first gets all of them (and an `unavailable` event for each kind whose watch is
  failing), then every change; joining is one step of the event loop, so nothing falls between
  the two. A kind the identity may not list is tried again when another of its streams opens
  (the API server's RBAC may have changed), as a new stream used to do.
- **Bounded.** At most StreamBounds.per_user streams of one Kubernetes user (429, Retry-After)
  and StreamBounds.total in all (503, Retry-After): refused before the stream starts, in the
  API's one refusal shape. A stream whose client falls QUEUE_LIMIT events behind is ended; the
  browser's EventSource opens it again and gets the current state.

Everything here runs on the event loop: no thread, no lock, nothing blocks.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from services.dashboard.identity import Identity
from services.dashboard.refusals import Refusal

STREAMS_PER_USER: Final = 16
"""A person's open pages: a browser over HTTP/1.1 keeps at most 6 connections to one host (so 6
live tabs), and one person may use a few browsers and devices at once. Beyond that it is a
script or a runaway page; 16 lets one user take at most a sixteenth of STREAMS_TOTAL."""
STREAMS_TOTAL: Final = 256
"""Everyone's open pages: the appliance's handful of users, each with many tabs, with room to
spare. What it bounds: each stream holds a client connection and up to QUEUE_LIMIT queued events,
and each distinct identity up to one watch connection per watched kind (at most 256 x 5 = 1280
connections to the API server, in their own pool, if 256 different users each had one page)."""
RETRY_AFTER_SECONDS: Final = 10
"""A stream's slot is free as soon as its page goes (the connection closes), so a refused
client may try again soon."""
QUEUE_LIMIT: Final = 10_000
"""Events one stream may have waiting for its client beyond the current state it joined with."""

FeedKey = tuple[str, tuple[str, ...]]
"""Whom a feed's watches act as: the impersonated Kubernetes user and groups."""


def feed_key(identity: Identity) -> FeedKey:
    return (identity.kubernetes_user, identity.kubernetes_groups)


@dataclass(frozen=True, slots=True)
class Message:
    """One server-sent event: its type and its data, JSON already encoded (once for every
    stream it goes to). Slotted: a feed keeps one per object, and every object the process
    holds lengthens its full garbage collections."""

    event: str
    data: str


def message(event: str, data: Mapping[str, Any]) -> Message:
    return Message(event=event, data=json.dumps(data, separators=(",", ":")))


@dataclass(frozen=True)
class StreamBounds:
    per_user: int = STREAMS_PER_USER
    total: int = STREAMS_TOTAL
    retry_after_seconds: int = RETRY_AFTER_SECONDS
    queue_limit: int = QUEUE_LIMIT

    def __post_init__(self) -> None:
        if min(self.per_user, self.total, self.retry_after_seconds, self.queue_limit) < 1:
            raise ValueError(f"stream bounds must be positive: {self}")


class StreamsRefused(Exception):
    """A stream refused by a bound: `refusal` (429 per user, 503 in all), with its Retry-After."""

    def __init__(self, refusal: Refusal, retry_after_seconds: int) -> None:
        super().__init__(str(refusal))
        refusal.headers["Retry-After"] = str(retry_after_seconds)
        self.refusal = refusal
        self.retry_after_seconds = retry_after_seconds


def refusal_of_bounds(bounds: StreamBounds, *, user: str, of_user: int, in_all: int) -> StreamsRefused | None:
    """The refusal of one more stream of `user`, who has `of_user` open, with `in_all` open in
    all; None when it may open. The user's own bound is named first. Pure."""
    if of_user >= bounds.per_user:
        refusal = Refusal(
            429,
            "TooManyStreams",
            f"{user} has {of_user} live status streams open, the most one user may have; close a page or try again later",
        )
        return StreamsRefused(refusal, bounds.retry_after_seconds)
    if in_all >= bounds.total:
        refusal = Refusal(
            503,
            "StreamsAtCapacity",
            f"the dashboard has {in_all} live status streams open, the most it serves; try again later",
        )
        return StreamsRefused(refusal, bounds.retry_after_seconds)
    return None


class Subscription:
    """One open stream: its place in its identity's feed, the events its client has not been
    sent yet, and its slot under the bounds (given back by `close`)."""

    def __init__(self, *, user: str, key: FeedKey, queue_limit: int, on_close: Callable[[Subscription], None]) -> None:
        self.user = user
        self.key = key
        self._queue_limit = queue_limit
        self._on_close = on_close
        self._pending: deque[Message] = deque()
        self._arrived = asyncio.Event()
        self.ended: str | None = None
        """Why no more events come (the client fell behind, the dashboard stops); None while open."""
        self.closed = False

    def deliver(self, sent: Message, *, bounded: bool = True) -> bool:
        """Queue `sent` for the client; False, and the stream ends, when it is QUEUE_LIMIT behind.
        An event not `bounded` (the current state the stream joins with) raises the limit by one."""
        if self.ended is not None:
            return False
        if not bounded:
            self._queue_limit += 1
        elif len(self._pending) >= self._queue_limit:
            self.end(f"the client fell {self._queue_limit} events behind")
            return False
        self._pending.append(sent)
        self._arrived.set()
        return True

    def end(self, reason: str) -> None:
        """No more events: what is queued is dropped, and `messages` ends."""
        if self.ended is None:
            self.ended = reason
            self._pending.clear()
            self._arrived.set()

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def messages(self) -> AsyncIterator[Message]:
        """Every event as it comes, until the stream ends (never by itself while it is open)."""
        while True:
            while self._pending:
                yield self._pending.popleft()
            if self.ended is not None:
                return
            self._arrived.clear()
            await self._arrived.wait()

    def close(self) -> None:
        """Leave the feed and give the slot back. Idempotent."""
        if not self.closed:
            self.closed = True
            self.end("closed")
            self._on_close(self)


@dataclass
class Feed:
    """What one identity's watches have seen (the summary of every object, by kind; the kinds
    failing now) and that identity's open streams. The FeedSource calls `listed`, `changed`,
    `failed` and `forbidden`; each change goes to every stream."""

    kinds: Sequence[str]
    _statuses: dict[str, dict[str, Message]] = field(init=False)
    _unavailable: dict[str, Message] = field(init=False, default_factory=dict)
    _subscriptions: dict[Subscription, None] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._statuses = {kind: {} for kind in self.kinds}

    @property
    def subscriptions(self) -> tuple[Subscription, ...]:
        return tuple(self._subscriptions)

    def join(self, subscription: Subscription) -> None:
        """Send `subscription` the current state, then every change from now on."""
        for statuses in self._statuses.values():
            for status in statuses.values():
                subscription.deliver(status, bounded=False)
        for unavailable in self._unavailable.values():
            subscription.deliver(unavailable, bounded=False)
        self._subscriptions[subscription] = None

    def leave(self, subscription: Subscription) -> None:
        self._subscriptions.pop(subscription, None)

    def listed(self, kind: str, summaries: Iterable[Mapping[str, Any]]) -> None:
        """A LIST of `kind`: every summary (by its `key`) is sent, and, after a LIST that
        followed a failure or an expired watch, the deletion of each object no longer there; a
        kind that was failing is `resumed`."""
        before = self._statuses[kind]
        now = {str(summary["key"]): message("status", summary) for summary in summaries}
        self._statuses[kind] = now
        for status in now.values():
            self._publish(status)
        for key in before.keys() - now.keys():
            self._publish(message("status", {**json.loads(before[key].data), "deleted": True}))
        if self._unavailable.pop(kind, None) is not None:
            self._publish(message("resumed", {"kind": kind}))

    def changed(self, kind: str, summary: Mapping[str, Any], *, deleted: bool) -> None:
        """One watch event of `kind` (not a bookmark)."""
        sent = message("status", {**summary, "deleted": deleted})
        key = str(summary["key"])
        if deleted:
            self._statuses[kind].pop(key, None)
        else:
            self._statuses[kind][key] = sent
        self._publish(sent)

    def failed(self, kind: str, detail: str) -> None:
        """The API server did not answer for `kind`: `unavailable` now and for streams that join
        until it answers again (its objects stay as last seen)."""
        unavailable = message("unavailable", {"kind": kind, "message": detail})
        self._unavailable[kind] = unavailable
        self._publish(unavailable)

    def forbidden(self, kind: str) -> None:
        """The identity may not list `kind`: nothing of it is kept or sent any more."""
        self._statuses[kind] = {}
        self._unavailable.pop(kind, None)

    def _publish(self, sent: Message) -> None:
        for subscription in tuple(self._subscriptions):
            if not subscription.deliver(sent):
                self.leave(subscription)


class Watching(Protocol):
    """The running watches of one feed."""

    def stop(self) -> None:
        """Stop every watch (at once; the feed gets nothing more)."""

    def retry_forbidden(self) -> None:
        """Try again the kinds that were forbidden."""


class FeedSource(Protocol):
    """What starts the watches of a feed (live.py: the API server's, as the identity)."""

    def start(self, identity: Identity, feed: Feed) -> Watching: ...

    async def close(self) -> None:
        """Stop every watch it started and release what it holds."""


@dataclass
class _Running:
    feed: Feed
    watching: Watching


class StreamHub:
    """Every open stream, its identity's feed, and the bounds (see the module)."""

    def __init__(self, source: FeedSource, *, kinds: Sequence[str], bounds: StreamBounds = StreamBounds()) -> None:
        self._source = source
        self._kinds = tuple(kinds)
        self.bounds = bounds
        self._running: dict[FeedKey, _Running] = {}
        self._of_user: Counter[str] = Counter()
        self._open = 0

    @property
    def open_streams(self) -> int:
        return self._open

    def streams_of(self, user: str) -> int:
        return self._of_user[user]

    @property
    def feeds(self) -> int:
        """Identities whose watches run now."""
        return len(self._running)

    def subscribe(self, identity: Identity) -> Subscription:
        """A new stream of `identity`, joined to its feed (started if it is the first). Raises
        StreamsRefused past a bound. Must run on the event loop."""
        user = identity.kubernetes_user
        refused = refusal_of_bounds(self.bounds, user=user, of_user=self._of_user[user], in_all=self._open)
        if refused is not None:
            raise refused
        key = feed_key(identity)
        running = self._running.get(key)
        if running is None:
            feed = Feed(self._kinds)
            running = self._running[key] = _Running(feed, self._source.start(identity, feed))
        else:
            running.watching.retry_forbidden()
        subscription = Subscription(user=user, key=key, queue_limit=self.bounds.queue_limit, on_close=self._release)
        running.feed.join(subscription)
        self._of_user[user] += 1
        self._open += 1
        return subscription

    def _release(self, subscription: Subscription) -> None:
        self._of_user[subscription.user] -= 1
        if self._of_user[subscription.user] <= 0:
            del self._of_user[subscription.user]
        self._open -= 1
        running = self._running.get(subscription.key)
        if running is None:
            return
        running.feed.leave(subscription)
        if not running.feed.subscriptions:
            running.watching.stop()
            del self._running[subscription.key]

    async def close(self) -> None:
        """End every stream and stop every watch (the dashboard stops)."""
        for running in self._running.values():
            for subscription in running.feed.subscriptions:
                subscription.end("the dashboard stops")
        self._running.clear()
        await self._source.close()
