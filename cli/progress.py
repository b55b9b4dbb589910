"""One line per stage on standard error, when someone is watching or asked for it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class Progress:
    """Stage lines (`magicstick render: planning`) written to `stream` when `enabled`."""

    command: str = "magicstick"
    enabled: bool = False
    stream: TextIO | None = None

    @classmethod
    def for_terminal(cls, *, command: str, verbose: bool) -> Progress:
        """Enabled by --verbose, or when standard error is a terminal (pipes and tests stay quiet)."""
        return cls(command=command, enabled=verbose or sys.stderr.isatty(), stream=sys.stderr)

    def stage(self, text: str) -> None:
        if self.enabled:
            print(f"{self.command}: {text}", file=self.stream or sys.stderr, flush=True)


QUIET = Progress()
