"""The guard as a real process on a free loopback port, started once it says it serves.

Readiness is the service manager protocol (services/readiness.py): the test binds a datagram
socket, names it in NOTIFY_SOCKET, and waits (bounded) for the guard's `READY=1`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from services.readiness import NOTIFY_SOCKET
from tests.services.access_guard.issuer import AUDIENCE, ISSUER
from tests.support.processes import stop_process

REPO_ROOT = Path(__file__).resolve().parents[3]
START_DEADLINE_SECONDS = 20.0


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def guard_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "services.access_guard.main", *arguments]


def run_guard(
    arguments: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run the guard to completion (for invalid settings, which exit at once)."""
    return subprocess.run(
        guard_command(*arguments),
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclass
class GuardProcess:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10)

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        return stop_process(self.process, grace_seconds=10)


def start_guard(
    *,
    grants_dir: Path,
    jwks_uri: str,
    log: Path,
    cache_seconds: float = 300,
    extra: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    host: str = "127.0.0.1",
) -> GuardProcess:
    """Start the guard on `host` (an IPv4 or IPv6 loopback address) and wait (bounded) until `/healthz` answers 200."""
    port = free_port(host)
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    arguments = [
        "--grants-dir", str(grants_dir),
        "--issuer", ISSUER,
        "--audience", AUDIENCE,
        "--jwks-uri", jwks_uri,
        "--listen", authority,
        "--jwks-cache-seconds", str(cache_seconds),
        "--jwks-timeout-seconds", "1",
        *extra,
    ]  # fmt: skip
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as channel:
        name = f"magicstick-guard-test-{os.getpid()}-{port}"
        channel.bind("\0" + name)
        with log.open("wb") as stream:
            process = subprocess.Popen(
                guard_command(*arguments),
                cwd=REPO_ROOT,
                env={**os.environ, **(env or {}), NOTIFY_SOCKET: "@" + name},
                stdout=stream,
                stderr=subprocess.STDOUT,
            )
        guard = GuardProcess(process=process, url=f"http://{authority}", log=log)
        wait_until_ready(guard, channel)
    return guard


def wait_until_ready(
    service: Any, channel: socket.socket, *, name: str = "the guard", deadline: float = START_DEADLINE_SECONDS
) -> None:
    """Wait for a service's READY=1 on `channel`, then check that its /healthz answers 200.

    `service` is a started service process of the tests (GuardProcess, the dashboard's
    `Dashboard`): it has `url`, `stop()` and `log_text()`."""
    channel.settimeout(deadline)
    try:
        message = channel.recv(64)
    except TimeoutError:
        service.stop()
        raise RuntimeError(f"{name} did not say it is ready within {deadline} s:\n{service.log_text()}") from None
    assert message == b"READY=1", message
    with httpx.Client(timeout=5) as client:
        assert client.get(f"{service.url}/healthz").status_code == 200, service.log_text()
