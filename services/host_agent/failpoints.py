"""Named points where a crash test kills the agent, as a power cut would.

`MAGICSTICK_HOST_AGENT_FAILPOINT=<name>` makes the process kill itself with SIGKILL when it
reaches that point: no handler, no cleanup, no flush, exactly what a crash leaves behind. Unset
(always, outside the crash tests), reaching a point does nothing.
"""

from __future__ import annotations

import os
import signal
from enum import StrEnum

FAILPOINT_VARIABLE = "MAGICSTICK_HOST_AGENT_FAILPOINT"


class Failpoint(StrEnum):
    JOURNAL_WRITTEN = "journal-written"
    """The `started` entry is durable; the action has not begun."""
    ACTION_DONE = "action-done"
    """The action ended; neither the `finished` entry nor the status is written."""


def reach(point: Failpoint) -> None:
    if os.environ.get(FAILPOINT_VARIABLE) == point.value:
        os.kill(os.getpid(), signal.SIGKILL)
