"""Attacks on the guard's availability, from one process over loopback: many idle connections,
and a burst of simultaneous checks. Shared by the tests and benchmarks/access_guard.py.

Every wait is bounded by a deadline; nothing sleeps.
"""

from __future__ import annotations

import gc
import os
import resource
import selectors
import socket
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

PARTIAL_HEAD = b"GET /instances/ai-system/slow/v1/models HTTP/1.1\r\nHost: guard\r\n"
"""A request head that never ends: what a slow client sends before stalling."""


def ensure_open_files(needed: int) -> None:
    """Raise this process's soft limit of open files to at least `needed` (within the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= needed, (
        f"the hard limit of open files ({hard}) is below {needed}"
    )


@dataclass(frozen=True)
class Memory:
    rss_bytes: int
    peak_bytes: int
    """VmHWM: the highest resident set size the process ever had."""


def memory(pid: int) -> Memory:
    """The resident set size of process `pid`, now and at its peak, from /proc/<pid>/status."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                amount, unit = value.split()
                assert unit == "kB", line
                fields[name] = int(amount) * 1024
    return Memory(rss_bytes=fields["VmRSS"], peak_bytes=fields["VmHWM"])


def open_files(pid: int) -> int:
    """How many files process `pid` has open (its connections among them)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def address_of(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None, url
    return parts.hostname, parts.port


def check_request(target: str, headers: Mapping[str, str]) -> bytes:
    """A keep-alive GET of `target` as Envoy sends it."""
    lines = [f"GET {target} HTTP/1.1", "Host: guard", *(f"{name}: {value}" for name, value in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@contextmanager
def idle_connections(address: tuple[str, int], count: int, *, timeout: float) -> Iterator[list[socket.socket]]:
    """`count` connections that never complete a request: every other one sends PARTIAL_HEAD.
    All are closed, at once, when the block ends."""
    ensure_open_files(count + 256)
    opened: list[socket.socket] = []
    try:
        for serial in range(count):
            connection = socket.create_connection(address, timeout=timeout)
            if serial % 2:
                connection.sendall(PARTIAL_HEAD)
            opened.append(connection)
        yield opened
    finally:
        for connection in opened:
            connection.close()


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes


def read_answer(connection: socket.socket) -> Answer:
    """One whole answer from a blocking socket (bounded by the socket's timeout)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a whole answer head: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    answer = _parsed_head(head)
    length = int(answer.headers.get("content-length", "0"))
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the whole answer body")
        body += chunk
    return Answer(status=answer.status, headers=answer.headers, body=body[:length])


def _parsed_head(head: bytes) -> Answer:
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Answer(status=int(status_line.split()[1]), headers=headers, body=b"")


def timed_check(connection: socket.socket, request: bytes) -> tuple[Answer, float]:
    """Send `request` on `connection` and read its answer: the answer and the seconds it took.

    This process's garbage collector is paused meanwhile: a full collection of a test process
    holding thousands of sockets takes tens of milliseconds, which are not the guard's."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.perf_counter()
        connection.sendall(request)
        answer = read_answer(connection)
        return answer, time.perf_counter() - started
    finally:
        if collecting:
            gc.enable()


@dataclass
class Burst:
    statuses: Counter[int] = field(default_factory=Counter)
    """Whole answers read, by status."""
    closed_unanswered: int = 0
    """Connections the guard closed (or reset) before a whole answer."""
    unfinished: int = 0
    """Connections still waiting for an answer at the deadline."""
    seconds: float = 0.0
    """From the first request sent to the last answer read."""
    slowest_answer: float = 0.0


def burst(address: tuple[str, int], requests: Sequence[bytes], *, deadline_seconds: float) -> Burst:
    """Open a connection per request, then send each request on its own as fast as possible and
    read every answer (or its absence) until the deadline."""
    ensure_open_files(len(requests) + 256)
    connections = [socket.create_connection(address, timeout=deadline_seconds) for _ in requests]
    result = Burst()
    selector = selectors.DefaultSelector()
    buffers: dict[socket.socket, bytes] = {}
    try:
        started = time.perf_counter()
        for connection, request in zip(connections, requests, strict=True):
            connection.setblocking(False)
            try:
                connection.send(request)
            except OSError:
                # The guard refused this connection and already closed it; its answer may still be readable.
                pass
            buffers[connection] = b""
            selector.register(connection, selectors.EVENT_READ)
        end = started + deadline_seconds
        while buffers and time.perf_counter() < end:
            for key, _ in selector.select(timeout=max(0.0, end - time.perf_counter())):
                ready = key.fileobj
                assert isinstance(ready, socket.socket)
                finished = _read_some(ready, buffers, result)
                if finished:
                    result.slowest_answer = time.perf_counter() - started
                    selector.unregister(ready)
                    del buffers[ready]
        result.unfinished = len(buffers)
        result.seconds = time.perf_counter() - started
    finally:
        selector.close()
        for connection in connections:
            connection.close()
    return result


def _read_some(connection: socket.socket, buffers: dict[socket.socket, bytes], result: Burst) -> bool:
    """Read what `connection` has; True once its answer is whole (counted) or it closed without one."""
    try:
        chunk = connection.recv(65536)
    except BlockingIOError:
        return False
    except ConnectionError:
        chunk = b""
    data = buffers[connection] + chunk
    buffers[connection] = data
    head, separator, body = data.partition(b"\r\n\r\n")
    if separator:
        answer = _parsed_head(head)
        if len(body) >= int(answer.headers.get("content-length", "0")):
            result.statuses[answer.status] += 1
            return True
    if not chunk:
        result.closed_unanswered += 1
        return True
    return False


def statuses_text(statuses: Counter[int]) -> str:
    return ", ".join(f"{status}: {count}" for status, count in sorted(statuses.items())) or "none"
