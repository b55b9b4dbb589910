"""reboot and poweroff, through systemd, once the status says so.

The status is written first (Running: Rebooting / PoweringOff), then the `started` entry, then
`systemctl reboot|poweroff`. The operation completes after the next boot: the boot ID has
changed since the entry was written. Found again in the same boot, it is uncertain.
"""

from __future__ import annotations

from api.hostoperations import HostOperationReason, HostPhase
from services.host_agent.actions.base import Action, ActionContext, Step, uncertain
from services.host_agent.journal import Entry, Outcome
from services.host_agent.requests import HostOperation


class PowerAction(Action):
    def __init__(self, action: str, verb: str, reason: HostOperationReason, doing: str) -> None:
        self.action = action
        self._verb = verb
        self._reason = reason
        self._doing = doing

    def announce(self, operation: HostOperation) -> Outcome:
        return Outcome(
            phase=HostPhase.RUNNING,
            reason=self._reason.value,
            message=f"the host is {self._doing} now (systemctl {self._verb})",
        )

    def execute(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step:
        result = context.runner.run(["systemctl", self._verb])
        if not result.ok:
            return Step(
                Outcome(
                    phase=HostPhase.FAILED, reason=HostOperationReason.COMMAND_FAILED.value, message=result.failure()
                )
            )
        return Step(self.announce(operation))

    def _completed(self, entry: Entry, context: ActionContext) -> Outcome:
        return Outcome(
            phase=HostPhase.SUCCEEDED,
            reason=HostOperationReason.COMPLETED.value,
            message=f"{self.action} completed: the host left boot {entry.boot_id} and runs boot {context.host.facts.boot_id}",
        )

    def recover(self, operation: HostOperation, context: ActionContext, entry: Entry, *, cause: str = "") -> Outcome:
        if context.host.facts.boot_id != entry.boot_id:
            return self._completed(entry, context)
        return uncertain(entry, f"The host still runs boot {entry.boot_id}.", cause=cause)

    def follow(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step | None:
        if context.host.facts.boot_id != entry.boot_id:
            return Step(self._completed(entry, context))
        return None


REBOOT = PowerAction("reboot", "reboot", HostOperationReason.REBOOTING, "rebooting")
POWEROFF = PowerAction("poweroff", "poweroff", HostOperationReason.POWERING_OFF, "powering off")
