"""Conditions whose timestamps move only on a transition (invariant 4: a converged run writes nothing).

Every status carries the kstatus conditions that `kubectl wait` and Flux health checks read:
`Ready` (normal-true, always present), and `Reconciling` or `Stalled` (abnormal-true, present
only while True: api.vocabulary.reconciles and api.vocabulary.stalls decide). Each condition
carries the generation it was computed for.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from api.meta import API_VERSION
from api.vocabulary import ConditionStatus, ConditionType, Phase, StatusReason, reconciles, stalls
from planning.frozen import freeze
from planning.intent import Parsed
from planning.objects import StatusUpdate

READY: Final = ConditionType.READY


def rfc3339(moment: datetime) -> str:
    """Format `moment` as Kubernetes does: UTC, whole seconds, trailing Z."""
    return moment.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(
    *,
    previous_status: Mapping[str, Any],
    condition_type: ConditionType,
    status: bool,
    reason: StatusReason,
    message: str,
    now: datetime,
    generation: int | None = None,
) -> dict[str, Any]:
    """A condition dict; lastTransitionTime is kept from `previous_status` unless status flips.
    `generation` is the object's generation the condition was computed for."""
    wire_status = ConditionStatus.TRUE if status else ConditionStatus.FALSE
    since = rfc3339(now)
    for previous in previous_status.get("conditions") or ():
        if (
            isinstance(previous, Mapping)
            and previous.get("type") == condition_type
            and previous.get("status") == wire_status
            and previous.get("lastTransitionTime")
        ):
            since = str(previous["lastTransitionTime"])
    found: dict[str, Any] = {
        "type": str(condition_type),
        "status": str(wire_status),
        "reason": str(reason),
        "message": message,
        "lastTransitionTime": since,
    }
    if generation is not None:
        found["observedGeneration"] = generation
    return found


def kstatus_conditions(
    *,
    previous_status: Mapping[str, Any],
    phase: Phase,
    reason: StatusReason,
    message: str,
    generation: int | None,
    now: datetime,
) -> list[dict[str, Any]]:
    """Ready, then Reconciling while the object is on its way or Stalled while someone must act. Pure."""

    def made(condition_type: ConditionType, status: bool) -> dict[str, Any]:
        return condition(
            previous_status=previous_status,
            condition_type=condition_type,
            status=status,
            reason=reason,
            message=message,
            now=now,
            generation=generation,
        )

    found = [made(ConditionType.READY, phase == Phase.READY)]
    if stalls(phase, reason):
        found.append(made(ConditionType.STALLED, True))
    elif reconciles(phase, reason):
        found.append(made(ConditionType.RECONCILING, True))
    return found


def status_update(
    parsed: Parsed[Any],
    *,
    phase: Phase,
    reason: StatusReason,
    message: str,
    now: datetime,
    extra: Mapping[str, Any] | None = None,
) -> StatusUpdate:
    """The status of one runtime object: phase, reason, message, observedGeneration, the kstatus
    conditions, and kind-specific fields (None values left out)."""
    generation = parsed.obj.meta.generation
    status: dict[str, Any] = {
        "phase": str(phase),
        "reason": str(reason),
        "message": message,
        "observedGeneration": generation,
        "conditions": kstatus_conditions(
            previous_status=parsed.obj.status,
            phase=phase,
            reason=reason,
            message=message,
            generation=generation,
            now=now,
        ),
    }
    status.update({key: value for key, value in (extra or {}).items() if value is not None})
    return StatusUpdate(
        api_version=API_VERSION,
        kind=parsed.obj.kind,
        namespace=parsed.obj.meta.namespace or "",
        name=parsed.name,
        status=freeze(status),
    )
