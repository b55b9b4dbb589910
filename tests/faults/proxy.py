"""A fault-injecting HTTPS proxy in front of the test API server.

The proxy terminates TLS with its own self-signed certificate on 127.0.0.1 and forwards each
request to the API server unchanged (method, path, query, body, and the client's own
`Authorization`: the caller's identity is the one its kubeconfig names). A `Fault` plan decides
which requests are not simply forwarded:

- `Answer(code, retry_after, status)`: answer with that status and a Kubernetes `Status` body,
  never forwarding (429 with Retry-After, 500, 503, a synthetic 409); `status` replaces the
  generic body with one of the exact Statuses the API server sends (`too_large_resource_version`,
  `forbidden`; tests/faults/test_proxy_statuses.py holds them to the real server's);
- `WatchError(status)`: answer a watch 200, then one ERROR event carrying `status`, then end
  the stream, as the API server reports a failure it finds once the watch has begun;
- `Stall()`: forward, pass the server's status line and headers on (the watch is open), then
  nothing more, keeping the connection until the client gives up: a watch that hangs silently;
- `Reset(stage)`: reset the connection before forwarding (the request is lost), or after the
  server answered (the answer is lost, the change landed); or close it halfway through the
  answer body (a truncated answer). Over TLS a client reads a reset as the server
  disconnecting without an answer;
- `Hold(after_forward)`: answer nothing until the client gives up at its own read timeout and
  closes the connection, then drop it (optionally after forwarding: the change landed);
- `Interleave(action)`: run `action` first (another writer's change), then forward.

A fault applies to the n-th request whose method and path match it (`on`, 1-based; None for
every one). Every request is recorded as an `Exchange`, so tests count attempts per
(method, path) and read every stored version a write returned.

Rules: the plan is deterministic (counts, not chances); nothing here sleeps: a hold waits on
the client's socket, bounded by HOLD_BOUND and by the proxy's exit. Whatever goes wrong in the
proxy itself (not a client hanging up) is kept in `errors`, for the fixture to assert empty.
"""

from __future__ import annotations

import io
import json
import re
import select
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
import yaml

HOLD_BOUND: Final = 30.0
"""The longest a held request waits for its client to give up."""
FORWARDED_HEADERS: Final = ("authorization", "content-type", "accept", "user-agent")
_REASONS: Final = {
    403: "Forbidden", 404: "NotFound", 409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests",
    500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}  # fmt: skip


@dataclass(frozen=True)
class Answer:
    """Answer `code` with a Kubernetes Status body (and a Retry-After header when given): `status`
    when given, else a generic one."""

    code: int
    retry_after: str | None = None
    status: dict[str, Any] | None = None


@dataclass(frozen=True)
class WatchError:
    """Answer 200 and one ERROR event whose object is `status`, then end the stream."""

    status: dict[str, Any]


@dataclass(frozen=True)
class Stall:
    """Forward; pass on the server's status line and headers, then nothing until the client hangs up."""


class ResetStage(Enum):
    BEFORE_FORWARD = "before the request reached the server"
    AFTER_FORWARD = "after the server answered, before the answer reached the client"
    MID_BODY = "halfway through the answer body"


@dataclass(frozen=True)
class Reset:
    stage: ResetStage = ResetStage.BEFORE_FORWARD


@dataclass(frozen=True)
class Hold:
    """Answer nothing until the client hangs up; with after_forward, the server got the request."""

    after_forward: bool = False


@dataclass(frozen=True)
class Interleave:
    """Run `action` (another writer's change, straight to the server), then forward the request."""

    action: Callable[[], None]


Action = Answer | WatchError | Stall | Reset | Hold | Interleave


@dataclass(frozen=True)
class Fault:
    """`action` for the `on`-th requests (1-based; None: all) matching `method` and the `path` regex."""

    method: str
    path: str
    action: Action
    on: tuple[int, ...] | None = (1,)

    def matches(self, method: str, path: str) -> bool:
        return method == self.method and re.fullmatch(self.path, path) is not None


