"""What happened to one object's operation: the `problem` output every dynamic provider returns.

Rules (the contract of every dynamic provider of this program):
- `create` and `update` never raise for a failure that concerns their one object. They return
  full outputs, and among them the key `problem` (PROBLEM_OUTPUT): an empty object when the
  operation did what was asked, else `{"reason": <ProblemReason>, "message": <the server's
  message or the cause>, "persistence": <Persistence>}` (`with_problem` and `problem_output`
  build them). Readers take null, absent and empty alike as "no problem" (`problem_from`);
- a problem is Temporary or Permanent, and that decides the next run. A Temporary problem (the
  world refused: 403, 409, 404, 429, 5xx, no answer, a full, contended or malformed store) is
  tried again on the next run whatever the inputs: `diff` reports a change (`retry_requested`).
  A Permanent one (the request itself is wrong: the server answered 400 or 422 to this very
  body) is tried again only when the inputs change: sending the same body again would only
  be refused again;
- the status written for the object takes these outputs as inputs and becomes Degraded with
  the problem's reason and message in the same run (providers/status_writer.py);
- only the run's own preconditions raise: a kubeconfig or service account that cannot be used
  at all (KubeConfigError), and inputs `check` should have refused (a programming error).

> **Why** — one failed object must not fail the run (invariant 5): under the Pulumi Kubernetes
> Operator three failed updates stall the Stack until a person intervenes, and every other
> object of the run would wait with it. "No problem" is `{}`, not null, because Pulumi's
> Python SDK reads a null output as unknown during a preview: every status write that takes
> it would then show a change in every preview, and a converged run would not look converged
> (invariant 4).

This module is pure: it names the outcomes and shapes their wire form, and imports nothing of
Pulumi (what a preview does not know yet is told apart in `providers/pulumi_values.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, TypedDict

from api.vocabulary import ProblemReason
from planning.provider_wire import PROBLEM_OUTPUT
from providers.kube import KubeConnectionError, KubeError

STARTING_REASONS: Final = frozenset({ProblemReason.REALTIME_API_UNAVAILABLE, ProblemReason.FREETOKEN_API_UNAVAILABLE})
"""Problems that leave their object Starting rather than Degraded: an API outage, not a fault."""


class Persistence(StrEnum):
    """Whether the next run tries the same operation again."""

    TEMPORARY = "Temporary"
    """The world refused; it can change without the inputs changing: retried on the next run."""
    PERMANENT = "Permanent"
    """The request is wrong: retried only when the inputs change."""


PERMANENT_CODES: Final = frozenset({400, 422})
"""HTTP statuses that refuse the request body itself."""


class ProblemOutput(TypedDict):
    """The wire form of a problem, as stored in outputs."""

    reason: str
    message: str
    persistence: str


@dataclass(frozen=True)
class Problem:
    """One failed operation of one object."""

    reason: ProblemReason | str
    """A ProblemReason; a plain string only when read back from a provider of another version."""
    message: str
    persistence: Persistence = Persistence.TEMPORARY

    @property
    def retried(self) -> bool:
        return self.persistence is Persistence.TEMPORARY

    def output(self) -> ProblemOutput:
        """The wire form. Pure."""
        return {"reason": str(self.reason), "message": self.message, "persistence": self.persistence.value}


def problem_output(
    reason: ProblemReason, message: str, persistence: Persistence = Persistence.TEMPORARY
) -> ProblemOutput:
    """The `problem` output of a failed operation. Pure."""
    return Problem(reason, message, persistence).output()


def problem_from(value: Any) -> Problem | None:
    """The problem a `problem` output holds; None for null, empty, absent or unknown values. Pure.

    Tolerant on purpose: outputs written by an older provider, or not yet known during a
    preview, read as no problem. A reason this version does not know stays a string; an
    unknown persistence reads as Temporary, so the operation is tried again.
    """
    if not isinstance(value, Mapping) or not isinstance(value.get("reason"), str) or not value["reason"]:
        return None
    reason = value["reason"]
    known = ProblemReason(reason) if reason in ProblemReason.__members__.values() else reason
    persistence = Persistence.PERMANENT if value.get("persistence") == Persistence.PERMANENT else Persistence.TEMPORARY
    return Problem(reason=known, message=str(value.get("message") or ""), persistence=persistence)


def kube_problem(error: KubeError, *, refused: ProblemReason, invalid: ProblemReason | None = None) -> Problem:
    """The problem of a failed Kubernetes request, with the server's Status as message. Pure.

    No answer at all is ClusterUnreachable; a 400 or 422 is Permanent and carries `invalid`
    when given; every other answer is `refused`, Temporary.
    """
    if isinstance(error, KubeConnectionError):
        return Problem(ProblemReason.CLUSTER_UNREACHABLE, error.detail)
    if error.code in PERMANENT_CODES:
        return Problem(invalid or refused, error.detail, Persistence.PERMANENT)
    return Problem(refused, error.detail)


def with_problem(outputs: Mapping[str, Any], problem: Problem | None) -> dict[str, Any]:
    """`outputs` with their `problem` key set: `{}` when the operation did what was asked. Pure."""
    return {**outputs, PROBLEM_OUTPUT: {} if problem is None else problem.output()}


def retry_requested(olds: Mapping[str, Any]) -> bool:
    """True when the stored outputs `olds` hold a Temporary problem: `diff` asks for a new try. Pure."""
    problem = problem_from(olds.get(PROBLEM_OUTPUT))
    return problem is not None and problem.retried
