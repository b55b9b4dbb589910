"""Stopping a child process the way a service manager does: SIGTERM, then SIGKILL after a grace."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def stop_process(process: subprocess.Popen[Any], *, grace_seconds: float) -> int:
    """SIGTERM `process` (unless it has exited), SIGKILL it when it outlives `grace_seconds`;
    its exit status (negative: the signal that ended it)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=grace_seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace_seconds)
    return process.returncode
