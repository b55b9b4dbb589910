"""One pass over the HostOperations of this node, with the recovery contract.

For each operation bound to this node's UID, in name order:

1. a journal entry exists: the operation was started before. `started` only: the action's
   `recover` decides (uncertain unless the action knows better); `applied`, or `finished` with
   a non-terminal phase: the action's `follow` moves it on; `finished` and terminal: its
   recorded outcome is (re)written. Nothing is ever started twice.
2. a terminal status and no entry: nothing to do.
3. otherwise the bindings are checked again (spec.nodeName must be the node whose UID it names,
   then spec.requestID must be no other operation's that came first (requests.duplicate_problem,
   decided over every node's operations), then requests.binding_problem, then the action's own
   `check`): a refusal is written and the host is not touched;
4. the action may hold (`wait`): its status is written and the next pass looks again;
5. the status says what is about to happen, the `started` entry is made durable, the action
   runs, the `finished` (or `applied`) entry is made durable, then the status is written.

Status writes carry observedGeneration and a lastTransitionTime that moves only when the phase
does; a status that would not change is not written. What a status says is printable text
(actions/text.py): no terminal escape or line break from a host or a request reaches kubectl.

Errors: an operation's error never ends the pass, the next operation is handled anyway.
- A transient refusal of the API server (actions/errors.py) or a journal that cannot be
  written: the operation is left as it is and tried again on the next pass.
- Any other error (a permanent refusal, an OSError, a bug): that operation ends. Before its
  `started` entry nothing on the host was changed: Failed (CommandFailed), saying so. After
  it, the action's `recover` tells from the host what happened, given the cause (a network
  change is rolled back; OutcomeUncertain where the host cannot tell); the ended entry is
  recorded, so it is never started again.
- An ended entry keeps only the data its last step gives (never the `started` entry's saved
  files, which may hold an earlier Wi-Fi password).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any

from api.hostoperations import TERMINAL_PHASES, HostOperationReason
from providers.kube import KubeError
from services.host_agent.actions.base import Action, ActionContext, Step, uncertain
from services.host_agent.actions.errors import described, transient
from services.host_agent.actions.registry import ACTIONS
from services.host_agent.actions.text import one_line
from services.host_agent.evidence import rfc3339
from services.host_agent.failpoints import Failpoint, reach
from services.host_agent.journal import Entry, Journal, JournalError, Outcome, Stage
from services.host_agent.requests import (
    HostOperation,
    binding_problem,
    duplicate_problem,
    failed,
    request_id_holders,
)

LOGGER = logging.getLogger("services.host_agent")


def status_of(operation: HostOperation, outcome: Outcome, now: datetime) -> dict[str, Any]:
    """The whole status `outcome` gives `operation` at `now`. Pure."""
    previous = operation.status
    moved = previous.get("phase") != outcome.phase or not previous.get("lastTransitionTime")
    status: dict[str, Any] = {
        "phase": outcome.phase,
        "reason": outcome.reason,
        "message": one_line(outcome.message),
        "observedGeneration": operation.generation,
        "requestID": one_line(operation.request_id),
        "lastTransitionTime": rfc3339(now) if moved else previous["lastTransitionTime"],
        **outcome.details,
    }
    return status


def _same(status: Mapping[str, Any], previous: Mapping[str, Any]) -> bool:
    return all(previous.get(key) == value for key, value in status.items()) and set(previous) <= set(status)


@dataclass
class Engine:
    journal: Journal
    context: ActionContext

    def write(self, operation: HostOperation, outcome: Outcome) -> None:
        status = status_of(operation, outcome, self.context.now)
        if _same(status, operation.status):
            return
        self.context.cluster.write_status(operation.name, status)
        LOGGER.info("HostOperation %s: %s (%s) %s", operation.key, outcome.phase, outcome.reason, outcome.message)

    def run_once(self, objects: list[dict[str, Any]]) -> None:
        operations = sorted((HostOperation.from_object(obj) for obj in objects), key=lambda op: op.name)
        mine = [op for op in operations if op.node_uid == self.context.host.node_uid]
        holders = request_id_holders(operations)
        for operation in mine:
            cause = self._failure(operation, partial(self.handle, operation, holders))
            if cause is not None:
                ended = self._failure(operation, partial(self._end, operation, cause))
                if ended is not None:
                    LOGGER.error(
                        "HostOperation %s: %s, and its end cannot be recorded: %s; tried again on the next pass",
                        operation.key,
                        cause,
                        ended,
                    )
        self._forget(frozenset(op.uid for op in operations))

    def _failure(self, operation: HostOperation, step: Callable[[], None]) -> str | None:
        """Run `step`; the error that must end `operation`, or None (it returned, or the error
        passes: it is logged and the next pass tries again)."""
        try:
            step()
        except JournalError as error:
            LOGGER.error("HostOperation %s: %s; tried again on the next pass", operation.key, error)
        except KubeError as error:
            if not transient(error):
                return described(error)
            LOGGER.warning("HostOperation %s: %s; tried again on the next pass", operation.key, error)
        # The one place that catches every Exception, by the rule the module docstring states:
        # an error in one action ends that operation, never the agent nor the other operations.
        # KeyboardInterrupt and SystemExit are BaseExceptions: they still stop the agent.
        except Exception as error:  # noqa: BLE001
            LOGGER.error("HostOperation %s: %s", operation.key, described(error))
            return described(error)
        return None

    def _end(self, operation: HostOperation, cause: str) -> None:
        """End `operation` after `cause` (the rule of the module docstring)."""
        action = ACTIONS.get(operation.action)
        entry = self.journal.read(operation.uid)
        if action is None or entry is None:
            self.write(
                operation,
                failed(
                    HostOperationReason.COMMAND_FAILED,
                    f"{operation.action} could not be carried out: {cause}; nothing on the host was changed",
                ),
            )
            return
        if entry.stage is Stage.FINISHED and entry.outcome is not None and entry.outcome.phase in TERMINAL_PHASES:
            LOGGER.error(
                "HostOperation %s: its recorded outcome (%s) cannot be written: %s",
                operation.key,
                entry.outcome.phase,
                cause,
            )
            return
        found: list[Outcome] = []

        def recover() -> None:
            found.append(action.recover(operation, self.context, entry, cause=cause))

        self._failure(operation, recover)
        terminal = [outcome for outcome in found if outcome.phase in TERMINAL_PHASES]
        self._record(operation, entry, Step(terminal[0] if terminal else uncertain(entry, cause=cause)))

    def _forget(self, existing: frozenset[str]) -> None:
        for uid in self.journal.operation_uids() - existing:
            try:
                self.journal.remove(uid)
            except JournalError as error:
                LOGGER.error("%s; tried again on the next pass", error)

    def handle(self, operation: HostOperation, holders: Mapping[str, HostOperation]) -> None:
        """`holders`: the operation that keeps each request ID (requests.request_id_holders)."""
        action = ACTIONS.get(operation.action)
        entry = self.journal.read(operation.uid)
        if entry is not None and action is not None:
            self._resume(operation, action, entry)
            return
        if operation.terminal:
            return
        if action is None:
            self.write(
                operation,
                failed(
                    HostOperationReason.REJECTED, f"spec.action: {operation.action!r} is not an action of this agent"
                ),
            )
            return
        problem = self._misbound(operation)
        problem = problem or duplicate_problem(operation, holders)
        problem = problem or binding_problem(
            operation, boot_id=self.context.host.facts.boot_id, plans=self.context.host.plans.by_action()
        )
        problem = problem or action.check(operation, self.context)
        if problem is not None:
            self.write(operation, problem)
            return
        hold = action.wait(operation, self.context)
        if hold is not None:
            self.write(operation, hold)
            return
        self._start(operation, action)

    def _misbound(self, operation: HostOperation) -> Outcome | None:
        """The operation is bound to this node by its UID; a spec naming another node as well
        disagrees with itself and is not run."""
        if operation.spec is None:
            return None  # binding_problem names the spec's error
        name = operation.spec.node_name
        if name == self.context.settings.node_name:
            return None
        return failed(
            HostOperationReason.REJECTED,
            f"spec.nodeName {name!r} and spec.nodeUID {operation.node_uid} disagree: that UID is node {self.context.settings.node_name}'s; "
            "the request is not run: make it again with the name and the UID of one node",
        )

    def _start(self, operation: HostOperation, action: Action) -> None:
        announced = action.announce(operation)
        self.write(operation, announced)
        operation = replace(operation, status=status_of(operation, announced, self.context.now))
        entry = Entry(
            operation_uid=operation.uid,
            operation=operation.key,
            request_id=operation.request_id,
            action=operation.action,
            boot_id=self.context.host.facts.boot_id,
            stage=Stage.STARTED,
            started_at=rfc3339(self.context.now),
            data=action.journal(operation, self.context),
        )
        self.journal.write(entry)
        reach(Failpoint.JOURNAL_WRITTEN)
        step = action.execute(operation, self.context, entry)
        reach(Failpoint.ACTION_DONE)
        self._record(operation, entry, step)

    def _record(self, operation: HostOperation, entry: Entry, step: Step) -> None:
        if step.stage is Stage.FINISHED:
            entry = replace(entry.finished(step.outcome, rfc3339(self.context.now)), data=step.data)
        else:
            entry = replace(entry, stage=step.stage, outcome=step.outcome, data=step.data or entry.data)
        self.journal.write(entry)
        self.write(operation, step.outcome)

    def _resume(self, operation: HostOperation, action: Action, entry: Entry) -> None:
        if entry.stage is Stage.STARTED:
            self._record(operation, entry, Step(action.recover(operation, self.context, entry)))
            return
        assert entry.outcome is not None
        if entry.stage is Stage.FINISHED and entry.outcome.phase in TERMINAL_PHASES:
            self.write(operation, entry.outcome)
            return
        step = action.follow(operation, self.context, entry)
        if step is None:
            self.write(operation, entry.outcome)
            return
        self._record(operation, entry, step)
