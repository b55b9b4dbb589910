"""One log line per run and one warning per object that needs attention, through Pulumi's log API.

`pulumi up`, `pulumi preview` and the operator's workspace log show them, so what happened is
readable without opening a status object.
"""

from __future__ import annotations

import pulumi

from planning.plan import Plan
from planning.summary import RunSummary, summarize


def run_line(plan: Plan, summary: RunSummary) -> str:
    """`magicstick: 42 objects planned; status: 5 Ready, 1 Failed`. Pure."""
    return f"magicstick: {len(plan.objects)} objects planned; status: {summary.counts()}"


def log_run(plan: Plan) -> RunSummary:
    """Log the run's summary (info) and every Failed, Degraded or Conflict object with its reason (warning)."""
    summary = summarize(plan.statuses)
    pulumi.log.info(run_line(plan, summary))
    for problem in summary.problems:
        pulumi.log.warn(problem.describe())
    return summary
