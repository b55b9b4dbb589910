"""Benchmark of the access guard: latency under an open-loop load, and what an attack costs it.

It starts a local issuer (its key set served on loopback) and the guard as a real process with
its default limits, then prints:

1. Latency of allow decisions over 8 and 64 keep-alive connections at 500 and 2,000 checks
   per second (goal: p99 at most 5 ms at 2,000/s over 64 connections on two cores), from
   benchmarks.http_load, an open-loop generator in a process of its own. The token is the
   same on every request, as Envoy forwards one user's token: after the first request it
   comes from the verified-token cache. Two more rows: a new token on every request (each
   one verified), and `/healthz` (no decision: the HTTP round trip and a scan of the grants
   directory, which holds one file here), and the floor: the same HTTP stack (uvicorn,
   httptools, uvloop) answering 200 with no decision at all (benchmarks.http_floor), loaded the
   same way at the top rate, so the difference is what the guard itself costs.
2. In-process medians of a decision's parts, and which part dominates.
3. Attacks, each on a guard of its own: 8,000 idle connections (half of them stalled in a
   request head), held then closed at once; a burst of 6,000 simultaneous checks, each on a
   connection of its own. For each: time, connections held, resident memory at its peak,
   the answers, and how long a valid check took afterwards.

The load generator runs on the same machine and shares its cores; its time is inside the
measured latency. Figures are printed, nothing is asserted. Run from the repository root:

    venv/bin/python -m benchmarks.access_guard [--seconds 5] [--rates 500,2000] [--connections 8,64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import jwt

from benchmarks.http_load import LoadResult, LoadSpec
from services.access_guard.grants import GrantStore
from services.access_guard.settings import DEFAULT_MAX_CONNECTIONS
from services.oidc.keys import KeySet
from services.oidc.tokens import TokenVerifier
from services.oidc.verification import CachingVerifier
from tests.services.access_guard.attack import (
    address_of,
    burst,
    check_request,
    idle_connections,
    memory,
    open_files,
    read_answer,
    statuses_text,
    timed_check,
)
from tests.services.access_guard.checks import bearer, check_path
from tests.services.access_guard.issuer import AUDIENCE, EC_KID, ISSUER, RSA_KID, IssuerKeys, JwksServer
from tests.services.access_guard.process import REPO_ROOT, GuardProcess, start_guard
from tests.services.access_guard.volume import ConfigMapVolume, grant
from tests.support.processes import stop_process

INSTANCE = "benchmark-app"
IN_PROCESS_REPEATS = 300
MiB = 1024 * 1024


FLOOR_START_SECONDS = 10.0


@dataclass(frozen=True)
class Served:
    """A server process under load: the guard, or the floor."""

    url: str
    process: subprocess.Popen[bytes]


@dataclass(frozen=True)
class Setting:
    seconds: float
    requests: int | None
    rates: tuple[float, ...]
    connections: tuple[int, ...]
    idle_connections: int
    burst: int
    algorithm: str

    def count(self, rate: float) -> int:
        return self.requests if self.requests is not None else max(1, round(rate * self.seconds))


@dataclass(frozen=True)
class Run:
    result: LoadResult
    guard_cpu_seconds: float
    generator_cpu_seconds: float
    machine_busy_seconds: float
    """CPU time every process of the machine used meanwhile (from /proc/stat)."""
    wall_seconds: float

    @property
    def others_cpus(self) -> float:
        """CPUs that processes other than the guard and the generator kept busy, on average."""
        return (
            max(0.0, self.machine_busy_seconds - self.guard_cpu_seconds - self.generator_cpu_seconds)
            / self.wall_seconds
        )


def _process_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_busy_seconds() -> float:
    with open("/proc/stat", encoding="ascii") as stat:
        user, nice, system, idle, iowait, irq, softirq, steal = (int(value) for value in stat.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def load(guard: GuardProcess | Served, requests: Sequence[str], *, connections: int, rate: float, count: int) -> Run:
    """One open-loop run of benchmarks.http_load against `guard`, in its own process, with the CPU it took."""
    host, port = address_of(guard.url)
    spec = LoadSpec(host=host, port=port, connections=connections, rate=rate, count=count, requests=list(requests))
    guard_before, machine_before, wall_before = (
        _process_cpu_seconds(guard.process.pid),
        _machine_busy_seconds(),
        time.perf_counter(),
    )
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    finished = subprocess.run(
        [sys.executable, "-m", "benchmarks.http_load"],
        cwd=REPO_ROOT,
        input=json.dumps(asdict(spec)),
        capture_output=True,
        text=True,
        timeout=count / rate + 60,
        check=True,
    )
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Run(
        result=LoadResult(**json.loads(finished.stdout)),
        guard_cpu_seconds=_process_cpu_seconds(guard.process.pid) - guard_before,
        generator_cpu_seconds=children.ru_utime
        + children.ru_stime
        - children_before.ru_utime
        - children_before.ru_stime,
        machine_busy_seconds=_machine_busy_seconds() - machine_before,
        wall_seconds=time.perf_counter() - wall_before,
    )


def _line(label: str, run: Run) -> str:
    result = run.result
    statuses = ", ".join(f"{status}: {count}" for status, count in result.statuses.items())
    errors = f"   errors {len(result.errors)}: {result.errors[0]}" if result.errors else ""
    guard_us = run.guard_cpu_seconds / max(1, len(result.latencies_ms)) * 1e6
    return (
        f"{label:<36} {len(result.latencies_ms):>6} in {result.seconds:5.2f} s = {result.rate:6.1f}/s  "
        f"p50 {result.percentile(50):6.3f}  p99 {result.percentile(99):7.3f}  max {max(result.latencies_ms, default=float('nan')):7.3f} ms  "
        f"held up {result.held_up}, late {result.late}  guard CPU {guard_us:3.0f} µs/check  others busy {run.others_cpus:.2f} CPUs  "
        f"({statuses}){errors}"
    )


def _median_microseconds(work: Callable[[], object], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1e6


@dataclass(frozen=True)
class Parts:
    verify_us: float
    cache_hit_us: float
    lookup_us: float


def _in_process(keys: IssuerKeys, token: str, algorithm: str, grants_dir: Path, jwks_uri: str, repeats: int) -> Parts:
    """A decision's parts as the guard does them, with warm caches: signature verification, a
    verified-token cache hit, a grant lookup."""
    jwk = next(
        key
        for key in jwt.PyJWKSet.from_dict(keys.jwks()).keys
        if key.key_id == (RSA_KID if algorithm == "RS256" else EC_KID)
    )
    store = GrantStore(grants_dir)
    store.lookup("ai-system", INSTANCE)

    def verify() -> object:
        return jwt.decode(
            token,
            jwk,
            algorithms=[algorithm],
            issuer=ISSUER,
            audience=AUDIENCE,
            leeway=30,
            options={"require": ["exp", "iss", "aud"]},
        )

    key_set = KeySet(uri=jwks_uri, lifetime=300, timeout=2)
    caching = CachingVerifier(
        verifier=TokenVerifier(keys=key_set, issuer=ISSUER, audience=AUDIENCE), cache_size=16, workers=1, queue=16
    )

    async def hits() -> float:
        await caching.claims(token)
        timings = []
        for _ in range(repeats):
            started = time.perf_counter()
            await caching.claims(token)
            timings.append(time.perf_counter() - started)
        return statistics.median(timings) * 1e6

    try:
        with asyncio.Runner(loop_factory=asyncio.new_event_loop) as runner:
            cache_hit_us = runner.run(hits())
    finally:
        caching.close()
    return Parts(
        verify_us=_median_microseconds(verify, repeats),
        cache_hit_us=cache_hit_us,
        lookup_us=_median_microseconds(lambda: store.lookup("ai-system", INSTANCE), repeats),
    )


@contextmanager
def _guard(keys: IssuerKeys, jwks: JwksServer, scratch: Path, name: str) -> Iterator[GuardProcess]:
    grants_dir = scratch / f"grants-{name}"
    grants_dir.mkdir()
    ConfigMapVolume(grants_dir).put(INSTANCE, grant(INSTANCE, minimum_role="user"))
    guard = start_guard(grants_dir=grants_dir, jwks_uri=jwks.uri, log=scratch / f"guard-{name}.log")
    try:
        yield guard
    finally:
        guard.stop()


@contextmanager
def _floor() -> Iterator[Served]:
    """benchmarks.http_floor on a free loopback port, once it accepts connections."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "benchmarks.http_floor", str(port)], cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + FLOOR_START_SECONDS
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.05)
        yield Served(url=f"http://127.0.0.1:{port}", process=process)
    finally:
        stop_process(process, grace_seconds=FLOOR_START_SECONDS)


