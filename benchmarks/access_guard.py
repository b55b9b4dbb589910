"""Benchmark of the access guard: latency of allow decisions at a target rate, on loopback.

It starts a local issuer (its key set served on loopback) and the guard as a real process,
warms the guard's key cache, then sends a bounded number of check requests at a target rate
from a few concurrent keep-alive clients, and prints requests per second with p50 and p99
latency. The same load against `/healthz` (no decision) and in-process timings of the
decision's parts (signature verification with a cached key, grant lookup) show which part
dominates. Nothing is asserted.

Run from the repository root:

    venv/bin/python -m benchmarks.access_guard [--requests 5000] [--rate 500] [--clients 4]

The clients run on the same machine as the guard and share its cores; their own time is
inside the measured latency.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import jwt

from services.access_guard.grants import GrantStore
from tests.services.access_guard.checks import bearer, check_path
from tests.services.access_guard.issuer import AUDIENCE, EC_KID, ISSUER, RSA_KID, IssuerKeys, JwksServer
from tests.services.access_guard.process import GuardProcess, start_guard
from tests.services.access_guard.volume import ConfigMapVolume, grant

INSTANCE = "benchmark-app"
IN_PROCESS_REPEATS = 300


@dataclass(frozen=True)
class Load:
    latencies: tuple[float, ...]
    """Seconds from sending a request to reading its whole answer."""
    elapsed: float
    statuses: Counter[int]
    late: int
    """Requests sent more than 1 ms after their scheduled time (the clients fell behind)."""

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.elapsed

    def percentile(self, p: int) -> float:
        if len(self.latencies) < 2:
            return self.latencies[0] if self.latencies else float("nan")
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[p - 1]


def run_load(guard: GuardProcess, path: str, headers: Mapping[str, str], *, requests: int, rate: float, clients: int) -> Load:
    """`requests` GETs of `path`, scheduled at `rate` per second, over `clients` keep-alive connections."""
    host, port = guard.url.removeprefix("http://").split(":")
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    late = 0
    lock = threading.Lock()
    start = time.perf_counter() + 0.05

    def client(index: int) -> None:
        nonlocal late
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        mine: list[tuple[float, int, bool]] = []
        try:
            for serial in range(index, requests, clients):
                scheduled = start + serial / rate
                delay = scheduled - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                sent = time.perf_counter()
                connection.request("GET", path, headers=dict(headers))
                response = connection.getresponse()
                response.read()
                mine.append((time.perf_counter() - sent, response.status, sent - scheduled > 0.001))
        finally:
            connection.close()
        with lock:
            for latency, status, was_late in mine:
                latencies.append(latency)
                statuses[status] += 1
                late += was_late

    threads = [threading.Thread(target=client, args=(index,)) for index in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return Load(latencies=tuple(latencies), elapsed=time.perf_counter() - start, statuses=statuses, late=late)


def _best_microseconds(work: Callable[[], object], repeats: int) -> float:
    """The median of `repeats` timings of `work`, in microseconds."""
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1e6


def _in_process(keys: IssuerKeys, token: str, algorithm: str, grants_dir: Path, repeats: int) -> tuple[float, float]:
    """(signature verification µs, grant lookup µs), as the guard does them, with warm caches."""
    jwk = next(key for key in jwt.PyJWKSet.from_dict(keys.jwks()).keys if key.key_id == (RSA_KID if algorithm == "RS256" else EC_KID))
    store = GrantStore(grants_dir)
    store.lookup("ai-system", INSTANCE)

    def verify() -> object:
        return jwt.decode(token, jwk, algorithms=[algorithm], issuer=ISSUER, audience=AUDIENCE, leeway=30, options={"require": ["exp", "iss", "aud"]})

    return _best_microseconds(verify, repeats), _best_microseconds(lambda: store.lookup("ai-system", INSTANCE), repeats)


def _line(label: str, load: Load) -> str:
    statuses = ", ".join(f"{status}: {count}" for status, count in sorted(load.statuses.items()))
    return (
        f"{label:<22} {len(load.latencies):>6} requests in {load.elapsed:6.2f} s = {load.rate:7.1f}/s   "
        f"p50 {load.percentile(50) * 1000:6.3f} ms   p99 {load.percentile(99) * 1000:6.3f} ms   "
        f"max {max(load.latencies, default=float('nan')) * 1000:7.3f} ms   late {load.late}   ({statuses})"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000, help="check requests to send (default 5000)")
    parser.add_argument("--rate", type=float, default=500.0, help="target requests per second (default 500)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent keep-alive connections (default 4)")
    parser.add_argument("--algorithm", choices=("RS256", "ES256"), default="RS256", help="the ID token's algorithm (default RS256)")
    arguments = parser.parse_args(argv)

    keys = IssuerKeys()
    jwks = JwksServer(keys)
    jwks.start()
    with tempfile.TemporaryDirectory(prefix="access-guard-benchmark-") as scratch:
        grants_dir = Path(scratch) / "grants"
        grants_dir.mkdir()
        volume = ConfigMapVolume(grants_dir)
        volume.put(INSTANCE, grant(INSTANCE, minimum_role="user"))
        guard = start_guard(grants_dir=grants_dir, jwks_uri=jwks.uri, log=Path(scratch) / "guard.log")
        try:
            token = keys.token(algorithm=arguments.algorithm, roles=["operator"], groups=["team-a"], exp=int(time.time()) + 3600)
            headers = bearer(token)
            warm = run_load(guard, check_path(INSTANCE), headers, requests=arguments.clients * 5, rate=1000, clients=arguments.clients)
            health = run_load(guard, "/healthz", {}, requests=arguments.requests, rate=arguments.rate, clients=arguments.clients)
            decisions = run_load(guard, check_path(INSTANCE), headers, requests=arguments.requests, rate=arguments.rate, clients=arguments.clients)
        finally:
            guard.stop()
            jwks.stop()
        verify_us, lookup_us = _in_process(keys, token, arguments.algorithm, grants_dir, min(IN_PROCESS_REPEATS, max(arguments.requests, 10)))

    print(f"access guard, {arguments.algorithm} token, target {arguments.rate:.0f}/s over {arguments.clients} keep-alive clients, loopback")
    print(_line("warm-up (allow)", warm))
    print(_line("healthz (no decision)", health))
    print(_line("allow decisions", decisions))
    decision_extra_us = (decisions.percentile(50) - health.percentile(50)) * 1e6
    print(f"in-process, median: signature verification {verify_us:.0f} µs, grant lookup (stat + cache) {lookup_us:.1f} µs")
    round_trip_us = health.percentile(50) * 1e6
    dominant = "the HTTP round trip (client, loopback, request parsing)" if round_trip_us >= decision_extra_us else "the decision"
    print(
        f"p50 split: HTTP round trip without a decision {round_trip_us:.0f} µs, the decision adds {decision_extra_us:.0f} µs "
        f"(of which signature verification ~{verify_us:.0f} µs): {dominant} dominates"
    )


if __name__ == "__main__":
    main()
