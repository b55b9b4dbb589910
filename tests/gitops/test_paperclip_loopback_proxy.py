"""The Paperclip chart's loopback proxy, run as rendered with Node.js: it carries a connection to
the loopback listener, and listens on the one address it is given (the Pod IP), nowhere else."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator

import pytest

from tests.gitops.test_paperclip_local_trusted import instance
from tests.support.processes import stop_process

POD_IP = "127.0.0.2"
"""Stands for the Pod IP: a loopback address other than the one Paperclip listens on."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def paperclip() -> Iterator[int]:
    """A listener on 127.0.0.1 that answers each connection with what it read, upper-cased."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.sendall(connection.recv(1024).upper())

    threading.Thread(target=serve, daemon=True).start()
    yield port
    server.close()


def start_proxy(listen_port: int, target_port: int) -> subprocess.Popen:
    (proxy,) = instance()["spec"]["sidecars"]
    node = shutil.which("node")
    assert node, "the tests need Node.js (the Debian package nodejs) to run the proxy as rendered"
    environment = {
        **os.environ,
        "LISTEN_HOST": POD_IP,
        "LISTEN_PORT": str(listen_port),
        "TARGET_HOST": "127.0.0.1",
        "TARGET_PORT": str(target_port),
    }
    command = [node, *proxy["command"][1:]]
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_listening(process, POD_IP, listen_port)
    return process


def _wait_listening(process: subprocess.Popen, host: str, port: int) -> None:
    for _ in range(500):
        if process.poll() is not None:
            raise AssertionError(f"the proxy exited: {process.stderr.read().decode() if process.stderr else ''}")
        try:
            socket.create_connection((host, port), timeout=0.1).close()
            return
        except OSError:
            threading.Event().wait(0.01)
    raise AssertionError(f"the proxy never listened on {host}:{port}")


def test_the_proxy_carries_a_connection_from_the_pod_ip_to_the_loopback_listener(paperclip) -> None:
    port = free_port()
    process = start_proxy(port, paperclip)
    try:
        with socket.create_connection((POD_IP, port), timeout=5) as client:
            client.sendall(b"hello")
            assert client.recv(1024) == b"HELLO"
    finally:
        stop_process(process, grace_seconds=5)


def test_the_proxy_listens_on_the_pod_ip_only(paperclip) -> None:
    port = free_port()
    process = start_proxy(port, paperclip)
    try:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.3", port), timeout=5)
    finally:
        stop_process(process, grace_seconds=5)