def _latency(setting: Setting, keys: IssuerKeys, guard: GuardProcess) -> tuple[str, LoadResult, LoadResult]:
    """Print the latency rows; the token, and the rows the split needs (allow and healthz at the top load)."""
    token = keys.token(algorithm=setting.algorithm, roles=["operator"], groups=["team-a"], exp=int(time.time()) + 3600)
    request = check_request(check_path(INSTANCE), bearer(token)).decode("latin-1")
    load(guard, [request], connections=max(setting.connections), rate=1000, count=max(setting.connections) * 5)
    top: LoadResult | None = None
    for connections in setting.connections:
        for rate in setting.rates:
            run = load(guard, [request], connections=connections, rate=rate, count=setting.count(rate))
            print(_line(f"allow, {connections} conns, {rate:.0f}/s", run))
            top = run.result
    assert top is not None
    rate, connections = min(setting.rates), min(setting.connections)
    count = setting.count(rate)
    fresh = [
        check_request(
            check_path(INSTANCE), bearer(keys.token(algorithm=setting.algorithm, sub=f"user-{serial}"))
        ).decode("latin-1")
        for serial in range(count)
    ]
    print(
        _line(
            f"allow, a new token each, {connections} conns, {rate:.0f}/s",
            load(guard, fresh, connections=connections, rate=rate, count=count),
        )
    )
    health = check_request("/healthz", {}).decode("latin-1")
    top_rate, top_connections = max(setting.rates), max(setting.connections)
    healthz = load(guard, [health], connections=top_connections, rate=top_rate, count=setting.count(top_rate))
    print(_line(f"healthz, {top_connections} conns, {top_rate:.0f}/s", healthz))
    with _floor() as floor:
        floor_request = check_request("/", {}).decode("latin-1")
        load(floor, [floor_request], connections=top_connections, rate=1000, count=top_connections * 5)
        print(
            _line(
                f"floor (no decision), {top_connections} conns, {top_rate:.0f}/s",
                load(floor, [floor_request], connections=top_connections, rate=top_rate, count=setting.count(top_rate)),
            )
        )
    return token, top, healthz.result


