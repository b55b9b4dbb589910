"""services/readiness.py: READY=1 to NOTIFY_SOCKET when a service manager asks for it."""

from __future__ import annotations

import os
import socket

from services.readiness import NOTIFY_SOCKET, notify_ready


def test_without_notify_socket_nothing_is_sent():
    assert notify_ready({}) is False


def test_ready_reaches_the_abstract_socket_the_environment_names():
    name = f"magicstick-readiness-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as channel:
        channel.bind("\0" + name)
        assert notify_ready({NOTIFY_SOCKET: "@" + name}) is True
        channel.settimeout(5)
        assert channel.recv(64) == b"READY=1"


def test_ready_reaches_a_socket_file(tmp_path):
    path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as channel:
        channel.bind(str(path))
        assert notify_ready({NOTIFY_SOCKET: str(path)}) is True
        channel.settimeout(5)
        assert channel.recv(64) == b"READY=1"


def test_a_socket_nobody_listens_on_is_not_the_services_failure(tmp_path):
    assert notify_ready({NOTIFY_SOCKET: str(tmp_path / "nobody")}) is False
