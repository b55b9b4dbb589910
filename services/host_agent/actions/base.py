"""What every action is: the steps the engine (services/host_agent/engine.py) calls, in order.

check   -> a refusal of this request on this host (a field and its rule), or None
wait    -> a non-terminal status to hold at (clear-model-cache: the node is busy), or None
announce-> the status written before the host is touched ("after the status says so")
journal -> what the `started` entry must keep to recover (a network change: the old files)
execute -> act; the Step says what the status and the journal become
recover -> the entry says `started` and nothing more: the outcome after a crash or reboot; with
           a `cause`, the outcome after execute or follow raised it (the engine's rule: any
           error in an action ends that operation, from what the host shows now)
follow  -> the entry says `applied`, or `finished` with a non-terminal phase: the next Step
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from api.hostoperations import TERMINAL_PHASES, HostOperationReason, HostPhase
from services.host_agent.cluster import AgentCluster
from services.host_agent.commands import CommandRunner
from services.host_agent.evidence import HostView
from services.host_agent.journal import Entry, Outcome, Stage
from services.host_agent.requests import HostOperation
from services.host_agent.settings import AgentSettings


@dataclass(frozen=True)
class ActionContext:
    settings: AgentSettings
    host: HostView
    cluster: AgentCluster
    runner: CommandRunner
    now: datetime


@dataclass(frozen=True)
class Step:
    outcome: Outcome
    stage: Stage = Stage.FINISHED
    data: dict[str, Any] = field(default_factory=dict)
    """Replaces the entry's data when not empty."""

    @property
    def terminal(self) -> bool:
        return self.outcome.phase in TERMINAL_PHASES


def interrupted_by(cause: str) -> str:
    """How the action was interrupted: the agent stopped (no cause), or the action failed."""
    return f"failed ({cause})" if cause else "was interrupted (the agent stopped)"


def uncertain(entry: Entry, known: str = "", *, cause: str = "") -> Outcome:
    """The outcome of an action interrupted between its `started` entry and its end: the agent
    stopped (no cause), or the action raised `cause`."""
    extra = f" {known}" if known else ""
    stopped = (
        f"then failed before recording its end ({cause})"
        if cause
        else "then the agent stopped before recording its end"
    )
    return Outcome(
        phase=HostPhase.FAILED,
        reason=HostOperationReason.OUTCOME_UNCERTAIN.value,
        message=(
            f"{entry.action} started at {entry.started_at} in boot {entry.boot_id}, {stopped}; whether it completed is not known, "
            f"and it is not repeated.{extra} Check the host, then make a new request if needed."
        ),
    )


class Action:
    """The defaults: no extra check, no waiting, nothing to keep, an interruption is uncertain."""

    action: str = ""

    def check(self, operation: HostOperation, context: ActionContext) -> Outcome | None:
        return None

    def wait(self, operation: HostOperation, context: ActionContext) -> Outcome | None:
        return None

    def announce(self, operation: HostOperation) -> Outcome:
        return Outcome(
            phase=HostPhase.RUNNING,
            reason=HostOperationReason.IN_PROGRESS.value,
            message=f"{self.action} is running on the host",
        )

    def journal(self, operation: HostOperation, context: ActionContext) -> dict[str, Any]:
        return {}

    def execute(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step:
        raise NotImplementedError

    def recover(self, operation: HostOperation, context: ActionContext, entry: Entry, *, cause: str = "") -> Outcome:
        return uncertain(entry, cause=cause)

    def follow(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step | None:
        return None
