"""What the Pulumi Kubernetes Operator did with the Stack the program runs under. Pure.

Appliance/local.status shows it, so the one read model of the installation also says whether
the loop that keeps it converged is running:

- `operator.stack`: `<namespace>/<name>` of the Stack (`pulumi.com/v1`, `magicstick:stackName`
  in the system namespace);
- `operator.lastUpdate`: `result` (the Stack's `status.lastUpdate.state`, `succeeded` or
  `failed`), `commit` (the commit that update ran: `lastAttemptedCommit`, else
  `lastSuccessfulCommit`), `type` (`up`, `preview`, `refresh`, `destroy`) and `time`;
- the condition `OperatorStalled`: True with the Stack's own `Stalled` reason and message when
  the operator has stopped retrying (three failed updates, an invalid spec, an unavailable
  source), False (`NotStalled`) otherwise.

Without a Stack (a workstation or CI run, or PKO not installed) there is no `operator` field and
no `OperatorStalled` condition.

Invariant 4 (a converged run writes nothing): the operator reruns the program every resync, and
each run's update has a new name, permalink and `lastResyncTime`, so none of them is copied.
`time` is the `lastResyncTime` of the first update seen with this result, commit and type, and
is kept from the status written before while those three stay the same, as a condition keeps
its `lastTransitionTime`: it says since when the operator's updates have had this outcome.

Invariant 11: PKO records no generation on its conditions, only `status.observedGeneration`;
a Stalled condition counts only when that is the Stack's current generation (a Stack edited
since it stalled is being processed again).

Every string is cut at FIELD_LIMIT characters (the condition message at the status's
MESSAGE_LIMIT, by planning.status.bounded).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from api.peer_kinds import STACK
from api.vocabulary import ConditionType, ForeignReason, OperatorReason, StatusReason
from planning.conditions import condition
from planning.readiness import observed_generation_of
from planning.settings import PlanSettings
from planning.snapshot import GenericObject, Snapshot

STACK_KIND: Final = STACK.kind
STACK_API_VERSION: Final = STACK.api_version
OPERATOR_FIELD: Final = "operator"
"""The key of Appliance/local.status that holds what the operator did."""
OPERATOR_STALLED: Final = ConditionType.OPERATOR_STALLED
"""The Appliance/local condition that mirrors the Stack's Stalled condition."""
STALLED: Final = "Stalled"
FIELD_LIMIT: Final = 256
"""Characters of each string of `operator` (a commit of a Flux source reads `main@sha1:<40 hex>`)."""
_SAME_OUTCOME: Final = ("result", "commit", "type")
"""What makes two of the operator's updates one outcome: `time` moves only when one of these does."""


NOT_STALLED_MESSAGE: Final = "The operator is reconciling the stack."


@dataclass(frozen=True)
class OperatorReport:
    """Appliance/local.status.operator and the OperatorStalled condition, for one observed Stack."""

    operator: Mapping[str, Any]
    stalled: Mapping[str, str]


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    if len(text) <= FIELD_LIMIT:
        return text
    suffix = "…"
    return text[: FIELD_LIMIT - len(suffix)] + suffix


def operator_stack(snapshot: Snapshot, settings: PlanSettings) -> GenericObject | None:
    """The Stack the program runs under, when the snapshot holds it. Pure."""
    found = snapshot.generic(STACK_KIND, settings.system_namespace, settings.stack_name)
    return found if found is not None and found.api_version == STACK_API_VERSION else None


def _last_update(stack: GenericObject, reference: str, previous: Mapping[str, Any]) -> dict[str, str] | None:
    last = stack.status.get("lastUpdate")
    if not isinstance(last, Mapping):
        return None
    commit = last.get("lastAttemptedCommit") or last.get("lastSuccessfulCommit")
    entry = {"result": _text(last.get("state")), "commit": _text(commit), "type": _text(last.get("type"))}
    entry = {key: value for key, value in entry.items() if value}
    before = previous.get(OPERATOR_FIELD)
    before_update = before.get("lastUpdate") if isinstance(before, Mapping) else None
    if (
        isinstance(before, Mapping)
        and isinstance(before_update, Mapping)
        and before.get("stack") == reference
        and all(before_update.get(key) == entry.get(key) for key in _SAME_OUTCOME)
        and isinstance(before_update.get("time"), str)
        and before_update["time"]
    ):
        entry["time"] = before_update["time"]
    elif _text(last.get("lastResyncTime")):
        entry["time"] = _text(last.get("lastResyncTime"))
    return entry


def _stalled(stack: GenericObject) -> tuple[bool, StatusReason, str]:
    """Whether the Stack is Stalled for its current generation, with PKO's reason and message."""
    found = stack.condition(STALLED)
    if found is None or found.status != "True":
        return False, OperatorReason.NOT_STALLED, NOT_STALLED_MESSAGE
    if observed_generation_of(found, stack.status.get("observedGeneration")) != stack.meta.generation:
        return False, OperatorReason.NOT_STALLED, NOT_STALLED_MESSAGE
    return True, ForeignReason(found.reason) if found.reason else OperatorReason.STALLED, found.message


def operator_report(
    snapshot: Snapshot, settings: PlanSettings, *, previous_status: Mapping[str, Any], now: datetime
) -> OperatorReport | None:
    """What Appliance/local.status shows of the operator's Stack, or None without one. Pure.

    `previous_status` is the Appliance's status as observed: it keeps `lastUpdate.time` and
    the condition's `lastTransitionTime` while nothing changes (invariant 4).
    """
    stack = operator_stack(snapshot, settings)
    if stack is None:
        return None
    reference = f"{stack.meta.namespace}/{stack.meta.name}"
    operator: dict[str, Any] = {"stack": reference}
    last = _last_update(stack, reference, previous_status)
    if last:
        operator["lastUpdate"] = last
    stalled, reason, message = _stalled(stack)
    return OperatorReport(
        operator=operator,
        stalled=condition(
            previous_status=previous_status,
            condition_type=OPERATOR_STALLED,
            status=stalled,
            reason=reason,
            message=message,
            now=now,
        ),
    )
