"""What a render says about the statuses it would write: objects per phase, the first failing ones.

The counting is the program's own (`planning.summary`, which a run also logs); this module reads
it from rendered status documents and words it as the render's summary line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from planning.frozen import freeze
from planning.objects import StatusUpdate
from planning.summary import RunSummary
from planning.summary import summarize as summarize_statuses
from providers.snapshot_file import IgnoredKind

NAMED_PROBLEMS = 3
NAMED_KINDS = 3


def counted(number: int, singular: str, plural: str | None = None) -> str:
    """Pure. `1 status`, `0 statuses`, `2 statuses`: the noun agrees with the number."""
    return f"{number} {singular if number == 1 else plural or singular + 's'}"


def listed(parts: list[str]) -> str:
    """Pure. `a`, `a and b`, `a, b and c`."""
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)


def not_read(ignored: tuple[IgnoredKind, ...]) -> str:
    """Pure. `not read: 3 objects of kinds the program does not use (Widget example.com/v1 2, ...)`; empty without any."""
    if not ignored:
        return ""
    total = sum(entry.count for entry in ignored)
    kinds = "a kind" if len(ignored) == 1 else "kinds"
    named = ", ".join(f"{entry.kind} {entry.api_version} {entry.count}" for entry in ignored[:NAMED_KINDS])
    more = len(ignored) - NAMED_KINDS
    named += f" and {counted(more, 'more kind')}" if more > 0 else ""
    return f"not read: {counted(total, 'object')} of {kinds} the program does not use ({named})"


def summarize(statuses: Iterable[Mapping[str, Any]]) -> RunSummary:
    """Pure. The run summary of rendered status documents (identity and `status`)."""
    return summarize_statuses(
        StatusUpdate(
            api_version=str(document.get("apiVersion", "")),
            kind=str(document.get("kind", "")),
            namespace=str((document.get("metadata") or {}).get("namespace") or ""),
            name=str((document.get("metadata") or {}).get("name", "")),
            status=freeze(document.get("status") or {}),
        )
        for document in statuses
    )


def describe(summary: RunSummary) -> str:
    """Pure. `phases: Ready 8, Failed 1; unhealthy: ModelActivation ai-system/x Failed: InvalidSpec`."""
    if not summary.phases:
        return "no status"
    text = "phases: " + ", ".join(f"{phase} {count}" for phase, count in summary.phases)
    if summary.problems:
        named = "; ".join(
            f"{problem.identity} {problem.phase}"
            + (f": {problem.reason or problem.message}" if problem.reason or problem.message else "")
            for problem in summary.problems[:NAMED_PROBLEMS]
        )
        more = len(summary.problems) - NAMED_PROBLEMS
        text += f"; unhealthy: {named}" + (f" (and {more} more)" if more > 0 else "")
    return text
