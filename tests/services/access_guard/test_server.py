"""The guard as a server: readiness, HTTP/1.1 keep-alive, any method, shutdown, settings."""

from __future__ import annotations

import http.client
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.services.access_guard.checks import ROLE_HEADER, TOKEN_HEADER, bearer, check_path
from tests.services.access_guard.conftest import OwnGuard
from tests.services.access_guard.issuer import IssuerKeys, JwksServer
from tests.services.access_guard.process import GuardProcess, run_guard, start_guard
from tests.services.access_guard.volume import ConfigMapVolume, grant


def _connection(guard: GuardProcess) -> http.client.HTTPConnection:
    address = urlsplit(guard.url)
    return http.client.HTTPConnection(address.hostname or "", address.port, timeout=10)


def _until_closed(guard: GuardProcess, request: bytes) -> bytes:
    """Send `request` on a new connection and read until the guard closes it (bounded by the socket timeout)."""
    address = urlsplit(guard.url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as raw:
        raw.sendall(request)
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    return answer


def test_healthz_answers_ok_when_every_grant_is_usable(own_guard: Callable[..., OwnGuard]) -> None:
    guard = own_guard()
    guard.volume.put("healthy-app", grant("healthy-app"))
    with guard.process.client() as client:
        answer = client.get("/healthz")
    assert (answer.status_code, answer.text) == (200, "ok\n")
    assert answer.headers["cache-control"] == "no-store"


def test_answers_share_one_keep_alive_connection(
    guard: GuardProcess, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance))
    connection = _connection(guard)
    try:
        sockets = set()
        for token, status in [(keys.token(), 200), ("bad", 401), (keys.token(roles=[]), 403)] * 3:
            connection.request("GET", check_path(instance), headers=bearer(token))
            response = connection.getresponse()
            response.read()
            assert response.status == status
            assert response.version == 11
            sockets.add(id(connection.sock))
        assert len(sockets) == 1
    finally:
        connection.close()


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "PROPFIND"])
def test_every_method_is_decided_by_the_grant(
    client: httpx.Client, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str], method: str
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance, minimum_role="operator"))
    allowed = client.request(method, check_path(instance), headers=bearer(keys.token(roles=["operator"])))
    denied = client.request(method, check_path(instance), headers=bearer(keys.token(roles=["user"])))
    assert (allowed.status_code, denied.status_code) == (200, 403)
    assert allowed.headers[ROLE_HEADER] == "operator"


def test_a_request_body_is_discarded_and_the_connection_stays_usable(
    guard: GuardProcess, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance))
    connection = _connection(guard)
    try:
        sockets = set()
        for body in (b'{"prompt": "hello"}', b"", b"x" * 10_000, b"y" * 64 * 1024):
            connection.request("POST", check_path(instance), body=body, headers=bearer(keys.token()))
            response = connection.getresponse()
            response.read()
            assert (response.status, response.will_close) == (200, False)
            sockets.add(id(connection.sock))
        assert len(sockets) == 1
    finally:
        connection.close()


def test_a_body_over_64_kib_is_not_read_and_its_connection_is_closed_after_the_answer(
    guard: GuardProcess, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance))
    head = f"POST {check_path(instance)} HTTP/1.1\r\nHost: guard\r\n{TOKEN_HEADER}: {keys.token()}\r\nContent-Length: {64 * 1024 + 1}\r\n\r\n"
    answer = _until_closed(guard, head.encode())
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"\r\nconnection: close\r\n" in answer.lower()


@pytest.mark.parametrize(
    ("roles", "token", "status"),
    [(["user"], True, 200), ([], True, 403), (["user"], False, 401)],
    ids=["allow", "deny", "unauthenticated"],
)
def test_every_answer_forbids_caching(
    client: httpx.Client,
    volume: ConfigMapVolume,
    keys: IssuerKeys,
    new_instance: Callable[[], str],
    roles: list[str],
    token: bool,
    status: int,
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance))
    answer = client.get(check_path(instance), headers=bearer(keys.token(roles=roles)) if token else {})
    assert (answer.status_code, answer.headers["cache-control"]) == (status, "no-store")


