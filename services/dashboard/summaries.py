"""What a page shows of one object, read from the object as the API server returns it. Pure.

A condition or a phase counts only when its observedGeneration equals the object's
metadata.generation (the program's own rule, docs/architecture.md invariant 11): otherwise the
summary says the object's newest change is still in progress.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str
    observed_generation: int | None
    last_transition_time: str


@dataclass(frozen=True)
class Summary:
    kind: str
    name: str
    resource_version: str
    generation: int | None
    observed_generation: int | None
    phase: str
    reason: str
    message: str
    ready: str
    """True, False or Unknown: the Ready condition of the current generation."""
    conditions: tuple[Condition, ...]

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def current(self) -> bool:
        """Whether the status speaks of the newest generation."""
        return self.generation is None or self.observed_generation == self.generation

    def to_wire(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "key": self.key,
            "resourceVersion": self.resource_version,
            "generation": self.generation,
            "observedGeneration": self.observed_generation,
            "phase": self.phase,
            "reason": self.reason,
            "message": self.message,
            "ready": self.ready,
            "current": self.current,
        }


def summary_of(obj: Mapping[str, Any]) -> Summary:
    """The summary of one object of a runtime kind. Pure."""
    metadata = obj.get("metadata") or {}
    raw_status = obj.get("status")
    status: Mapping[str, Any] = raw_status if isinstance(raw_status, Mapping) else {}
    generation = _integer(metadata.get("generation"))
    observed = _integer(status.get("observedGeneration"))
    conditions = tuple(_condition(item) for item in status.get("conditions") or () if isinstance(item, Mapping))
    ready = next((condition for condition in conditions if condition.type == "Ready"), None)
    ready_now = "Unknown"
    if ready is not None and (generation is None or (ready.observed_generation or observed) == generation):
        ready_now = ready.status
    phase = str(status.get("phase") or "")
    if generation is not None and observed != generation:
        phase = phase + " (in progress)" if phase else "Pending"
    return Summary(
        kind=str(obj.get("kind") or ""),
        name=str(metadata.get("name") or ""),
        resource_version=str(metadata.get("resourceVersion") or ""),
        generation=generation,
        observed_generation=observed,
        phase=phase,
        reason=str(status.get("reason") or (ready.reason if ready else "")),
        message=str(status.get("message") or (ready.message if ready else "")),
        ready=ready_now,
        conditions=conditions,
    )


def _condition(item: Mapping[str, Any]) -> Condition:
    return Condition(
        type=str(item.get("type") or ""),
        status=str(item.get("status") or "Unknown"),
        reason=str(item.get("reason") or ""),
        message=str(item.get("message") or ""),
        observed_generation=_integer(item.get("observedGeneration")),
        last_transition_time=str(item.get("lastTransitionTime") or ""),
    )


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
