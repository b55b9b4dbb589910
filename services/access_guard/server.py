"""The HTTP side: uvicorn (httptools parser, uvloop event loop) serving `app.GuardApp`, bounded.

Why this server. The guard used to be the standard library's ThreadingHTTPServer: a thread
per connection, so 8,000 half-open connections made 8,001 threads and 249 MB of memory, and
closing them stalled it for minutes. One event loop holds a connection for a few kilobytes
and no thread, so memory follows the connection limit and not the attacker. uvicorn is a
maintained HTTP/1.1 server for exactly that (keep-alive, pipelining, body flow control,
graceful shutdown), and the guard needs no framework on top: `GuardApp` is a bare ASGI
callable. httptools (llhttp, Node.js's parser) parses requests, and uvloop (libuv) runs the
loop: both several times faster than their pure-Python counterparts (h11, asyncio's loop), and
a decision costs less than the HTTP around it, so they set the guard's latency.

What uvicorn does not bound by itself, and this module adds to its HTTP protocol:

- **A connection limit** (`--max-connections`). A connection beyond it is answered 503 with
  `Connection: close` and closed as soon as it is accepted, before anything is read, so it
  costs neither memory nor a parse. Connections already open (Envoy's pool) keep being served.
- **A request deadline** (`--request-timeout-seconds`). uvicorn arms its keep-alive timeout only
  after an answer, so a connection that sends nothing, or a request head or body dribbled a byte
  at a time, would be kept forever. Here a new connection must deliver its whole first request
  (head and body) within the deadline, and every later request within the deadline from its
  first byte; otherwise the connection is closed.
- **A short idle timeout** (`--idle-timeout-seconds`, uvicorn's keep-alive timeout) for a
  connection between requests; it sheds a client that parks connections. Each SecurityPolicy
  tells Envoy to close its own idle connections to the guard sooner (15 s,
  planning/instances/access.py), so Envoy never sends a check on a connection the guard is
  closing at that moment.
- **A bounded drain.** SIGTERM (or SIGINT) stops accepting, closes idle connections, lets
  answers in progress finish and then closes their connections, and after `--drain-seconds`
  closes what is left; the process then exits 0, within the Pod's grace period.
- **Shedding in the log.** Connections refused and requests answered 503 are counted and
  reported in one WARNING line a second at most, never a line each.

Queues stay bounded: each connection has at most one request in progress (a pipelined request
waits, unread, until the previous answer is written), the connections are bounded, and the
token verifications that may wait for a key set fetch are bounded by `--verify-queue`
(verification.CachingVerifier).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from services.access_guard.app import OVERLOADED_BODY, GuardApp
from services.access_guard.settings import ServerLimits
from services.flags import ListenAddress

LOGGER = logging.getLogger("services.access_guard")
BACKLOG = 2048
"""Connections the kernel completes before the guard accepts them; the guard accepts eagerly."""
SHEDDING_REPORT_SECONDS = 1.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: %d\r\n"
    b"Cache-Control: no-store\r\n"
    b"Connection: close\r\n"
    b"\r\n"
    b"%s"
) % (len(OVERLOADED_BODY), OVERLOADED_BODY)
"""The whole answer to a connection beyond the limit, written before its request is read."""


class Shedding:
    """What the limits turned away, reported in at most one WARNING line per SHEDDING_REPORT_SECONDS.

    The first event is reported at once; what follows within the interval is summed into the
    next line. Event loop thread only.
    """

    def __init__(self, *, limits: ServerLimits) -> None:
        self._limits = limits
        self._refused_connections = 0
        self._overloaded_requests = 0
        self._report: asyncio.TimerHandle | None = None

    def refused_connection(self) -> None:
        self._refused_connections += 1
        self._noted()

    def overloaded_request(self) -> None:
        self._overloaded_requests += 1
        self._noted()

    def _noted(self) -> None:
        if self._report is None:
            self._reported()

    def _reported(self) -> None:
        self._report = None
        if not self._refused_connections and not self._overloaded_requests:
            return
        LOGGER.warning(
            "overloaded: refused %d connections beyond --max-connections=%d and answered %d requests 503 beyond --verify-queue=%d",
            self._refused_connections,
            self._limits.max_connections,
            self._overloaded_requests,
            self._limits.verify_queue,
        )
        self._refused_connections = self._overloaded_requests = 0
        self._report = asyncio.get_running_loop().call_later(SHEDDING_REPORT_SECONDS, self._reported)


def bind(listen: ListenAddress) -> socket.socket:
    """A listening socket on `listen`; raises OSError when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((listen.host, listen.port))
        listener.listen(BACKLOG)
    except OSError:
        listener.close()
        raise
    return listener


