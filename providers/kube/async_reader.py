"""AsyncReader: LIST and watch without a thread, over an httpx.AsyncClient of its own.

For a service that keeps many watches open at once (the dashboard's live status): each watch is
a coroutine on the event loop instead of a thread blocked on a socket, and the client's
connection pool is separate from the one the service's ordinary requests use (KubeClient), so
watches can never take the connections those requests need.

Bodies, errors and events are KubeClient's and WatchStream's (client.py, watch.py, errors.py):
a LIST follows `continue` tokens and lists again when one expired; a refusal raises the typed
KubeError carrying the server's Status, no answer a KubeConnectionError. Nothing here retries:
the caller lists and watches again and knows when.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx

from providers.kube.access import KubeAccess, httpx_params
from providers.kube.client import (
    DEFAULT_PAGE_SIZE,
    IMPERSONATE_GROUP,
    IMPERSONATE_USER,
    RELISTS,
    WATCH_READ_MARGIN_SECONDS,
    Collection,
    ExpiredContinue,
    ListPage,
    ResourceKind,
)
from providers.kube.errors import Gone, connection_error, error_for
from providers.kube.watch import TcpKeepalive, WatchEvent, event_of, set_keepalive


class AsyncWatchStream:
    """The events of one open watch, as WatchStream gives them, read without blocking a thread.

    Iterating raises the typed KubeError of an ERROR event (Gone for a resourceVersion the server
    no longer holds) and KubeConnectionError when the connection breaks; it ends without error
    when the server ends the watch. Cancelling the task that reads it ends it at once.
    """

    def __init__(self, response: httpx.Response, *, path: str, url: str, timeout: httpx.Timeout) -> None:
        self._response = response
        self._path = path
        self._url = url
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        try:
            async for line in self._response.aiter_lines():
                if line.strip():
                    yield event_of(line, path=self._path, url=self._url)
        except httpx.TransportError as error:
            raise connection_error(
                error, method="GET", path=self._path, url=self._url, timeout=self._timeout
            ) from error


class AsyncReader:
    """LIST and watch, as KubeClient does them, on an httpx.AsyncClient (see the module)."""

    def __init__(self, http: httpx.AsyncClient, *, impersonation: tuple[tuple[str, str], ...] = ()) -> None:
        self._http = http
        self._impersonation = impersonation

    def impersonating(self, user: str, groups: Sequence[str]) -> AsyncReader:
        """A reader on the same connection pool whose every request acts as `user` in `groups`."""
        headers = ((IMPERSONATE_USER, user), *((IMPERSONATE_GROUP, group) for group in groups))
        return AsyncReader(self._http, impersonation=headers)

    @property
    def server(self) -> str:
        return str(self._http.base_url).rstrip("/")

    async def aclose(self) -> None:
        """Close the connection pool (every reader made by `impersonating` shares it)."""
        await self._http.aclose()

    async def list_collection(
        self, kind: ResourceKind, *, namespace: str | None = None, page_size: int = DEFAULT_PAGE_SIZE
    ) -> Collection:
        """Every object of `kind` and the resourceVersion they were read at, as
        KubeClient.list_collection reads them (an expired `continue` token lists again from the
        first page, at most RELISTS times). Not retried."""
        for relist in range(RELISTS + 1):
            try:
                return await self._pages(kind, namespace=namespace, page_size=page_size)
            except ExpiredContinue as expired:
                if relist == RELISTS:
                    raise expired.gone from None
        raise AssertionError("unreachable")

    async def _pages(self, kind: ResourceKind, *, namespace: str | None, page_size: int) -> Collection:
        path = kind.collection_path(namespace)
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            params: dict[str, str | int] = {"limit": page_size, **({"continue": token} if token else {})}
            try:
                response = await self._http.get(path, params=params, headers=self._headers())
            except httpx.TransportError as error:
                raise connection_error(
                    error, method="GET", path=path, url=self.server, timeout=self._http.timeout
                ) from error
            if not response.is_success:
                refusal = error_for(response)
                if isinstance(refusal, Gone) and token is not None:
                    raise ExpiredContinue(refusal)
                raise refusal
            listed = ListPage.of(kind, response.json())
            items.extend(listed.items)
            token = listed.continue_token
            if not token:
                return Collection(items=items, resource_version=listed.resource_version)

    @asynccontextmanager
    async def watch(
        self,
        kind: ResourceKind,
        *,
        resource_version: str,
        namespace: str | None = None,
        timeout_seconds: int = 300,
        read_deadline_seconds: float | None = None,
        keepalive: TcpKeepalive | None = TcpKeepalive(),
    ) -> AsyncIterator[AsyncWatchStream]:
        """One watch of a collection from `resource_version` (exclusive), with bookmarks, as
        KubeClient.watch opens it: the server ends it after `timeout_seconds`; a read that waits
        longer than `read_deadline_seconds` (default: `timeout_seconds` plus
        WATCH_READ_MARGIN_SECONDS) raises KubeConnectionError (Timeout); `keepalive` is set on
        its socket. Not retried. The connection goes back to the pool on exit."""
        path = kind.collection_path(namespace)
        params: dict[str, str | int] = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
        }
        configured = self._http.timeout
        read = (
            read_deadline_seconds if read_deadline_seconds is not None else timeout_seconds + WATCH_READ_MARGIN_SECONDS
        )
        timeout = httpx.Timeout(connect=configured.connect, read=read, write=configured.write, pool=configured.pool)
        request = self._http.build_request("GET", path, params=params, headers=self._headers(), timeout=timeout)
        try:
            response = await self._http.send(request, stream=True)
        except httpx.TransportError as error:
            raise connection_error(error, method="GET", path=path, url=self.server, timeout=timeout) from error
        try:
            if not response.is_success:
                try:
                    await response.aread()
                except httpx.TransportError as error:
                    raise connection_error(error, method="GET", path=path, url=self.server, timeout=timeout) from error
                raise error_for(response)
            stream = response.extensions.get("network_stream")
            # The event loop's wrapper of the socket (asyncio's TransportSocket, uvloop's
            # PseudoSocket), not a socket.socket: it has setsockopt, which is all it needs.
            sock = stream.get_extra_info("socket") if stream is not None else None
            if keepalive is not None and sock is not None:
                set_keepalive(sock, keepalive)
            yield AsyncWatchStream(response, path=path, url=self.server, timeout=timeout)
        finally:
            await response.aclose()

    def _headers(self) -> list[tuple[str, str]]:
        return [("Accept", "application/json"), *self._impersonation]


def open_async_reader(access: KubeAccess, *, max_connections: int) -> AsyncReader:
    """A reader with its own pool of at most `max_connections` connections (kept alive between
    watches), configured as `access` says. Raises KubeConfigError. Close it with `aclose`, on
    the event loop that used it."""
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return AsyncReader(httpx.AsyncClient(**httpx_params(access), limits=limits))
