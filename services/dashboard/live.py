"""Live status for open pages: the API server's watches, streamed as server-sent events.

Each open page's stream (`GET /api/v1/stream`) is a Subscription of the hub (hub.py): the
watches are shared by every open stream of one identity, and bounded. Per identity, as that
user (impersonated, so the API server decides what may be listed):

- each watched kind is first LISTed and every object's summary (summaries.Summary) sent, so a
  change between the page's render and the stream's start is not missed; then one event per
  change, from a watch started at the resourceVersion of that LIST. A stream that joins running
  watches first gets the summary of every object they have seen (hub.Feed), then the changes;
  every stream starts with a `ready` event;
- a watch that ends (the server's timeout, WATCH_SECONDS, so that a change of the user's RBAC
  counts within it) is resumed from the last resourceVersion seen; one whose resourceVersion expired (410 Gone, or one the server has not
  reached) lists again and sends every summary again (and the deletion of what went meanwhile);
- a kind the user may not list is not watched (the page shows nothing of it anyway) until
  another stream of that identity opens; an API failure is sent as an `unavailable` event (also
  to streams that open while it lasts) and the kind is tried again after RETRY_SECONDS (a LIST
  then a watch, so nothing is missed), with a `resumed` event once it works again;
- nothing takes a thread: the watches are coroutines on the event loop, over their own
  connection pool (providers.kube.AsyncReader, at most WATCH_CONNECTIONS connections), so open
  streams take neither the threads nor the connections ordinary requests need. When the last
  stream of an identity closes, its watches are cancelled at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

from sse_starlette.sse import EventSourceResponse
from starlette.types import Receive, Scope, Send

from providers.kinds import APP_INSTANCE, APPLIANCE, HOST_OPERATION, MODEL_ACTIVATION, MODULE_ACTIVATION
from providers.kube import (
    AsyncReader,
    EventType,
    Forbidden,
    Gone,
    KubeConfigError,
    KubeError,
    ResourceKind,
    ResourceVersionTooLarge,
)
from services.dashboard.hub import STREAMS_TOTAL, Feed, StreamBounds, StreamHub, Subscription
from services.dashboard.identity import Identity
from services.dashboard.summaries import summary_of

WATCHED: Final[tuple[ResourceKind, ...]] = (
    MODEL_ACTIVATION,
    APP_INSTANCE,
    MODULE_ACTIVATION,
    HOST_OPERATION,
    APPLIANCE,
)
WATCH_SECONDS: Final = 60
"""How long the server keeps one watch open before it ends it and the watch resumes. The API
server authorizes a watch when it starts, and a stream that joins running watches is not listed
for again: so a change of RBAC reaches an identity's streams within this time."""
RETRY_SECONDS: Final = 1.0
PING_SECONDS: Final = 15
SEND_TIMEOUT_SECONDS: Final = 30.0
"""A client that takes no bytes for this long (its connection stalled) loses its stream and slot."""
WATCH_CONNECTIONS: Final = STREAMS_TOTAL * len(WATCHED)
"""The watch pool's bound: one connection per watched kind per identity, and there are never more
identities than open streams; a LIST uses the connection its kind's watch then uses."""
LOGGER = logging.getLogger("services.dashboard.live")

Pause = Callable[[float], Awaitable[object]]