def _idle_attack(setting: Setting, keys: IssuerKeys, guard: GuardProcess) -> None:
    address = address_of(guard.url)
    pid = guard.process.pid
    request = check_request(check_path(INSTANCE), bearer(keys.token()))
    with socket.create_connection(address, timeout=10) as pooled:
        timed_check(pooled, request)
        started = time.perf_counter()
        with idle_connections(address, setting.idle_connections, timeout=10) as opened:
            last = read_answer(opened[-1]).status if setting.idle_connections > DEFAULT_MAX_CONNECTIONS else None
            opened_seconds = time.perf_counter() - started
            held = open_files(pid)
            during, during_seconds = timed_check(pooled, request)
            closing = time.perf_counter()
        closed_seconds = time.perf_counter() - closing
        after, after_seconds = timed_check(pooled, request)
    with socket.create_connection(address, timeout=10) as fresh:
        first, first_seconds = timed_check(fresh, request)
    peak = memory(pid).peak_bytes / MiB
    print(
        f"{setting.idle_connections} idle connections: opened in {opened_seconds:.2f} s (the last one answered {last}); "
        f"guard holds {held} files; peak RSS {peak:.1f} MiB; a check on a pooled connection meanwhile {during.status} in {during_seconds * 1000:.1f} ms"
    )
    print(
        f"  closed at once in {closed_seconds * 1000:.0f} ms; then a check on the pooled connection {after.status} in {after_seconds * 1000:.1f} ms, "
        f"on a fresh one {first.status} in {first_seconds * 1000:.1f} ms"
    )


