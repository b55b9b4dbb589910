"""One open watch of a collection: the events the server streams, and a way to abort it.

The server answers a watch with one JSON object per line, `{"type": ..., "object": ...}`, until
it ends the watch (after the request's `timeoutSeconds`). Types: ADDED, MODIFIED, DELETED,
BOOKMARK (only the object's resourceVersion: where to resume) and ERROR (a Status; code 410
when the resourceVersion asked for is older than what the server keeps).

Nothing here retries: resuming, relisting and backing off belong to the caller, who knows the
last resourceVersion it saw.
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
            raise connection_error(error, method="GET", path=self._path, url=self._url, timeout=self._timeout) from error

    def _event(self, line: str) -> WatchEvent:
        try:
            decoded = json.loads(line)
            event_type = EventType(decoded["type"])
            body = decoded.get("object")
        except (ValueError, KeyError, TypeError) as error:
            raise KubeConnectionError(
                method="GET", path=self._path, url=self._url, failure=ConnectionFailure.PROTOCOL_ERROR, cause=f"not a watch event: {line[:200]!r}"
            ) from error
        if event_type is EventType.ERROR:
            raise error_for_status(body, method="GET", path=self._path)
        if not isinstance(body, dict):
            raise KubeConnectionError(
                method="GET", path=self._path, url=self._url, failure=ConnectionFailure.PROTOCOL_ERROR, cause=f"a {event_type} event without an object"
            )
        return WatchEvent(type=event_type, object=body)

    def abort(self) -> None:
        """End the watch from another thread: a read blocked on the connection returns at once.

        Closing a socket does not wake a thread blocked reading it; shutting it down does. The
        TLS layer is bypassed on purpose (its own shutdown would need the reading thread's lock).
        """
        self._aborted.set()
        stream = self._response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: nothing is blocked on it
