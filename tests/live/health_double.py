"""A test double of the realtime runtime's upstream health endpoint, counted.

GET /health answers `status` with `body` (vLLM answers 200 with an empty body when the engine
runs; an engine that failed answers 5xx). Any other path is 404. An `unresponsive` double plays
a hung runtime: it reads the request, counts it, then answers nothing until `release` is set
(the block's end sets it). No sleep: the test decides when it answers.

It is a double of the runtime, not of Kubernetes: the API server's pod proxy reaches it at the
address a test writes as the Pod's IP (tests/live/ollama_double.py `proxyable_host_address`).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.live.ollama_double import send_reply, serving

HEALTH = "/health"


class HealthDouble:
    def __init__(self, *, status: int = 200, body: bytes = b"", unresponsive: bool = False) -> None:
        self.status = status
        self.body = body
        self.unresponsive = unresponsive
        self.calls: Counter[str] = Counter()
        self.host = ""
        self.port = 0
        self.release = threading.Event()
        self._lock = threading.Lock()

    def answer(self, path: str) -> tuple[int, bytes]:
        with self._lock:
            self.calls[f"GET {path}"] += 1
        if self.unresponsive:
            self.release.wait()
            return 503, b"released at the end of the test"
        return (self.status, self.body) if path == HEALTH else (404, b"404 page not found")


def _handler(double: HealthDouble) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            send_reply(self, *double.answer(self.path), content_type="text/plain; charset=utf-8")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return None

    return Handler


@contextmanager
def running_health(
    host: str, *, status: int = 200, body: bytes = b"", unresponsive: bool = False
) -> Iterator[HealthDouble]:
    """A HealthDouble listening on a random port of `host` until the block ends."""
    double = HealthDouble(status=status, body=body, unresponsive=unresponsive)
    with serving(double, _handler(double), host=host, name="health-double"):
        yield double
