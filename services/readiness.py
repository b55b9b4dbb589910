"""Readiness notification by the service manager protocol (sd_notify), for any service here.

When the environment names NOTIFY_SOCKET (systemd sets it for `Type=notify` units; a test that
starts a service sets it too), a service sends `READY=1` there once it serves. Without it,
nothing happens: Kubernetes reads readiness from the probes instead.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

NOTIFY_SOCKET = "NOTIFY_SOCKET"


def notify_ready(environ: Mapping[str, str] = os.environ) -> bool:
    """Send `READY=1` to NOTIFY_SOCKET when it is set; True when sent. A failure to send is the
    manager's problem, not the service's: it is ignored (False)."""
    address = environ.get(NOTIFY_SOCKET)
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as channel:
            channel.sendto(b"READY=1", address)
    except OSError:
        return False
    return True
