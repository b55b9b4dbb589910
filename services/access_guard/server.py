"""The HTTP side: Envoy's HTTP external-authorization contract over HTTP/1.1 keep-alive.

Envoy sends a check request with the original method, the path prefixed by the guard's path
(`/instances/<namespace>/<instance>`), the headers it is told to forward and no body. Envoy
admits the original request only on 200, adding the allowed headers of the answer upstream;
any other answer goes back to the client as it is.

Why the standard library's `ThreadingHTTPServer`: a decision costs well under a millisecond
of CPU (a stat, a dictionary lookup, one signature check with a cached key), Envoy keeps a
few long-lived connections to the guard, and a thread per connection serves that with no
dependency to keep up to date. Two details make it fast enough: Nagle's algorithm is off
(`disable_nagle_algorithm`), and each answer is written in one `send`, so no answer waits for
a delayed ACK.
"""

from __future__ import annotations

import logging
import socket
import socketserver
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

from services.access_guard.decision import Decision, Guard
from services.access_guard.settings import Listen

LOGGER = logging.getLogger("services.access_guard")
HEALTH_PATH = "/healthz"
IDLE_TIMEOUT_SECONDS = 120.0
"""An idle keep-alive connection is closed after this; Envoy opens a new one when needed."""
MAX_DISCARDED_BODY_BYTES = 64 * 1024
_BODIES = {200: b"allowed\n", 401: b"unauthenticated\n", 403: b"forbidden\n"}
_LOGGED_PATH_CHARACTERS = 256


class GuardServer(ThreadingHTTPServer):
    """A thread per connection; the guard and the token header are shared by every handler."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self, *, listen: Listen, guard: Guard, token_header: str, grants_dir: Path) -> None:
        self.address_family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
        self.guard = guard
        self.token_header = token_header
        self.grants_dir = grants_dir
        super().__init__((listen.host, listen.port), GuardHandler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup of the listen address."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)


class GuardHandler(BaseHTTPRequestHandler):
    """Answers any method: `GET /healthz`, else one decision per request."""

    protocol_version = "HTTP/1.1"
    server_version = "magicstick-access-guard"
    disable_nagle_algorithm = True
    timeout = IDLE_TIMEOUT_SECONDS

    def __getattr__(self, name: str) -> Callable[[], None]:
        if name.startswith("do_"):
            return self._answer
        raise AttributeError(name)

    @property
    def _server(self) -> GuardServer:
        return cast(GuardServer, self.server)

    def _answer(self) -> None:
        self._discard_body()
        if self.path == HEALTH_PATH and self.command in ("GET", "HEAD"):
            healthy = self._server.grants_dir.is_dir()
            self._send(200 if healthy else 503, (), b"ok\n" if healthy else b"grants directory missing\n")
            return
        tokens = self.headers.get_all(self._server.token_header) or []
        decision = self._server.guard.decide(path=self.path, tokens=tokens)
        self._log(decision)
        self._send(decision.status, decision.headers, _BODIES.get(decision.status, b""))

    def _discard_body(self) -> None:
        """Read a body Envoy should not send, so the next request on the connection parses."""
        if self.headers.get("Transfer-Encoding") is not None:
            self.close_connection = True
            return
        length = self.headers.get("Content-Length")
        if length is None:
            return
        if not length.isdigit() or int(length) > MAX_DISCARDED_BODY_BYTES:
            self.close_connection = True
            return
        remaining = int(length)
        while remaining:
            chunk = self.rfile.read(min(remaining, 16 * 1024))
            if not chunk:
                self.close_connection = True
                return
            remaining -= len(chunk)

    def _send(self, status: int, headers: tuple[tuple[str, str], ...], body: bytes) -> None:
        lines = [
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
            "Content-Type: text/plain; charset=utf-8",
            f"Content-Length: {len(body)}",
            "Cache-Control: no-store",
        ]
        if self.close_connection:
            lines.append("Connection: close")
        lines.extend(f"{name}: {value}" for name, value in headers)
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
        self.wfile.write(head if self.command == "HEAD" else head + body)

    def _log(self, decision: Decision) -> None:
        level = logging.DEBUG if decision.allowed else logging.INFO
        if not LOGGER.isEnabledFor(level):
            return
        path = self.path.partition("?")[0][:_LOGGED_PATH_CHARACTERS]
        LOGGER.log(
            level,
            "%s status=%d reason=%s instance=%s subject=%s method=%s path=%r detail=%r",
            "allow" if decision.allowed else "deny",
            decision.status,
            decision.reason,
            decision.instance or "-",
            decision.subject or "-",
            self.command,
            path,
            decision.detail,
        )

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        LOGGER.debug("http: " + format, *args)
