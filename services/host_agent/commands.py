"""Host commands (systemctl, netplan, iw, modprobe), run without a shell, each with a deadline.

Commands are found on PATH (the unit sets it); a test puts recording stand-ins first on PATH,
so the agent runs exactly as on a node and the test reads what it asked the host to do.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def failure(self) -> str:
        """One line: what ran and how it failed (its last line of stderr)."""
        last = (self.stderr.strip().splitlines() or ["no output"])[-1]
        return f"`{' '.join(self.argv)}` exited with {self.returncode}: {last}"


class CommandRunner:
    def run(self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> CommandResult:
        """Run `argv`; a missing program or a timeout is a failed result (127, 124), not an exception."""
        command = tuple(argv)
        if shutil.which(command[0]) is None:
            return CommandResult(command, 127, "", f"{command[0]}: command not found on PATH")
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return CommandResult(command, 124, "", f"timed out after {timeout:g} seconds")
        return CommandResult(command, done.returncode, done.stdout, done.stderr)
