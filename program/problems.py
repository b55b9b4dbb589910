"""One warning per operation that did not happen in this run, through Pulumi's log API.

The dynamic providers return what went wrong as their `problem` output (providers/outcomes.py);
the status of the object concerned shows it. A status write that was itself refused cannot show
its own problem, and the dynamic provider process has no connection to the engine's log (its
`pulumi.log` prints to its own stderr), so the program logs every problem once the outputs are
known: a warning attached to the resource, which `pulumi up` and the operator's log show.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

import pulumi

from providers.outcomes import Problem, problem_from


def describe(problem: Problem) -> str:
    """`StatusWriteRefused: 403 Forbidden: ...; tried again on the next run`. Pure."""
    when = "tried again on the next run" if problem.retried else "tried again when its inputs change"
    return f"{problem.reason}: {problem.message}; {when}"


def warn_on_problems(operations: Iterable[pulumi.Resource]) -> None:
    """Once each resource's `problem` output is known, log it as a warning on the resource."""
    for operation in operations:
        problem = getattr(operation, "problem", None)
        if isinstance(problem, pulumi.Output):
            problem.apply(partial(_warn, operation))


def _warn(resource: pulumi.Resource, value: Any) -> None:
    problem = problem_from(value)
    if problem is not None:
        pulumi.log.warn(describe(problem), resource=resource)
