"""The server's limits, each on a guard of its own with small values: the connection limit, the
request deadline, the idle timeout, the verification queue and the bounded drain on SIGTERM.

Waits are bounded by socket timeouts; a lower bound on an elapsed time shows that the limit,
not something earlier, closed the connection.
"""

from __future__ import annotations

import re
import signal
import socket
import time
from collections.abc import Callable

from tests.services.access_guard.attack import address_of, burst, check_request, read_answer, timed_check
from tests.services.access_guard.checks import TOKEN_HEADER, bearer, check_path
from tests.services.access_guard.conftest import OwnGuard
from tests.services.access_guard.issuer import IssuerKeys
from tests.services.access_guard.volume import grant

INSTANCE = "limited-app"
REQUEST_TIMEOUT = 0.5
IDLE_TIMEOUT = 1.5
BOUND = 10.0
"""Seconds any single wait may take before the test fails."""


def _guard(own_guard: Callable[..., OwnGuard], *extra: str) -> OwnGuard:
    guard = own_guard(*extra)
    guard.volume.put(INSTANCE, grant(INSTANCE))
    return guard


def _seconds_until_closed(connection: socket.socket) -> tuple[float, bytes]:
    """Seconds until the guard closes `connection`, and what it sent before."""
    started = time.monotonic()
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return time.monotonic() - started, received


def test_a_connection_beyond_the_limit_is_answered_503_and_closed_while_open_ones_are_served(
    own_guard: Callable[..., OwnGuard], keys: IssuerKeys
) -> None:
    guard = _guard(own_guard, "--max-connections", "4")
    address = address_of(guard.process.url)
    request = check_request(check_path(INSTANCE), bearer(keys.token()))
    held = [socket.create_connection(address, timeout=BOUND) for _ in range(4)]
    try:
        assert [timed_check(connection, request)[0].status for connection in held] == [200] * 4
        with socket.create_connection(address, timeout=BOUND) as beyond:
            refused = read_answer(beyond)
            assert beyond.recv(1) == b""
        assert (refused.status, refused.headers["connection"], refused.headers["cache-control"]) == (
            503,
            "close",
            "no-store",
        )
        assert timed_check(held[0], request)[0].status == 200
    finally:
        for connection in held:
            connection.close()
    assert "overloaded: refused 1 connections beyond --max-connections=4 " in guard.process.log_text()


def test_a_connection_that_sends_nothing_is_closed_after_the_request_timeout(
    own_guard: Callable[..., OwnGuard],
) -> None:
    guard = _guard(
        own_guard, "--request-timeout-seconds", str(REQUEST_TIMEOUT), "--idle-timeout-seconds", str(IDLE_TIMEOUT)
    )
    with socket.create_connection(address_of(guard.process.url), timeout=BOUND) as silent:
        elapsed, received = _seconds_until_closed(silent)
    assert received == b""
    assert REQUEST_TIMEOUT * 0.9 <= elapsed < BOUND


def test_a_request_head_left_unfinished_on_a_kept_alive_connection_is_cut_at_the_request_timeout(
    own_guard: Callable[..., OwnGuard], keys: IssuerKeys
) -> None:
    guard = _guard(own_guard, "--request-timeout-seconds", str(REQUEST_TIMEOUT), "--idle-timeout-seconds", "60")
    with socket.create_connection(address_of(guard.process.url), timeout=BOUND) as slow:
        assert timed_check(slow, check_request(check_path(INSTANCE), bearer(keys.token())))[0].status == 200
        slow.sendall(f"GET {check_path(INSTANCE)} HTTP/1.1\r\nHost: guard\r\n".encode())
        elapsed, received = _seconds_until_closed(slow)
    assert received == b""
    assert REQUEST_TIMEOUT * 0.9 <= elapsed < BOUND


def test_a_request_body_left_unfinished_is_cut_at_the_request_timeout_without_an_answer(
    own_guard: Callable[..., OwnGuard], keys: IssuerKeys
) -> None:
    guard = _guard(own_guard, "--request-timeout-seconds", str(REQUEST_TIMEOUT), "--idle-timeout-seconds", "60")
    head = f"POST {check_path(INSTANCE)} HTTP/1.1\r\nHost: guard\r\n{TOKEN_HEADER}: {keys.token()}\r\nContent-Length: 100\r\n\r\n"
    with socket.create_connection(address_of(guard.process.url), timeout=BOUND) as slow:
        slow.sendall(head.encode() + b"x" * 10)
        elapsed, received = _seconds_until_closed(slow)
    assert received == b""
    assert REQUEST_TIMEOUT * 0.9 <= elapsed < BOUND


