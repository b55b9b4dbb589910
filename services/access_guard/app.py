"""The guard as an ASGI callable: one check request in, one answer out, one log line per decision.

Envoy sends a check request with the original method, the path prefixed by the guard's path
(`/instances/<namespace>/<instance>`), the headers it is told to forward and no body. Envoy
admits the original request only on 200, adding the allowed headers of the answer upstream;
any other answer goes back to the client as it is.

- The decision is taken on the request target as sent (raw path and query, no percent-decoding),
  so `%2F` or `%2e%2e` never moves a request to another instance.
- `GET /healthz` (or HEAD) answers 200 `ok` while the grants directory exists, followed by one
  line per grant file the guard cannot use (grants.GrantStore.problems); 503 without the directory.
- A body Envoy should not send is read and dropped when it is at most 64 KiB with a
  Content-Length, so the next request on the connection parses; a chunked or larger one is not
  read, and the answer closes the connection (`Connection: close`).
- Every answer says `Cache-Control: no-store`. Allows are logged at debug, denials at info with
  the reason; 503s for overload are counted instead (server.Shedding) so that a flood does not
  add a log line to every request it sheds. The token is never logged.

Event loop thread only: nothing here blocks (the grant lookup is one stat of a local file;
token verification that may wait goes to verification.CachingVerifier's pool).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any, TypeAlias

from services.access_guard.decision import Decision, Guard, Reason
from services.access_guard.grants import GrantStore

LOGGER = logging.getLogger("services.access_guard")
HEALTH_PATH = "/healthz"
MAX_DISCARDED_BODY_BYTES = 64 * 1024
MAX_REPORTED_PROBLEM_CHARACTERS = 300
OVERLOADED_BODY = b"overloaded, try again\n"
_BODIES = {401: b"unauthenticated\n", 403: b"forbidden\n", 503: OVERLOADED_BODY}
"""What a denied client reads (Envoy passes a denial on as it is). An allow has no body: Envoy
drops it anyway, and without one uvicorn writes the whole answer in one send."""
_LOGGED_PATH_CHARACTERS = 256
_COMMON_HEADERS = ((b"content-type", b"text/plain; charset=utf-8"), (b"cache-control", b"no-store"))
_CLOSE = (b"connection", b"close")

Scope: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Mapping[str, Any]]]
Send: TypeAlias = Callable[[Mapping[str, Any]], Awaitable[None]]


class GuardApp:
    """The ASGI 3 application; `overloaded` is told of every 503 the decision gives."""

    def __init__(
        self, *, guard: Guard, grants: GrantStore, grants_dir: Path, token_header: str, overloaded: Callable[[], None]
    ) -> None:
        self._guard = guard
        self._grants = grants
        self._grants_dir = grants_dir
        self._token_header = token_header.lower().encode("latin-1")
        self._overloaded = overloaded

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method: str = scope["method"]
        target = _target(scope)
        tokens: list[str] = []
        length: bytes | None = None
        chunked = False
        for name, value in scope["headers"]:
            if name == self._token_header:
                tokens.append(value.decode("latin-1"))
            elif name == b"content-length":
                length = value
            elif name == b"transfer-encoding":
                chunked = True
        close = chunked or (length is not None and (not length.isdigit() or int(length) > MAX_DISCARDED_BODY_BYTES))
        if not close and length is not None and int(length) > 0 and not await _body_read(receive):
            return
        if target == HEALTH_PATH and method in ("GET", "HEAD"):
            await self._health(send, close=close)
            return
        decision = await self._guard.decide(path=target, tokens=tokens)
        if decision.reason == Reason.OVERLOADED:
            self._overloaded()
        else:
            _log(decision, method=method, target=target)
        headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in decision.headers]
        await _answer(send, decision.status, _BODIES.get(decision.status, b""), headers, close=close)

    async def _health(self, send: Send, *, close: bool) -> None:
        if not self._grants_dir.is_dir():
            await _answer(send, 503, b"grants directory missing\n", [], close=close)
            return
        lines = ["ok"]
        lines.extend(
            f"unusable grant file {problem.file}: {problem.problem[:MAX_REPORTED_PROBLEM_CHARACTERS]}"
            for problem in self._grants.problems()
        )
        await _answer(send, 200, ("\n".join(lines) + "\n").encode("utf-8", "backslashreplace"), [], close=close)


def _target(scope: Scope) -> str:
    """The request target as sent: the raw path, and the query after `?` when there is one."""
    raw_path: bytes = scope["raw_path"]
    query: bytes = scope["query_string"]
    return (raw_path + b"?" + query if query else raw_path).decode("latin-1")


async def _body_read(receive: Receive) -> bool:
    """Read the request body to its end and drop it; False when the connection went away first."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return False
        if not message.get("more_body", False):
            return True


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]], *, close: bool) -> None:
    head = [*_COMMON_HEADERS, (b"content-length", str(len(body)).encode("ascii")), *headers]
    if close:
        head.append(_CLOSE)
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


def _log(decision: Decision, *, method: str, target: str) -> None:
    level = logging.DEBUG if decision.allowed else logging.INFO
    if not LOGGER.isEnabledFor(level):
        return
    LOGGER.log(
        level,
        "%s status=%d reason=%s instance=%s subject=%s method=%s path=%r detail=%r",
        "allow" if decision.allowed else "deny",
        decision.status,
        decision.reason,
        decision.instance or "-",
        _loggable(decision.subject),
        method,
        target.partition("?")[0][:_LOGGED_PATH_CHARACTERS],
        decision.detail,
    )


def _loggable(subject: str | None) -> str:
    """The subject as is when it is one run of printable ASCII, else quoted and escaped (no forged log lines)."""
    if subject is None:
        return "-"
    if subject.isascii() and subject.isprintable() and " " not in subject and subject[:1] not in ("'", '"'):
        return subject[:_LOGGED_PATH_CHARACTERS]
    return repr(subject[:_LOGGED_PATH_CHARACTERS])