async def follow(
    reader: AsyncReader,
    kind: ResourceKind,
    feed: Feed,
    *,
    namespace: str,
    retry_seconds: float = RETRY_SECONDS,
    pause: Pause = asyncio.sleep,
) -> None:
    """LIST then watch `kind` into `feed`, as the module says, until cancelled or forbidden."""
    resource_version: str | None = None
    while True:
        try:
            if resource_version is None:
                collection = await reader.list_collection(kind, namespace=namespace)
                feed.listed(kind.kind, [summary_of(item).to_wire() for item in collection.items])
                resource_version = collection.resource_version
            async with reader.watch(
                kind, resource_version=resource_version, namespace=namespace, timeout_seconds=WATCH_SECONDS
            ) as stream:
                async for event in stream:
                    resource_version = event.resource_version or resource_version
                    if event.type is not EventType.BOOKMARK:
                        feed.changed(
                            kind.kind, summary_of(event.object).to_wire(), deleted=event.type is EventType.DELETED
                        )
        except Forbidden:
            feed.forbidden(kind.kind)
            return
        except (Gone, ResourceVersionTooLarge):
            resource_version = None
        except (KubeError, KubeConfigError) as error:
            detail = error.detail if isinstance(error, KubeError) else str(error)
            LOGGER.warning("watch of %s failed: %s", kind.plural, detail)
            feed.failed(kind.kind, detail)
            resource_version = None
            await pause(retry_seconds)


class Watches:
    """The running watches of one feed: one task per watched kind (hub.Watching)."""

    def __init__(
        self,
        reader: AsyncReader,
        feed: Feed,
        *,
        namespace: str,
        kinds: tuple[ResourceKind, ...] = WATCHED,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self._reader = reader
        self._feed = feed
        self._namespace = namespace
        self._retry_seconds = retry_seconds
        self._tasks = {kind: self._started(kind) for kind in kinds}

    def _started(self, kind: ResourceKind) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(
            follow(self._reader, kind, self._feed, namespace=self._namespace, retry_seconds=self._retry_seconds),
            name=f"live-{kind.plural}",
        )
        task.add_done_callback(_log_failure)
        return task

    @property
    def tasks(self) -> tuple[asyncio.Task[None], ...]:
        return tuple(self._tasks.values())

    def stop(self) -> None:
        for task in self._tasks.values():
            task.cancel()

    def retry_forbidden(self) -> None:
        for kind, task in self._tasks.items():
            if task.done() and not task.cancelled():
                self._tasks[kind] = self._started(kind)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        LOGGER.error("%s stopped", task.get_name(), exc_info=task.exception())


class WatchSource:
    """Starts each feed's watches on the API server, as the feed's identity (hub.FeedSource)."""

    def __init__(self, reader: AsyncReader, *, namespace: str, retry_seconds: float = RETRY_SECONDS) -> None:
        self._reader = reader
        self._namespace = namespace
        self._retry_seconds = retry_seconds
        self._started: list[Watches] = []

    def start(self, identity: Identity, feed: Feed) -> Watches:
        acting = self._reader.impersonating(identity.kubernetes_user, identity.kubernetes_groups)
        self._started = [watches for watches in self._started if not all(task.done() for task in watches.tasks)]
        watches = Watches(acting, feed, namespace=self._namespace, retry_seconds=self._retry_seconds)
        self._started.append(watches)
        return watches

    async def close(self) -> None:
        tasks = [task for watches in self._started for task in watches.tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._reader.aclose()


def stream_hub(reader: AsyncReader, *, namespace: str, bounds: StreamBounds = StreamBounds()) -> StreamHub:
    """The dashboard's hub: every identity's watches on `reader`'s own connection pool."""
    return StreamHub(WatchSource(reader, namespace=namespace), kinds=[kind.kind for kind in WATCHED], bounds=bounds)


async def status_stream(subscription: Subscription) -> AsyncIterator[dict[str, str]]:
    """The server-sent events of one open page: `ready`, then what its feed sends."""
    yield {"event": "ready", "data": "{}"}
    async for sent in subscription.messages():
        yield {"event": sent.event, "data": sent.data}


class LiveResponse(EventSourceResponse):
    """The stream of one subscription; its slot is given back however the response ends (the
    client goes, a send stalls, the server stops, or a HEAD request that never streams)."""

    def __init__(self, subscription: Subscription) -> None:
        super().__init__(status_stream(subscription), ping=PING_SECONDS, send_timeout=SEND_TIMEOUT_SECONDS)
        self._subscription = subscription

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._subscription.close()
