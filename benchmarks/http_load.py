"""An open-loop HTTP/1.1 load generator, run as its own process so it shares no GIL with what it loads.

It reads a `LoadSpec` as JSON on stdin and writes a `LoadResult` as JSON on stdout:

    venv/bin/python -m benchmarks.http_load < spec.json

Request i (of `count`) is due at start + i / rate and goes out on keep-alive connection
i mod `connections`, with the text `requests[i mod len(requests)]`. The load is open: the
schedule does not wait for answers. A connection carries one request at a time (no
pipelining), so a request due while its connection still waits for the previous answer goes
out late; its latency then counts from when it was due, so that a slow answer is charged to
every request it held up (no coordinated omission). Otherwise latency counts from the send,
so the generator's own timer slack (uvloop's timers have a 1 ms grain) is not charged to the
server, and is reported apart as `late` sends. Every wait is bounded by `timeout_seconds`.

asyncio on uvloop with raw streams: no HTTP client library between the socket and the clock.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

import uvloop

LATE_SECONDS = 0.001


@dataclass(frozen=True)
class LoadSpec:
    host: str
    port: int
    connections: int
    rate: float
    """Requests per second, over all connections."""
    count: int
    requests: list[str]
    """Whole request texts (head and empty line), used in turn."""
    timeout_seconds: float = 10.0


@dataclass(frozen=True)
class LoadResult:
    latencies_ms: list[float]
    statuses: dict[str, int]
    seconds: float
    """From the first request due to the last answer read."""
    late: int
    """Sends more than 1 ms after they were due while their connection was free (the generator lagged)."""
    held_up: int
    """Sends delayed because their connection still waited for the previous answer."""
    errors: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return len(self.latencies_ms) / self.seconds if self.seconds else 0.0

    def percentile(self, p: int) -> float:
        if len(self.latencies_ms) < 2:
            return self.latencies_ms[0] if self.latencies_ms else float("nan")
        return statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[p - 1]


@dataclass
class _Tally:
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    late: int = 0
    held_up: int = 0
    errors: list[str] = field(default_factory=list)


async def _connection(spec: LoadSpec, index: int, start: float, tally: _Tally) -> None:
    requests = [request.encode("latin-1") for request in spec.requests]
    reader, writer = await asyncio.wait_for(asyncio.open_connection(spec.host, spec.port), spec.timeout_seconds)
    free_since = start
    try:
        for serial in range(index, spec.count, spec.connections):
            due = start + serial / spec.rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sent = time.perf_counter()
            held_up = free_since > due
            tally.held_up += held_up
            tally.late += not held_up and sent - due > LATE_SECONDS
            writer.write(requests[serial % len(requests)])
            status = await asyncio.wait_for(_answer(reader), spec.timeout_seconds)
            free_since = time.perf_counter()
            tally.latencies.append((free_since - (due if held_up else sent)) * 1000)
            tally.statuses[status] += 1
    except (OSError, asyncio.IncompleteReadError, TimeoutError) as error:
        tally.errors.append(f"connection {index}: {type(error).__name__}: {error}")
    finally:
        writer.close()


async def _answer(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, _, headers = head.partition(b"\r\n")
    length = 0
    for line in headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length:
        await reader.readexactly(length)
    return int(status_line.split()[1])


async def run(spec: LoadSpec) -> LoadResult:
    tally = _Tally()
    start = time.perf_counter() + 0.2
    await asyncio.gather(*(_connection(spec, index, start, tally) for index in range(spec.connections)))
    return LoadResult(
        latencies_ms=tally.latencies,
        statuses={str(status): count for status, count in sorted(tally.statuses.items())},
        seconds=time.perf_counter() - start,
        late=tally.late,
        held_up=tally.held_up,
        errors=tally.errors,
    )


def main() -> None:
    spec = LoadSpec(**json.load(sys.stdin))
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        result = runner.run(run(spec))
    json.dump(asdict(result), sys.stdout)


if __name__ == "__main__":
    main()
