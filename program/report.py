"""One log line per run, one warning per object that needs attention and one per image still to
set, through Pulumi's log API.

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
    """Log the run's summary (info), every Failed, Degraded or Conflict object with its reason
    and every unset image slot once, however many activations wait on it (warnings)."""
    summary = summarize(plan.statuses)
    pulumi.log.info(run_line(plan, summary))
    for problem in summary.problems:
        pulumi.log.warn(problem.describe())
    for image in plan.unset_images:
        pulumi.log.warn(image.describe())
    return summary