@dataclass(frozen=True)
class Exchange:
    """One request the proxy received and what it did with it."""

    method: str
    path: str
    query: str
    action: Action | None
    received: int | None
    """The status the client received; None when no whole answer reached it."""
    upstream: int | None
    """The status the API server answered; None when the request was not forwarded."""
    body: bytes = b""
    """The server's answer to a forwarded write (not kept for reads)."""
    at: float = field(default_factory=time.monotonic)
    """When the proxy received the request (time.monotonic)."""


class FaultProxy:
    """Start with `with FaultProxy(...) as proxy:`; `proxy.url` is the server for the client."""

    def __init__(self, *, upstream: str, upstream_tls: ssl.SSLContext, cert_file: Path, key_file: Path) -> None:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert_file, key_file)
        self._server = _Server(self, tls)
        self._upstream = httpx.Client(base_url=upstream, verify=upstream_tls, timeout=30.0)
        self._lock = threading.Lock()
        self._plan: tuple[Fault, ...] = ()
        self._seen: list[int] = []
        self.exchanges: list[Exchange] = []
        self.errors: list[BaseException] = []
        self.stopping = threading.Event()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def plan(self, *faults: Fault) -> None:
        """Replace the fault plan; occurrences count from zero again, the record is kept."""
        with self._lock:
            self._plan, self._seen = faults, [0] * len(faults)

    def count(self, method: str, path: str) -> int:
        """Requests received whose method is `method` and whose path fully matches the regex `path`."""
        return sum(1 for e in self.exchanges if e.method == method and re.fullmatch(path, e.path))

    def written(self, path: str) -> list[dict[str, Any]]:
        """Every object a successful write to `path` returned, in order: the versions it stored."""
        return [
            json.loads(e.body)
            for e in self.exchanges
            if e.method != "GET" and e.path == path and e.upstream in (200, 201)
        ]

    def __enter__(self) -> FaultProxy:
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fault-proxy", daemon=True
        ).start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._upstream.close()

    def _choose(self, method: str, path: str) -> Action | None:
        chosen = None
        with self._lock:
            for index, fault in enumerate(self._plan):
                if fault.matches(method, path):
                    self._seen[index] += 1
                    if chosen is None and (fault.on is None or self._seen[index] in fault.on):
                        chosen = fault.action
        return chosen

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, proxy: FaultProxy, tls: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.proxy = proxy
        self.tls = tls

    def finish_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # headers and body go out as written
        try:
            connection = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        with connection:
            _Handler(connection, client_address, self)

    def handle_error(self, request: object, client_address: object) -> None:
        error = sys.exc_info()[1]
        if error is not None and not isinstance(error, (ConnectionError, ssl.SSLError)):
            self.proxy.errors.append(error)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self._relay()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET  # noqa: N815

    def log_message(self, *_: object) -> None:
        return None

    def _relay(self) -> None:
        path = urlsplit(self.path).path
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        action = self.server.proxy._choose(self.command, path)
        if isinstance(action, Answer):
            self._record(path, action, received=action.code)
            body_sent = (
                json.dumps(action.status).encode()
                if action.status is not None
                else _status_body(action.code, self.command, path)
            )
            self._send(action.code, body_sent, retry_after=action.retry_after)
        elif isinstance(action, WatchError):
            self._record(path, action, received=200)
            self._start_chunks(200, "application/json")
            self._chunk(json.dumps({"type": "ERROR", "object": action.status}).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
        elif isinstance(action, Stall):
            self._stall(path, action, body)
        elif isinstance(action, Reset) and action.stage is ResetStage.BEFORE_FORWARD:
            self._record(path, action)
            self._reset()
        elif isinstance(action, Hold) and not action.after_forward:
            self._record(path, action)
            self._hold()
        else:
            if isinstance(action, Interleave):
                action.action()
            answer = self._forward(body)
            delivered = not isinstance(action, (Reset, Hold))
            kept = answer.content if self.command != "GET" else b""
            self._record(
                path, action, received=answer.status_code if delivered else None, upstream=answer.status_code, body=kept
            )
            if isinstance(action, Hold):
                self._hold()
            elif isinstance(action, Reset) and action.stage is ResetStage.AFTER_FORWARD:
                self._reset()
            else:
                content_type = answer.headers.get("content-type")
                self._send(answer.status_code, answer.content, content_type=content_type, cut=isinstance(action, Reset))

    def _record(
        self,
        path: str,
        action: Action | None,
        *,
        received: int | None = None,
        upstream: int | None = None,
        body: bytes = b"",
    ) -> None:
        """Kept before the client sees anything, so a count never lags the client's attempts."""
        self.server.proxy._record(
            Exchange(self.command, path, urlsplit(self.path).query, action, received, upstream, body)
        )

    def _forward(self, body: bytes) -> httpx.Response:
        headers = {k: v for k, v in self.headers.items() if k.lower() in FORWARDED_HEADERS}
        return self.server.proxy._upstream.request(self.command, self.path, headers=headers, content=body or None)

    def _send(
        self,
        code: int,
        body: bytes,
        *,
        content_type: str | None = "application/json",
        retry_after: str | None = None,
        cut: bool = False,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type or "application/json")
        self.send_header("Content-Length", str(len(body)))
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        if not cut:
            self.wfile.write(body)
            return
        self.wfile.write(body[: len(body) // 2])
        self.connection.shutdown(socket.SHUT_RDWR)  # a plain close: a reset would discard what was sent
        self.close_connection = True

    def _start_chunks(self, code: int, content_type: str) -> None:
        """The status line and headers of a streamed answer, as the API server sends a watch's."""
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _stall(self, path: str, action: Stall, body: bytes) -> None:
        headers = {k: v for k, v in self.headers.items() if k.lower() in FORWARDED_HEADERS}
        upstream = self.server.proxy._upstream
        answer = upstream.send(
            upstream.build_request(self.command, self.path, headers=headers, content=body or None), stream=True
        )
        try:
            self._record(path, action, received=answer.status_code, upstream=answer.status_code)
            self._start_chunks(answer.status_code, answer.headers.get("content-type") or "application/json")
        finally:
            answer.close()
        self._hold()

    def _reset(self) -> None:
        """Close with SO_LINGER 0: the kernel sends RST instead of FIN."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()  # the socket closes only once no file made from it is open
        self.connection.close()
        self.wfile = io.BytesIO()  # what http.server still flushes goes nowhere
        self.close_connection = True

    def _hold(self) -> None:
        """Wait until the client closes the connection (its timeout), bounded; then drop it."""
        deadline = time.monotonic() + HOLD_BOUND
        while not self.server.proxy.stopping.is_set() and time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable:
                try:
                    if not self.connection.recv(1):
                        break
                except (OSError, ssl.SSLError):
                    break
        self._reset()


def _status_body(code: int, method: str, path: str) -> bytes:
    reason = _REASONS.get(code, "InternalError")
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"fault injected by the test proxy into {method} {path}",
        "reason": reason,
        "code": code,
    }
    return json.dumps(status).encode()


def too_large_resource_version(*, requested: int, current: int) -> dict[str, Any]:
    """The Status a kube-apiserver answers for a resourceVersion newer than its cache holds
    (storage.NewTooLargeResourceVersionError: 504 Timeout, cause ResourceVersionTooLarge; it comes
    with `Retry-After: 1`)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"Timeout: Too large resource version: {requested}, current: {current}",
        "reason": "Timeout",
        "details": {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
        "code": 504,
    }


def forbidden(*, user: str, verb: str, plural: str, group: str, namespace: str) -> dict[str, Any]:
    """The Status a kube-apiserver answers when RBAC refuses `verb` on a namespaced collection."""
    resource = f"{plural}.{group}" if group else plural
    details = {"group": group, "kind": plural} if group else {"kind": plural}
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": (
            f'{resource} is forbidden: User "{user}" cannot {verb} resource "{plural}" in API group "{group}" in the namespace "{namespace}"'
        ),
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (PEM files in `directory`), made by the openssl CLI."""
    cert, key = directory / "proxy.crt", directory / "proxy.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=magicstick-fault-proxy", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True, stdin=subprocess.DEVNULL, capture_output=True,
    )  # fmt: skip
    return cert, key


def write_kubeconfig(path: Path, *, server: str, ca_file: Path, user: str, token: str) -> Path:
    """A kubeconfig naming `server`, trusting `ca_file`, authenticating as `user` with `token`."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fault-proxy", "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "fault-proxy", "user": user}}],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    path.chmod(0o600)
    return path
