"""The trigger's probes: `/healthz` (liveness) and `/readyz` (readiness), over plain HTTP.

- `/healthz`: 200 `ok` while no thread of the trigger failed and every watch heard from the
  API server within the liveness bound (`Timing.stale_seconds`, 120 s): an answer to its list,
  its watch opened, an event or a bookmark, the watch's end, a refusal. A hung watch is aborted
  at its read deadline (55 s) and answered again at once, so only a trigger that is stuck, or
  cut off from the API server for that long, fails it; the kubelet then restarts it.
- `/readyz`: 200 `ok` once every watch listed its collection once (a kind not served counts as
  listed) and while no watch is forbidden (403 several times in a row); a forbidden watch is
  named with the refused verb, the resource and the namespace.

Otherwise 503 with one line per problem; any other path 404. Both are cheap reads of the
trigger's state, pure functions of it (`health_report`, `readiness_report`).

Why the standard library's single-threaded HTTPServer in a thread of its own: the kubelet asks
two paths a few times a minute; one request at a time, each bounded by a socket timeout, is
all the serving needed, with no dependency.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Final, cast

from services.flags import ListenAddress
from services.reconcile_trigger.watcher import Refusal

LOGGER = logging.getLogger("magicstick.reconcile_trigger")
REQUEST_TIMEOUT_SECONDS: Final = 2.0
"""A client that sends nothing for this long is dropped, so it cannot hold the one serving thread."""


class ProbePath(StrEnum):
    HEALTHZ = "/healthz"
    READYZ = "/readyz"


@dataclass(frozen=True)
class ProbeReport:
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def body(self) -> str:
        return "ok\n" if self.ok else "".join(f"{problem}\n" for problem in self.problems)


@dataclass(frozen=True)
class WatchHealth:
    """What the probes read of one watch."""

    target: str
    listed: bool
    heard_at: float
    """time.monotonic of the last answer of the API server to this watch."""
    forbidden: Refusal | None


def health_report(*, failed: bool, watches: Sequence[WatchHealth], now: float, stale_seconds: float) -> ProbeReport:
    """Healthy: no thread failed, every watch heard from the server within `stale_seconds`. Pure."""
    problems = ["a thread of the trigger failed"] if failed else []
    problems += [
        f"watch {w.target}: nothing heard from the API server for {now - w.heard_at:.0f} s (bound {stale_seconds:g} s)"
        for w in watches
        if now - w.heard_at > stale_seconds
    ]
    return ProbeReport(tuple(problems))


def readiness_report(*, watches: Sequence[WatchHealth]) -> ProbeReport:
    """Ready: every watch listed once and none is forbidden; a watch is named once, for its
    refusal if it has one. Pure."""
    problems = [
        w.forbidden.describe() if w.forbidden is not None else f"watch {w.target}: not listed yet"
        for w in watches
        if w.forbidden is not None or not w.listed
    ]
    return ProbeReport(tuple(problems))


class ProbeServer(HTTPServer):
    """Serves `reports` (one per ProbePath) on `listen`, from `start()` to `stop()`."""

    def __init__(self, *, listen: ListenAddress, reports: Mapping[ProbePath, Callable[[], ProbeReport]]) -> None:
        self.address_family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
        self.reports = dict(reports)
        self._thread: threading.Thread | None = None
        super().__init__((listen.host, listen.port), _ProbeHandler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup of the listen address."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    @property
    def address(self) -> ListenAddress:
        host, port = self.server_address[:2]
        return ListenAddress(str(host), int(port))

    def start(self) -> ProbeServer:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.2}, name="probes", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
        self.server_close()


class _ProbeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server_version = "magicstick-reconcile-trigger"
    timeout = REQUEST_TIMEOUT_SECONDS

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        report = (
            cast(ProbeServer, self.server).reports.get(ProbePath(self.path)) if self.path in tuple(ProbePath) else None
        )
        if report is None:
            status, text = HTTPStatus.NOT_FOUND, f"no such path; try {', '.join(ProbePath)}\n"
        else:
            result = report()
            status, text = (HTTPStatus.OK if result.ok else HTTPStatus.SERVICE_UNAVAILABLE), result.body()
        content = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if body:
            self.wfile.write(content)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the http.server signature
        LOGGER.debug("probe: " + format, *args)
