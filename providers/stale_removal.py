"""Removing one generated object that nothing declares any more (planning/stale.py), as a
dynamic resource.

Rules:
- the deletion carries the object's UID as a precondition: an object recreated under the same
  name since it was observed is left alone;
- outcomes, not errors: removed, already gone, replaced meanwhile (409), or failed (any other
  answer, or no answer, with the server's message). A failure concerns this one object, so
  it never fails the run (invariant 5): it is recorded in the outputs as `outcome` Failed and
  as the `problem` StaleRemovalFailed (or ClusterUnreachable), which the Appliance's status
  shows in the same run, and `diff` asks for the removal to be made again on the next run;
- `read` returns what was recorded (the removal is an event, not an object to refresh) and
  `delete` does nothing: once the object is gone the plan stops declaring its removal.

The inputs name the object, nothing else; cluster access comes from the stack's configuration
(providers/cluster_access.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from api.vocabulary import ProblemReason
from planning import stale as planned_stale
from planning.provider_wire import PROBLEM_OUTPUT
from providers.cluster_access import ClusterResourceProvider, without_legacy_access
from providers.kinds import KUSTOMIZATION
from providers.kube import Conflict, KubeClient, KubeError, NotFound, ResourceKind, open_client
from providers.outcomes import Problem, kube_problem, retry_requested, with_problem

REMOVABLE_KINDS: Final = {(f"{KUSTOMIZATION.group}/{KUSTOMIZATION.version}", KUSTOMIZATION.kind): KUSTOMIZATION}
"""The kinds whose generated objects the program removes when it finds them stale."""
INPUT_PROPERTIES: Final = ("apiVersion", "kind", "namespace", "name", "uid")


class RemovalOutcome(StrEnum):
    REMOVED = "Removed"
    ALREADY_GONE = "AlreadyGone"
    REPLACED = "Replaced"
    """Another object (another UID) holds the name now; it is not this decision's to remove."""
    FAILED = "Failed"
    """The API server refused the deletion, or could not be reached; tried again on the next run."""


@dataclass(frozen=True)
class StaleTarget(planned_stale.StaleTarget):
    """The inputs of one StaleRemoval resource (planning.stale.StaleTarget.to_inputs)."""

    @property
    def resource_kind(self) -> ResourceKind:
        return REMOVABLE_KINDS[(self.api_version, self.kind)]


def remove_stale(client: KubeClient, target: StaleTarget) -> tuple[RemovalOutcome, Problem | None]:
    """Delete `target` while it still has its UID; the outcome, and the problem when it failed."""
    try:
        client.delete(target.resource_kind, target.name, target.namespace, uid=target.uid)
    except NotFound:
        return RemovalOutcome.ALREADY_GONE, None
    except Conflict:
        return RemovalOutcome.REPLACED, None
    except KubeError as error:
        return RemovalOutcome.FAILED, kube_problem(error, refused=ProblemReason.STALE_REMOVAL_FAILED)
    return RemovalOutcome.REMOVED, None


class StaleRemovalProvider(ClusterResourceProvider):
    """Removes one stale generated object under its UID."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = without_legacy_access(news)
        failures = [
            CheckFailure(p, f"{p} is required")
            for p in INPUT_PROPERTIES
            if not isinstance(inputs.get(p), str) or not inputs[p]
        ]
        if not failures and (inputs["apiVersion"], inputs["kind"]) not in REMOVABLE_KINDS:
            failures.append(
                CheckFailure("kind", f"{inputs['kind']} ({inputs['apiVersion']}) is not a kind the program removes")
            )
        return CheckResult(inputs, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [p for p in INPUT_PROPERTIES if olds.get(p) != news.get(p)]
        if olds.get("outcome") == RemovalOutcome.FAILED or retry_requested(olds):
            replaces.append("outcome")
        return DiffResult(changes=bool(replaces), replaces=replaces, delete_before_replace=True)

    def create(self, props: dict[str, Any]) -> CreateResult:
        target = StaleTarget.from_inputs(props)
        with open_client(self.cluster_access()) as client:
            outcome, problem = remove_stale(client, target)
        message = "" if problem is None else problem.message
        outputs = {**without_legacy_access(props), "outcome": outcome.value, "message": message}
        return CreateResult(id_=f"{target.namespace}/{target.name}/{target.uid}", outs=with_problem(outputs, problem))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        recorded = {
            "outcome": olds.get("outcome"),
            "message": olds.get("message", ""),
            PROBLEM_OUTPUT: olds.get(PROBLEM_OUTPUT),
        }
        return UpdateResult(outs={**without_legacy_access(news), **recorded})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_=id_, outs=without_legacy_access(props))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None
