"""The guard under attack over loopback, with its default limits: thousands of idle connections,
a burst of simultaneous checks, and SIGTERM in the middle of them.

The bounds follow the availability goals: the guard stays under 128 MiB of resident memory
(half its Pod's limit), and once an attack ends, a valid check on a kept-alive connection (as
Envoy's pool holds them) and on a fresh one is answered within a second, well before the 5 s
request deadline a starved guard would hit (the benchmark prints the latencies themselves).
"""

from __future__ import annotations

import signal
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from services.access_guard.settings import DEFAULT_MAX_CONNECTIONS
from tests.services.access_guard.attack import (
    Answer,
    address_of,
    burst,
    check_request,
    idle_connections,
    memory,
    open_files,
    read_answer,
    timed_check,
)
from tests.services.access_guard.checks import bearer, check_path
from tests.services.access_guard.conftest import OwnGuard
from tests.services.access_guard.issuer import IssuerKeys
from tests.services.access_guard.volume import grant

INSTANCE = "attacked-app"
IDLE_CONNECTIONS = 8000
BURST_CHECKS = 6000
MEMORY_BOUND_BYTES = 128 * 1024 * 1024
ANSWER_BOUND_SECONDS = 1.0
"""A check a starved guard would answer only at its 5 s request deadline, or never; latency
figures are the benchmark's (benchmarks/access_guard.py), not a test's."""
GUARD_OWN_FILES = 64
"""Files the guard holds besides connections (listener, logs, the event loop's own)."""


def _attacked(own_guard: Callable[..., OwnGuard]) -> OwnGuard:
    guard = own_guard()
    guard.volume.put(INSTANCE, grant(INSTANCE))
    return guard


def _valid_check(keys: IssuerKeys) -> bytes:
    return check_request(check_path(INSTANCE), bearer(keys.token()))


@contextmanager
def _pooled(address: tuple[str, int], request: bytes) -> Iterator[socket.socket]:
    """A keep-alive connection whose first check was allowed, as Envoy's pool holds one."""
    with socket.create_connection(address, timeout=10) as pooled:
        assert timed_check(pooled, request)[0].status == 200
        yield pooled


def _fresh_check(address: tuple[str, int], request: bytes) -> tuple[Answer, float]:
    with socket.create_connection(address, timeout=10) as fresh:
        return timed_check(fresh, request)


def test_eight_thousand_idle_connections_stay_within_the_connection_limit_and_128_mib(
    own_guard: Callable[..., OwnGuard], keys: IssuerKeys
) -> None:
    guard = _attacked(own_guard)
    pid = guard.process.process.pid
    with idle_connections(address_of(guard.process.url), IDLE_CONNECTIONS, timeout=10) as opened:
        # The last connection is refused, so the guard has accepted (or refused) every one before it.
        assert read_answer(opened[-1]).status == 503
        held = open_files(pid)
        during = memory(pid)
    assert held <= DEFAULT_MAX_CONNECTIONS + GUARD_OWN_FILES
    assert held >= DEFAULT_MAX_CONNECTIONS
    assert during.peak_bytes < MEMORY_BOUND_BYTES, during
    assert memory(pid).peak_bytes < MEMORY_BOUND_BYTES
    assert "overloaded: refused " in guard.process.log_text()


def test_a_valid_check_is_answered_within_a_second_during_and_after_eight_thousand_idle_connections(
    own_guard: Callable[..., OwnGuard], keys: IssuerKeys
) -> None:
    guard = _attacked(own_guard)
    address = address_of(guard.process.url)
    request = _valid_check(keys)
    with _pooled(address, request) as pooled:
        with idle_connections(address, IDLE_CONNECTIONS, timeout=10):
            during, during_seconds = timed_check(pooled, request)
        after, after_seconds = timed_check(pooled, request)
    first, first_seconds = _fresh_check(address, request)
    assert (during.status, after.status, first.status) == (200, 200, 200)
    assert during_seconds < ANSWER_BOUND_SECONDS
    assert after_seconds < ANSWER_BOUND_SECONDS
    assert first_seconds < ANSWER_BOUND_SECONDS


def test_a_burst_of_six_thousand_checks_is_answered_200_or_503_within_seconds_in_128_mib(
    own_guard: Callable[..., OwnGuard], keys: IssuerKeys
) -> None:
    guard = _attacked(own_guard)
    address = address_of(guard.process.url)
    request = _valid_check(keys)
    with _pooled(address, request) as pooled:
        result = burst(address, [request] * BURST_CHECKS, deadline_seconds=30)
        after, after_seconds = timed_check(pooled, request)
    first, first_seconds = _fresh_check(address, request)
    assert (result.unfinished, result.closed_unanswered) == (0, 0), result
    assert set(result.statuses) == {200, 503}, result
    assert sum(result.statuses.values()) == BURST_CHECKS
    assert result.statuses[200] >= DEFAULT_MAX_CONNECTIONS - 1
    assert result.seconds < 10, result
    assert (after.status, first.status) == (200, 200)
    assert after_seconds < ANSWER_BOUND_SECONDS
    assert first_seconds < ANSWER_BOUND_SECONDS
    assert memory(guard.process.process.pid).peak_bytes < MEMORY_BOUND_BYTES


def test_sigterm_with_thousands_of_connections_open_exits_0_at_once(own_guard: Callable[..., OwnGuard]) -> None:
    guard = _attacked(own_guard)
    with idle_connections(address_of(guard.process.url), DEFAULT_MAX_CONNECTIONS, timeout=10):
        started = time.monotonic()
        guard.process.process.send_signal(signal.SIGTERM)
        assert guard.process.process.wait(timeout=25) == 0
        elapsed = time.monotonic() - started
    assert elapsed < 5
