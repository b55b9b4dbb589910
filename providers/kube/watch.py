"""One open watch of a collection: the events the server streams, and a way to abort it.

The server answers a watch with one JSON object per line, `{"type": ..., "object": ...}`, until
it ends the watch (after the request's `timeoutSeconds`). Types: ADDED, MODIFIED, DELETED,
BOOKMARK (only the object's resourceVersion: where to resume) and ERROR (a Status; code 410
when the resourceVersion asked for is older than what the server keeps).

Nothing here retries: resuming, relisting and backing off belong to the caller, who knows the
last resourceVersion it saw.

A watch's connection is quiet for long stretches by design, so two bounds tell quiet from dead:
TCP keepalive (`TcpKeepalive`) on its socket finds a peer that vanished (a node or a NAT entry
gone: nothing answers the probes), and the read deadline the caller chooses (client.py) finds a
connection that stays up but delivers nothing.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpx

from providers.kube.errors import ConnectionFailure, KubeConnectionError, connection_error, error_for_status


@dataclass(frozen=True)
class TcpKeepalive:
    """TCP keepalive of a watch's socket: after `idle_seconds` without traffic, a probe every
    `interval_seconds`; `probes` unanswered ones close the connection. A dead peer is found within
    `bound_seconds`."""

    idle_seconds: int = 20
    interval_seconds: int = 10
    probes: int = 3

    def __post_init__(self) -> None:
        if min(self.idle_seconds, self.interval_seconds, self.probes) < 1:
            raise ValueError(f"TcpKeepalive needs positive numbers, not {self}")

    @property
    def bound_seconds(self) -> int:
        return self.idle_seconds + self.interval_seconds * self.probes


_KEEPALIVE_OPTIONS: tuple[tuple[str, str], ...] = (
    ("TCP_KEEPIDLE", "idle_seconds"),
    ("TCP_KEEPINTVL", "interval_seconds"),
    ("TCP_KEEPCNT", "probes"),
)


def set_keepalive(sock: socket.socket, keepalive: TcpKeepalive) -> None:
    """Turn TCP keepalive on for `sock` with `keepalive`'s timing (where the platform names it)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, attribute in _KEEPALIVE_OPTIONS:
        if hasattr(socket, option):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), getattr(keepalive, attribute))


def keepalive_of(sock: socket.socket) -> TcpKeepalive | None:
    """The keepalive in effect on `sock`; None when it is off."""
    if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE):
        return None
    named = [(option, attribute) for option, attribute in _KEEPALIVE_OPTIONS if hasattr(socket, option)]
    return TcpKeepalive(
        **{attribute: sock.getsockopt(socket.IPPROTO_TCP, getattr(socket, option)) for option, attribute in named}
    )


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


@dataclass(frozen=True)
class WatchEvent:
    type: EventType
    object: dict[str, Any]
    """The object as stored after the change (for DELETED: its last state; for BOOKMARK: only
    apiVersion, kind and metadata.resourceVersion)."""

    @property
    def resource_version(self) -> str | None:
        version = (self.object.get("metadata") or {}).get("resourceVersion")
        return str(version) if version else None


def event_of(line: str, *, path: str, url: str) -> WatchEvent:
    """The event of one line of a watch of `path` on the server at `url`. Raises the typed
    KubeError of an ERROR event, and KubeConnectionError (RemoteProtocolError) for a line that is
    not an event. Pure."""
    try:
        decoded = json.loads(line)
        event_type = EventType(decoded["type"])
        body = decoded.get("object")
    except (ValueError, KeyError, TypeError) as error:
        raise KubeConnectionError(
            method="GET",
            path=path,
            url=url,
            failure=ConnectionFailure.PROTOCOL_ERROR,
            cause=f"not a watch event: {line[:200]!r}",
        ) from error
    if event_type is EventType.ERROR:
        raise error_for_status(body, method="GET", path=path)
    if not isinstance(body, dict):
        raise KubeConnectionError(
            method="GET",
            path=path,
            url=url,
            failure=ConnectionFailure.PROTOCOL_ERROR,
            cause=f"a {event_type} event without an object",
        )
    return WatchEvent(type=event_type, object=body)


class WatchStream:
    """The events of one open watch, in the order the server sent them.

    Iterating raises the typed KubeError of an ERROR event (Gone for a resourceVersion the server
    no longer holds) and KubeConnectionError when the connection breaks; it ends without error
    when the server ends the watch, or after `abort()`.
    """

    def __init__(self, response: httpx.Response, *, path: str, url: str, timeout: httpx.Timeout) -> None:
        self._response = response
        self._path = path
        self._url = url
        self._timeout = timeout
        self._aborted = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        try:
            for line in self._response.iter_lines():
                if self._aborted.is_set():
                    return
                if line.strip():
                    yield self._event(line)
        except httpx.TransportError as error:
            if self._aborted.is_set():
                return
            raise connection_error(
                error, method="GET", path=self._path, url=self._url, timeout=self._timeout
            ) from error

    def _event(self, line: str) -> WatchEvent:
        return event_of(line, path=self._path, url=self._url)

    def raw_socket(self) -> socket.socket | None:
        """The connection's socket (None when the transport has none, as a test double)."""
        stream = self._response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        return sock if isinstance(sock, socket.socket) else None

    def keepalive(self) -> TcpKeepalive | None:
        """The TCP keepalive in effect on the connection; None when off or when there is no socket."""
        sock = self.raw_socket()
        return keepalive_of(sock) if sock is not None else None

    def abort(self) -> None:
        """End the watch from another thread: a read blocked on the connection returns at once.

        Closing a socket does not wake a thread blocked reading it; shutting it down does. The
        TLS layer is bypassed on purpose (its own shutdown would need the reading thread's lock).
        """
        self._aborted.set()
        sock = self.raw_socket()
        if sock is not None:
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: nothing is blocked on it