def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(
    own_guard: Callable[..., OwnGuard], keys: IssuerKeys
) -> None:
    guard = _guard(
        own_guard, "--request-timeout-seconds", str(REQUEST_TIMEOUT), "--idle-timeout-seconds", str(IDLE_TIMEOUT)
    )
    with socket.create_connection(address_of(guard.process.url), timeout=BOUND) as idle:
        assert timed_check(idle, check_request(check_path(INSTANCE), bearer(keys.token())))[0].status == 200
        elapsed, received = _seconds_until_closed(idle)
    assert received == b""
    assert IDLE_TIMEOUT * 0.9 <= elapsed < BOUND


def test_a_flood_of_unknown_key_ids_beyond_the_verification_queue_is_answered_503_and_counted_in_the_log(
    own_guard: Callable[..., OwnGuard], keys: IssuerKeys
) -> None:
    guard = _guard(own_guard, "--verify-queue", "1", "--verify-workers", "1")
    address = address_of(guard.process.url)
    forged = [keys.token(key=keys.rogue, kid=f"unknown-{serial}") for serial in range(200)]
    result = burst(
        address, [check_request(check_path(INSTANCE), bearer(token)) for token in forged], deadline_seconds=BOUND
    )
    assert (result.unfinished, result.closed_unanswered) == (0, 0), result
    assert set(result.statuses) == {401, 503}, result
    assert re.search(
        r"overloaded: refused 0 connections beyond --max-connections=\d+ and answered [1-9]\d* requests 503 beyond --verify-queue=1",
        guard.process.log_text(),
    )


def _expect_continue(connection: socket.socket, keys: IssuerKeys) -> None:
    """Start a check whose body the guard waits for, and wait until it does (its 100 Continue)."""
    head = (
        f"POST {check_path(INSTANCE)} HTTP/1.1\r\nHost: guard\r\n{TOKEN_HEADER}: {keys.token()}\r\n"
        "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n"
    )
    connection.sendall(head.encode())
    interim = b""
    while not interim.endswith(b"\r\n\r\n"):
        chunk = connection.recv(1)
        assert chunk, interim
        interim += chunk
    assert interim.startswith(b"HTTP/1.1 100 "), interim


def test_sigterm_lets_an_answer_in_progress_finish_closes_idle_connections_and_exits_0(
    own_guard: Callable[..., OwnGuard], keys: IssuerKeys
) -> None:
    guard = _guard(own_guard, "--request-timeout-seconds", "60", "--idle-timeout-seconds", "60")
    address = address_of(guard.process.url)
    with (
        socket.create_connection(address, timeout=BOUND) as idle,
        socket.create_connection(address, timeout=BOUND) as busy,
    ):
        assert timed_check(idle, check_request(check_path(INSTANCE), bearer(keys.token())))[0].status == 200
        _expect_continue(busy, keys)
        guard.process.process.send_signal(signal.SIGTERM)
        assert idle.recv(1) == b""
        busy.sendall(b"hello")
        answer = read_answer(busy)
        closed_after_the_answer = busy.recv(1) == b""
    assert answer.status == 200
    assert closed_after_the_answer
    assert guard.process.process.wait(timeout=BOUND) == 0
    assert "stopping on signal 15" in guard.process.log_text()


def test_the_drain_ends_after_drain_seconds_when_an_answer_never_completes(
    own_guard: Callable[..., OwnGuard], keys: IssuerKeys
) -> None:
    guard = _guard(own_guard, "--request-timeout-seconds", "60", "--drain-seconds", "1")
    with socket.create_connection(address_of(guard.process.url), timeout=BOUND) as stalled:
        _expect_continue(stalled, keys)
        started = time.monotonic()
        guard.process.process.send_signal(signal.SIGTERM)
        assert guard.process.process.wait(timeout=BOUND) == 0
        elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 5
    assert "drain bound of 1 s reached: closing 1 connections" in guard.process.log_text()
