"""Conditions whose timestamps move only on a transition (invariant 4: a converged run writes nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from api.meta import API_VERSION
from planning.frozen import freeze
from planning.intent import Parsed
from planning.objects import StatusUpdate

READY = "Ready"


def rfc3339(moment: datetime) -> str:
    """Format `moment` as Kubernetes does: UTC, whole seconds, trailing Z."""
    return moment.astimezone(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(
    *,
    previous_status: Mapping[str, Any],
    condition_type: str,
    status: bool,
    reason: str,
    message: str,
    now: datetime,
) -> dict[str, str]:
    """A condition dict; lastTransitionTime is kept from `previous_status` unless status flips."""
    wire_status = "True" if status else "False"
    since = rfc3339(now)
    for previous in previous_status.get("conditions") or ():
        if (
            isinstance(previous, Mapping)
            and previous.get("type") == condition_type
            and previous.get("status") == wire_status
            and previous.get("lastTransitionTime")
        ):
            since = str(previous["lastTransitionTime"])
    return {
        "type": condition_type,
        "status": wire_status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }


def status_update(
    parsed: Parsed[Any],
    *,
    phase: str,
    reason: str,
    message: str,
    now: datetime,
    extra: Mapping[str, Any] | None = None,
) -> StatusUpdate:
    """The status of one runtime object: phase, reason, message, observedGeneration, the Ready
    condition, and kind-specific fields (None values left out)."""
    status: dict[str, Any] = {
        "phase": phase,
        "reason": reason,
        "message": message,
        "observedGeneration": parsed.obj.meta.generation,
        "conditions": [
            condition(previous_status=parsed.obj.status, condition_type=READY, status=phase == READY, reason=reason, message=message, now=now)
        ],
    }
    status.update({key: value for key, value in (extra or {}).items() if value is not None})
    return StatusUpdate(
        api_version=API_VERSION,
        kind=parsed.obj.kind,
        namespace=parsed.obj.meta.namespace or "",
        name=parsed.name,
        status=freeze(status),
    )