class Admission:
    """Whether a new connection is served: below the limit, and not once the drain began. Event loop thread only."""

    def __init__(self, *, limits: ServerLimits, shedding: Shedding) -> None:
        self.limits = limits
        self.shedding = shedding
        self.draining = False

    def admits(self, *, open_connections: int) -> bool:
        if self.draining:
            return False
        if open_connections >= self.limits.max_connections:
            self.shedding.refused_connection()
            return False
        return True


def protocol_class(admission: Admission) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with the connection limit and the request deadline."""
    request_timeout = admission.limits.request_timeout_seconds

    class GuardProtocol(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._deadline: asyncio.TimerHandle | None = None
            self._refused = False

        # uvicorn's protocol narrows asyncio's BaseTransport to Transport (and ignores it too).
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if not admission.admits(open_connections=len(self.connections)):
                self._refused = True
                self.transport = transport
                transport.write(REFUSAL)
                transport.close()
                return
            super().connection_made(transport)
            self._arm_deadline()

        def data_received(self, data: bytes) -> None:
            if not self._refused:
                super().data_received(data)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._deadline is None:
                self._arm_deadline()

        def on_message_complete(self) -> None:
            self._disarm_deadline()
            super().on_message_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_deadline()
            super().connection_lost(exc)

        def _arm_deadline(self) -> None:
            self._deadline = self.loop.call_later(request_timeout, self._request_timed_out)

        def _disarm_deadline(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _request_timed_out(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

    return GuardProtocol


class GuardServer(uvicorn.Server):
    """uvicorn's server with the guard's signals, readiness and bounded drain."""

    def __init__(self, config: uvicorn.Config, *, admission: Admission, ready: Callable[[], object]) -> None:
        super().__init__(config)
        self._admission = admission
        self._drain_seconds = admission.limits.drain_seconds
        self._ready = ready
        self._signal: int | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Like uvicorn's, without raising the signal again afterwards: a drained guard exits 0."""
        previous = {number: signal.signal(number, self.handle_exit) for number in STOP_SIGNALS}
        try:
            yield
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:
            self.force_exit = True
        self._signal = sig
        self.should_exit = True

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._ready()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        LOGGER.info("stopping on signal %s; answers in progress get at most %g s", self._signal, self._drain_seconds)
        # A connection accepted but not yet made would otherwise escape the shutdown of the open ones.
        self._admission.draining = True
        try:
            await asyncio.wait_for(super().shutdown(sockets), timeout=self._drain_seconds)
        except TimeoutError:
            left = list(self.server_state.connections)
            LOGGER.warning(
                "drain bound of %g s reached: closing %d connections with answers in progress",
                self._drain_seconds,
                len(left),
            )
            for connection in left:
                connection.transport.close()


def serve(listener: socket.socket, *, app: GuardApp, admission: Admission, ready: Callable[[], object]) -> None:
    """Serve `app` on `listener` until SIGTERM or SIGINT, then drain (bounded) and return."""
    config = uvicorn.Config(
        app,
        loop="uvloop",
        http=protocol_class(admission),
        ws="none",
        lifespan="off",
        interface="asgi3",
        log_config=None,
        access_log=False,
        proxy_headers=False,
        server_header=False,
        # uvicorn annotates int but takes any number of seconds (it hands it to loop.call_later).
        timeout_keep_alive=admission.limits.idle_timeout_seconds,  # type: ignore[arg-type]
        backlog=BACKLOG,
    )
    GuardServer(config, admission=admission, ready=ready).run(sockets=[listener])
