"""The guard as a real process on a free loopback port, and a readiness poll bounded in time."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.services.access_guard.issuer import AUDIENCE, ISSUER

REPO_ROOT = Path(__file__).resolve().parents[3]
START_DEADLINE_SECONDS = 20.0
POLL_SECONDS = 0.02


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def guard_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "services.access_guard.main", *arguments]


def run_guard(arguments: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
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
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode


def start_guard(
    *,
    grants_dir: Path,
    jwks_uri: str,
    log: Path,
    cache_seconds: float = 300,
    extra: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> GuardProcess:
    """Start the guard and wait (bounded) until `/healthz` answers 200."""
    port = free_port()
    arguments = [
        "--grants-dir", str(grants_dir),
        "--issuer", ISSUER,
        "--audience", AUDIENCE,
        "--jwks-uri", jwks_uri,
        "--listen", f"127.0.0.1:{port}",
        "--jwks-cache-seconds", str(cache_seconds),
        "--jwks-timeout-seconds", "1",
        *extra,
    ]  # fmt: skip
    with log.open("wb") as stream:
        process = subprocess.Popen(
            guard_command(*arguments),
            cwd=REPO_ROOT,
            env={**os.environ, **(env or {})},
            stdout=stream,
            stderr=subprocess.STDOUT,
        )
    guard = GuardProcess(process=process, url=f"http://127.0.0.1:{port}", log=log)
    wait_until_healthy(guard)
    return guard


def wait_until_healthy(guard: GuardProcess) -> None:
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    with httpx.Client(timeout=1) as client:
        while time.monotonic() < deadline:
            if guard.process.poll() is not None:
                raise RuntimeError(f"the guard exited with {guard.process.returncode}:\n{guard.log_text()}")
            try:
                if client.get(f"{guard.url}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(POLL_SECONDS)
    guard.stop()
    raise RuntimeError(f"the guard did not become healthy within {START_DEADLINE_SECONDS} s:\n{guard.log_text()}")


def poll_status(client: httpx.Client, path: str, headers: Mapping[str, str], expected: int, *, deadline_seconds: float = 15.0) -> int:
    """Request until the answer is `expected` or the deadline passes; the last status."""
    deadline = time.monotonic() + deadline_seconds
    while True:
        status = client.get(path, headers=headers).status_code
        if status == expected or time.monotonic() >= deadline:
            return status
        time.sleep(POLL_SECONDS)