def test_a_chunked_request_is_answered_and_its_connection_closed(
    guard: GuardProcess, volume: ConfigMapVolume, keys: IssuerKeys, new_instance: Callable[[], str]
) -> None:
    instance = new_instance()
    volume.put(instance, grant(instance))
    request = (
        f"POST {check_path(instance)} HTTP/1.1\r\nHost: guard\r\n{TOKEN_HEADER}: {keys.token()}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    )
    answer = _until_closed(guard, request.encode())
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"\r\nconnection: close\r\n" in answer.lower()


def test_the_guard_listens_on_an_ipv6_address(
    volume: ConfigMapVolume, jwks: JwksServer, keys: IssuerKeys, tmp_path: Path
) -> None:
    volume.put("ipv6-app", grant("ipv6-app"))
    guard = start_guard(grants_dir=volume.root, jwks_uri=jwks.uri, log=tmp_path / "guard.log", host="::1")
    try:
        with guard.client() as client:
            assert client.get(check_path("ipv6-app"), headers=bearer(keys.token())).status_code == 200
    finally:
        guard.stop()
    assert "listening on [::1]:" in guard.log_text()


def test_a_head_answer_has_no_body(client: httpx.Client, new_instance: Callable[[], str]) -> None:
    answer = client.head(check_path(new_instance()))
    assert answer.status_code == 403
    assert answer.content == b""


def test_the_guard_stops_cleanly_on_sigterm(volume: ConfigMapVolume, jwks: JwksServer, tmp_path: Path) -> None:
    guard = start_guard(grants_dir=volume.root, jwks_uri=jwks.uri, log=tmp_path / "guard.log")
    guard.process.send_signal(signal.SIGTERM)
    assert guard.process.wait(timeout=10) == 0
    assert "stopping on signal 15" in guard.log_text()


def test_a_flag_wins_over_its_environment_variable(volume: ConfigMapVolume, jwks: JwksServer, tmp_path: Path) -> None:
    guard = start_guard(
        grants_dir=volume.root,
        jwks_uri=jwks.uri,
        log=tmp_path / "guard.log",
        env={
            "MAGICSTICK_ACCESS_GUARD_JWKS_CACHE_SECONDS": "not-a-number",
            "MAGICSTICK_ACCESS_GUARD_ISSUER": "ftp://example.com",
        },
    )
    try:
        assert guard.process.poll() is None
    finally:
        guard.stop()


def test_a_listen_address_in_use_stops_the_guard_naming_the_flag(volume: ConfigMapVolume, jwks: JwksServer) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        arguments = ["--grants-dir", str(volume.root), "--issuer", "https://auth.example.com/realms/magicstick"]
        result = run_guard([*arguments, "--audience", "magicstick-apps", "--jwks-uri", jwks.uri, "--listen", address])
    assert result.returncode == 2
    assert result.stderr.startswith(f"magicstick-access-guard: --listen: cannot listen on {address}: ")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("arguments", "env", "message"),
    [
        ([], {}, "--grants-dir: a value is required"),
        (["--grants-dir", "{missing}"], {}, "--grants-dir: '{missing}' is not a directory"),
        (["--issuer", "auth.example.com"], {}, "--issuer: 'auth.example.com' is not an http(s) URL"),
        (["--audience", ""], {}, "--audience: a value is required"),
        (["--jwks-uri", "file:///etc/passwd"], {}, "--jwks-uri: 'file:///etc/passwd' is not an http(s) URL"),
        (["--token-header", "X Token"], {}, "--token-header: 'X Token' is not an HTTP header name"),
        (["--listen", "8080"], {}, "--listen: '8080' is not HOST:PORT with a port from 0 to 65535"),
        (
            ["--listen", "127.0.0.1:70000"],
            {},
            "--listen: '127.0.0.1:70000' is not HOST:PORT with a port from 0 to 65535",
        ),
        (["--listen", "::1:8080"], {}, "--listen: '::1:8080': write an IPv6 address in brackets, [HOST]:PORT"),
        (["--jwks-cache-seconds", "0"], {}, "--jwks-cache-seconds: '0' must be a finite number of seconds above 0"),
        (["--jwks-timeout-seconds", "soon"], {}, "--jwks-timeout-seconds: 'soon' is not a number of seconds"),
        (["--log-level", "loud"], {}, "--log-level: 'loud' is not one of debug, info, warning, error"),
        (["--max-connections", "0"], {}, "--max-connections: '0' is not a whole number from 1 to 1000000"),
        (["--verify-workers", "two"], {}, "--verify-workers: 'two' is not a whole number from 1 to 64"),
        (["--verify-queue", "-1"], {}, "--verify-queue: '-1' is not a whole number from 1 to 100000"),
        (["--token-cache-size", "1e3"], {}, "--token-cache-size: '1e3' is not a whole number from 1 to 1000000"),
        (["--idle-timeout-seconds", "0"], {}, "--idle-timeout-seconds: '0' must be a finite number of seconds above 0"),
        (
            ["--request-timeout-seconds", "inf"],
            {},
            "--request-timeout-seconds: 'inf' must be a finite number of seconds above 0",
        ),
        (["--drain-seconds", "30"], {}, "--drain-seconds: '30' must be below 30 seconds"),
        (
            [],
            {"MAGICSTICK_ACCESS_GUARD_JWKS_CACHE_SECONDS": "-5"},
            "--jwks-cache-seconds (from MAGICSTICK_ACCESS_GUARD_JWKS_CACHE_SECONDS): '-5' must be a finite number of seconds above 0",
        ),
        (
            [],
            {"MAGICSTICK_ACCESS_GUARD_MAX_CONNECTIONS": "many"},
            "--max-connections (from MAGICSTICK_ACCESS_GUARD_MAX_CONNECTIONS): 'many' is not a whole number from 1 to 1000000",
        ),
        (["--unknown-flag", "1"], {}, "unrecognized arguments: --unknown-flag 1"),
    ],
    ids=[
        "no-grants-dir",
        "a-missing-grants-dir",
        "an-issuer-that-is-no-url",
        "an-empty-audience",
        "a-jwks-uri-that-is-no-http-url",
        "a-token-header-with-a-space",
        "a-listen-address-without-host",
        "a-port-out-of-range",
        "an-ipv6-address-without-brackets",
        "a-zero-cache-lifetime",
        "a-timeout-that-is-no-number",
        "an-unknown-log-level",
        "no-connection-at-all",
        "workers-that-are-no-number",
        "a-negative-queue",
        "a-cache-size-in-exponent-notation",
        "a-zero-idle-timeout",
        "an-infinite-request-timeout",
        "a-drain-as-long-as-the-grace-period",
        "an-invalid-environment-value",
        "an-invalid-connection-limit-from-the-environment",
        "an-unknown-flag",
    ],
)
def test_an_invalid_setting_stops_the_guard_with_one_line_naming_the_flag(
    volume: ConfigMapVolume, tmp_path: Path, arguments: list[str], env: dict[str, str], message: str
) -> None:
    valid = {
        "--grants-dir": str(volume.root),
        "--issuer": "https://auth.example.com/realms/magicstick",
        "--audience": "magicstick-apps",
        "--jwks-uri": "https://auth.example.com/realms/magicstick/protocol/openid-connect/certs",
    }
    missing = str(tmp_path / "absent")
    given = [argument.format(missing=missing) for argument in arguments]
    # The first row gives nothing at all; every other row completes its flags with valid ones.
    defaults = (
        []
        if not arguments and not env
        else [item for flag, value in valid.items() if flag not in given for item in (flag, value)]
    )
    environment = {"MAGICSTICK_ACCESS_GUARD_GRANTS_DIR": ""} | env
    result = run_guard([*defaults, *given], env=environment)
    assert result.returncode == 2
    assert result.stderr == f"magicstick-access-guard: {message.format(missing=missing)}\n"
    assert result.stdout == ""
