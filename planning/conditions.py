"""Conditions whose timestamps move only on a transition (invariant 4: a converged run writes nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

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
