"""A test double of the Ollama HTTP API: the three endpoints the program calls, counted.

- GET /api/tags lists the tags it holds, as Ollama prints them (`name` and `model`);
- POST /api/copy {"source", "destination"} adds the destination tag and answers 200 with an
  empty body, as Ollama does; 404 with Ollama's {"error": ...} when the source is missing;
- GET /api/ps lists `loaded`, which a test sets to the models it wants running.

An `unresponsive` double plays a hung Ollama: it accepts the connection and reads the request,
counts it, then answers nothing until `release` is set (the block's end sets it). No sleep:
the test decides when it answers.

`running_ollama(host)` serves it on a random port of `host` in a thread. The socket is
bound and listening before the context is entered, so it is ready at once.
It is a double of Ollama, not of Kubernetes: it knows nothing of Pods or proxies.
`proxyable_host_address()` is where to listen so that the API server's pod proxy dials it.
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import socket
import struct
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

TAGS = "/api/tags"
COPY = "/api/copy"
PS = "/api/ps"
SHUTDOWN_POLL_SECONDS = 0.02
"""How often the serving thread looks for a shutdown request; it bounds the time a stop takes."""
SIOCGIFADDR = 0x8915


def proxyable_host_address() -> str:
    """An IPv4 address of this host that is neither loopback nor link-local (Linux interfaces).

    The pod proxy refuses loopback and link-local pod IPs ("address not allowed").
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            try:
                answer = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            address = ipaddress.IPv4Address(answer[20:24])
            if not (address.is_loopback or address.is_link_local):
                return str(address)
    raise RuntimeError("this host has no IPv4 address the apiserver's pod proxy accepts (only loopback or link-local)")


def tag_of(name: str) -> str:
    """`name` as Ollama stores it: without a tag it is `:latest`."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class OllamaDouble:
    """The state behind one double: tags, loaded models, and the calls it has answered."""

    def __init__(
        self, *, tags: Iterable[str] = (), loaded: Sequence[Mapping[str, Any]] = (), unresponsive: bool = False
    ) -> None:
        self.tags: set[str] = {tag_of(name) for name in tags}
        self.loaded: list[dict[str, Any]] = [dict(model) for model in loaded]
        self.calls: Counter[str] = Counter()
        self.host = ""
        self.port = 0
        self.unresponsive = unresponsive
        self.release = threading.Event()
        """Set when an unresponsive double may answer the requests it holds (at the latest, the block's end)."""
        self._lock = threading.Lock()

    @property
    def copies(self) -> int:
        return self.calls[f"POST {COPY}"]

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        if self.unresponsive:
            with self._lock:
                self.calls[f"{method} {path}"] += 1
            self.release.wait()
            return 503, json.dumps({"error": "released at the end of the test"}).encode()
        with self._lock:
            self.calls[f"{method} {path}"] += 1
            if (method, path) == ("GET", TAGS):
                models = [{"name": tag, "model": tag, "size": 1, "digest": "0" * 64} for tag in sorted(self.tags)]
                return 200, json.dumps({"models": models}).encode()
            if (method, path) == ("GET", PS):
                return 200, json.dumps({"models": self.loaded}).encode()
            if (method, path) == ("POST", COPY):
                return self._copy(body)
            return 404, b"404 page not found"

    def _copy(self, body: bytes) -> tuple[int, bytes]:
        try:
            request = json.loads(body)
            source, destination = tag_of(request["source"]), tag_of(request["destination"])
        except (ValueError, KeyError, TypeError):
            return 400, json.dumps({"error": "invalid copy request"}).encode()
        if source not in self.tags:
            return 404, json.dumps({"error": f"model '{request['source']}' not found"}).encode()
        self.tags.add(destination)
        return 200, b""


def _handler(double: OllamaDouble) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._reply(double.answer("GET", self.path, b""))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self._reply(double.answer("POST", self.path, self.rfile.read(length)))

        def _reply(self, answer: tuple[int, bytes]) -> None:
            send_reply(self, *answer, content_type="application/json; charset=utf-8")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return None

    return Handler


@contextmanager
def running_ollama(
    host: str,
    *,
    tags: Iterable[str] = (),
    loaded: Sequence[Mapping[str, Any]] = (),
    unresponsive: bool = False,
    port: int = 0,
) -> Iterator[OllamaDouble]:
    """An OllamaDouble listening on `port` of `host` (0: a random one) until the block ends."""
    double = OllamaDouble(tags=tags, loaded=loaded, unresponsive=unresponsive)
    with serving(double, _handler(double), host=host, port=port, name="ollama-double"):
        yield double


def send_reply(handler: BaseHTTPRequestHandler, status: int, payload: bytes, *, content_type: str) -> None:
    """Answer `status` with `payload`; a client that hung up is not an error of the double."""
    try:
        handler.send_response(status)
        if payload:
            handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
    except (BrokenPipeError, ConnectionResetError):
        return None


class Releasable(Protocol):
    host: str
    port: int
    release: threading.Event


@contextmanager
def serving(
    double: Releasable, handler: type[BaseHTTPRequestHandler], *, host: str, port: int = 0, name: str
) -> Iterator[None]:
    """Serve `handler` on `port` of `host` (0: a random one) in a thread until the block ends;
    `double` learns its address, and its held answers are released at the end."""
    server = ThreadingHTTPServer((host, port), handler)
    double.host, double.port = host, int(server.server_address[1])
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
        name=f"{name}-{double.port}",
        daemon=True,
    )
    thread.start()
    try:
        yield
    finally:
        double.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