def _burst_attack(setting: Setting, keys: IssuerKeys, guard: GuardProcess) -> None:
    address = address_of(guard.url)
    request = check_request(check_path(INSTANCE), bearer(keys.token()))
    with socket.create_connection(address, timeout=10) as pooled:
        timed_check(pooled, request)
        result = burst(address, [request] * setting.burst, deadline_seconds=30)
        after, after_seconds = timed_check(pooled, request)
    with socket.create_connection(address, timeout=10) as fresh:
        first, first_seconds = timed_check(fresh, request)
    peak = memory(guard.process.pid).peak_bytes / MiB
    print(
        f"burst of {setting.burst} checks: all answered in {result.seconds:.2f} s ({statuses_text(result.statuses)}; "
        f"closed unanswered {result.closed_unanswered}, unfinished {result.unfinished}); peak RSS {peak:.1f} MiB"
    )
    print(
        f"  then a check on the pooled connection {after.status} in {after_seconds * 1000:.1f} ms, on a fresh one {first.status} in {first_seconds * 1000:.1f} ms"
    )


def _split(parts: Parts, top: LoadResult, healthz: LoadResult) -> None:
    print(
        f"in-process, median: signature verification {parts.verify_us:.0f} µs, verified-token cache hit {parts.cache_hit_us:.1f} µs, "
        f"grant lookup (stat + cache) {parts.lookup_us:.1f} µs"
    )
    round_trip_us = healthz.percentile(50) * 1000
    decision_us = top.percentile(50) * 1000 - round_trip_us
    dominant = "the HTTP round trip (generator, loopback, uvicorn)" if round_trip_us >= decision_us else "the decision"
    print(
        f"p50 split: /healthz round trip (no decision) {round_trip_us:.0f} µs, an allow adds {decision_us:.0f} µs: {dominant} dominates"
    )


def _setting(argv: Sequence[str] | None) -> Setting:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each latency run (default 5)")
    parser.add_argument("--requests", type=int, default=None, help="requests per latency run instead of --seconds")
    parser.add_argument("--rates", default="500,2000", help="checks per second, comma-separated (default 500,2000)")
    parser.add_argument("--connections", default="8,64", help="keep-alive connections, comma-separated (default 8,64)")
    parser.add_argument(
        "--idle-connections",
        type=int,
        default=8000,
        help="idle connections of the first attack (default 8000; 0: none)",
    )
    parser.add_argument(
        "--burst", type=int, default=6000, help="simultaneous checks of the second attack (default 6000; 0: none)"
    )
    parser.add_argument(
        "--algorithm", choices=("RS256", "ES256"), default="RS256", help="the ID tokens' algorithm (default RS256)"
    )
    arguments = parser.parse_args(argv)
    return Setting(
        seconds=arguments.seconds,
        requests=arguments.requests,
        rates=tuple(float(rate) for rate in arguments.rates.split(",")),
        connections=tuple(int(count) for count in arguments.connections.split(",")),
        idle_connections=arguments.idle_connections,
        burst=arguments.burst,
        algorithm=arguments.algorithm,
    )


def main(argv: Sequence[str] | None = None) -> None:
    setting = _setting(argv)
    keys = IssuerKeys()
    jwks = JwksServer(keys)
    jwks.start()
    print(
        f"access guard, {setting.algorithm} tokens, default limits, loopback, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start"
    )
    try:
        with tempfile.TemporaryDirectory(prefix="access-guard-benchmark-") as scratch:
            with _guard(keys, jwks, Path(scratch), "latency") as guard:
                token, top, healthz = _latency(setting, keys, guard)
            parts = _in_process(
                keys,
                token,
                setting.algorithm,
                Path(scratch) / "grants-latency",
                jwks.uri,
                min(IN_PROCESS_REPEATS, setting.count(min(setting.rates))),
            )
            _split(parts, top, healthz)
            if setting.idle_connections:
                with _guard(keys, jwks, Path(scratch), "idle") as guard:
                    _idle_attack(setting, keys, guard)
            if setting.burst:
                with _guard(keys, jwks, Path(scratch), "burst") as guard:
                    _burst_attack(setting, keys, guard)
    finally:
        jwks.stop()
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
