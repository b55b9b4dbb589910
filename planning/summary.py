"""What a run amounts to, in a few lines: objects per phase and the ones that need attention.

Pure: the program logs it through Pulumi's log API, `render` prints it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from api.vocabulary import Phase
from planning.conditions import READY
from planning.frozen import FrozenMap
from planning.objects import StatusUpdate

ATTENTION_PHASES = frozenset({Phase.FAILED, Phase.DEGRADED, Phase.CONFLICT})
"""Phases that mean an object does not do what its spec asks, beyond waiting."""
NO_PHASE = "Unknown"


@dataclass(frozen=True)
class Problem:
    """One object in a phase that needs attention, with the reason its status gives."""

    kind: str
    namespace: str
    name: str
    phase: str
    reason: str
    message: str

    @property
    def identity(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    def describe(self) -> str:
        """`ModelActivation ai-system/llama is Failed: InvalidSpec: spec.engine: ...`."""
        detail = ": ".join(part for part in (self.reason, self.message) if part)
        return f"{self.identity} is {self.phase}" + (f": {detail}" if detail else "")


@dataclass(frozen=True)
class RunSummary:
    phases: tuple[tuple[str, int], ...]
    """(phase, number of objects), sorted by phase."""
    problems: tuple[Problem, ...]
    """Every Failed, Degraded or Conflict object, sorted by kind, namespace and name."""

    @property
    def failed(self) -> int:
        return sum(1 for problem in self.problems if problem.phase == Phase.FAILED)

    def counts(self) -> str:
        """`3 Ready, 1 Failed` style, or `no objects`."""
        return ", ".join(f"{count} {phase}" for phase, count in self.phases) or "no objects"


def summarize(statuses: Iterable[StatusUpdate]) -> RunSummary:
    """Count the planned statuses by phase and collect those that need attention. Pure."""
    counts: Counter[str] = Counter()
    problems = []
    for update in statuses:
        phase = str(update.status.get("phase") or NO_PHASE)
        counts[phase] += 1
        if phase in ATTENTION_PHASES:
            problems.append(
                Problem(
                    kind=update.kind,
                    namespace=update.namespace,
                    name=update.name,
                    phase=phase,
                    **_reason_and_message(update.status),
                )
            )
    problems.sort(key=lambda p: (p.kind, p.namespace, p.name))
    return RunSummary(phases=tuple(sorted(counts.items())), problems=tuple(problems))


def _reason_and_message(status: FrozenMap) -> dict[str, str]:
    """The status's own reason and message; Appliance/local keeps them in its Ready condition."""
    ready: Mapping[str, Any] = next((c for c in status.get("conditions") or () if c.get("type") == READY), {})
    return {
        "reason": str(status.get("reason") or ready.get("reason") or ""),
        "message": str(status.get("message") or ready.get("message") or ""),
    }
