"""Live status for an open page: the API server's watches, streamed as server-sent events.

One stream per open page, as its user (cluster.RuntimeRequests):

- it first sends the summary (summaries.Summary) of every object of the watched kinds, so a
  change between the page's render and the stream's start is not missed, then one event per
  change, from a watch of each kind started at the resourceVersion of that first LIST;
- a watch that ends (the server's timeout) is resumed from the last resourceVersion seen; one
  whose resourceVersion expired (410 Gone) lists again and sends every summary again;
- a kind the user may not list is not watched (the page shows nothing of it anyway); an API
  failure is sent as an `unavailable` event and the watch is tried again after RETRY_SECONDS
  (a LIST then a watch, so nothing is missed), and a `resumed` event once it works again;
- a watch runs on its own thread (the client blocks); when the page goes, the threads stop at
  their next event or at the end of their watch, WATCH_SECONDS at most.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

from providers.kinds import APP_INSTANCE, APPLIANCE, HOST_OPERATION, MODEL_ACTIVATION, MODULE_ACTIVATION
from providers.kube import EventType, Forbidden, Gone, KubeError, ResourceKind
from services.dashboard.cluster import RuntimeRequests
from services.dashboard.summaries import summary_of

WATCHED: tuple[ResourceKind, ...] = (MODEL_ACTIVATION, APP_INSTANCE, MODULE_ACTIVATION, HOST_OPERATION, APPLIANCE)
WATCH_SECONDS = 30
RETRY_SECONDS = 1.0
QUEUE_LIMIT = 10_000
LOGGER = logging.getLogger("services.dashboard.live")


class _Follower:
    """One kind's LIST then watch, on a thread, into the stream's queue."""

    def __init__(self, requests: RuntimeRequests, kind: ResourceKind, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[dict[str, Any]], stopped: threading.Event) -> None:
        self._requests = requests
        self._kind = kind
        self._loop = loop
        self._queue = queue
        self._stopped = stopped

    def _send(self, message: dict[str, Any]) -> None:
        if not self._stopped.is_set():
            self._loop.call_soon_threadsafe(self._put, message)

    def _put(self, message: dict[str, Any]) -> None:
        if self._queue.qsize() < QUEUE_LIMIT:
            self._queue.put_nowait(message)

    def _listed(self) -> str:
        collection = self._requests.list(self._kind)
        for item in collection.items:
            self._send({"event": "status", "data": summary_of(item).to_wire()})
        return collection.resource_version

    def run(self) -> None:
        resource_version: str | None = None
        failed = False
        while not self._stopped.is_set():
            try:
                if resource_version is None:
                    resource_version = self._listed()
                    if failed:
                        self._send({"event": "resumed", "data": {"kind": self._kind.kind}})
                        failed = False
                with self._requests.watch(self._kind, resource_version=resource_version, timeout_seconds=WATCH_SECONDS) as stream:
                    for event in stream:
                        if self._stopped.is_set():
                            return
                        resource_version = event.resource_version or resource_version
                        if event.type is EventType.BOOKMARK:
                            continue
                        data = summary_of(event.object).to_wire()
                        data["deleted"] = event.type is EventType.DELETED
                        self._send({"event": "status", "data": data})
            except Forbidden:
                return
            except Gone:
                resource_version = None
            except KubeError as error:
                LOGGER.warning("watch of %s failed: %s", self._kind.plural, error)
                self._send({"event": "unavailable", "data": {"kind": self._kind.kind, "message": error.detail}})
                resource_version = None
                failed = True
                self._stopped.wait(RETRY_SECONDS)


async def status_stream(requests: RuntimeRequests) -> AsyncIterator[dict[str, str]]:
    """The server-sent events of one open page (module docstring). Ends when the client goes."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    stopped = threading.Event()
    threads = [
        threading.Thread(target=_Follower(requests, kind, loop, queue, stopped).run, name=f"live-{kind.plural}", daemon=True)
        for kind in WATCHED
    ]
    for thread in threads:
        thread.start()
    try:
        yield {"event": "ready", "data": "{}"}
        while True:
            message = await queue.get()
            yield {"event": message["event"], "data": json.dumps(message["data"], separators=(",", ":"))}
    finally:
        stopped.set()
