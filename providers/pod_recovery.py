"""Deleting one terminal Pod of a KubeAI Model: one recovery attempt, as a dynamic resource.

Rules:
- the deletion carries the Pod's UID and resourceVersion as preconditions, so only the exact
  Pod the plan saw ended is removed: a Pod recreated under the same name, or one that changed
  since it was observed, is left alone;
- a failed precondition (409) and an absent Pod (404) are outcomes, not errors: the next run
  observes the world again and decides anew;
- a failure concerns this one ModelActivation and never fails the run (invariant 5): a
  conflict is the `problem` PodRecoveryConflict, Permanent, since the same preconditions can
  only fail again and the next plan, seeing the changed Pod, asks for another deletion;
  any other refusal, or no answer, is PodRecoveryRefused or ClusterUnreachable with the
  server's Status, Temporary: `diff` replaces the attempt on the next run, so it is made again;
- one attempt is one resource: its logical name carries the attempt number, so every attempt
  is created once and never updated. `read` returns the inputs (the deletion is an event, not
  an object to refresh) and `delete` does nothing.

The inputs name the Pod and the attempt, nothing else: `create` builds its own client from
the cluster access the stack's configuration names (providers/cluster_access.py).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from api.vocabulary import ProblemReason
from planning.models.recovery import RecoveryAttempt, TerminalPod
from planning.provider_wire import PROBLEM_OUTPUT
from providers.cluster_access import ClusterResourceProvider, without_legacy_access
from providers.kube import Conflict, KubeClient, KubeError, NotFound, ResourceKind, open_client
from providers.outcomes import (
    Persistence,
    Problem,
    kube_problem,
    retry_requested,
    with_problem,
)
from providers.pulumi_values import restore_integers

POD: Final = ResourceKind(group="", version="v1", kind="Pod", plural="pods", namespaced=True)
IDENTITY_PROPERTIES: Final = ("namespace", "pod", "podUID", "resourceVersion")
INPUT_PROPERTIES: Final = (*IDENTITY_PROPERTIES, "attempt")


class DeleteOutcome(StrEnum):
    """What one deletion attempt found, as recorded in the resource's outputs."""

    DELETED = "Deleted"
    CONFLICT = "Conflict"
    """The Pod is there but no longer the one observed: another UID or another resourceVersion."""
    ALREADY_GONE = "AlreadyGone"
    FAILED = "Failed"
    """The API server refused the deletion, or could not be reached; made again on the next run."""


def delete_terminal_pod(client: KubeClient, namespace: str, pod: TerminalPod) -> DeleteOutcome:
    """Delete exactly `pod` (same UID, same resourceVersion) from `namespace`."""
    return delete_exact_pod(
        client, namespace=namespace, name=pod.name, uid=pod.uid, resource_version=pod.resource_version
    )


def delete_exact_pod(
    client: KubeClient, *, namespace: str, name: str, uid: str, resource_version: str
) -> DeleteOutcome:
    """Delete the Pod `namespace/name` only while it has this UID and this resourceVersion."""
    outcome, _conflict = answered_deletion(
        client, namespace=namespace, name=name, uid=uid, resource_version=resource_version
    )
    return outcome


def answered_deletion(
    client: KubeClient, *, namespace: str, name: str, uid: str, resource_version: str
) -> tuple[DeleteOutcome, Conflict | None]:
    """As `delete_exact_pod`, with the server's answer to a failed precondition."""
    if not (uid and resource_version):
        raise ValueError(f"Pod {namespace}/{name}: a deletion without UID and resourceVersion preconditions is refused")
    try:
        client.delete(POD, name, namespace, uid=uid, resource_version=resource_version)
    except Conflict as error:
        return DeleteOutcome.CONFLICT, error
    except NotFound:
        return DeleteOutcome.ALREADY_GONE, None
    return DeleteOutcome.DELETED, None


class PodRecoveryProvider(ClusterResourceProvider):
    """Makes one recovery attempt: deletes one terminal Model Pod under identity preconditions."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = without_legacy_access(news)
        failures = [
            CheckFailure(p, f"{p} is required")
            for p in IDENTITY_PROPERTIES
            if not isinstance(inputs.get(p), str) or not inputs[p]
        ]
        attempt = restore_integers(inputs.get("attempt"))
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
            failures.append(CheckFailure("attempt", "attempt must be a whole number of at least 1"))
        normalised = {**inputs, "attempt": attempt} if not failures else inputs
        return CheckResult(normalised, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [p for p in INPUT_PROPERTIES if olds.get(p) != news.get(p)]
        if retry_requested(olds):
            replaces.append(PROBLEM_OUTPUT)
        return DiffResult(changes=bool(replaces), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        planned = RecoveryAttempt.from_inputs(props)
        outcome, problem = self._attempt(planned)
        outputs = {**without_legacy_access(props), "attempt": planned.attempt, "outcome": outcome.value}
        return CreateResult(id_=planned.resource_id, outs=with_problem(outputs, problem))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        outputs = {
            **without_legacy_access(news),
            "outcome": olds.get("outcome"),
            PROBLEM_OUTPUT: olds.get(PROBLEM_OUTPUT),
        }
        return UpdateResult(outs=outputs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_=id_, outs=without_legacy_access(props))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None

    def _attempt(self, planned: RecoveryAttempt) -> tuple[DeleteOutcome, Problem | None]:
        """Make the deletion; its outcome, and the problem when it did not happen."""
        try:
            with open_client(self.cluster_access()) as client:
                outcome, conflict = answered_deletion(
                    client,
                    namespace=planned.namespace,
                    name=planned.pod,
                    uid=planned.pod_uid,
                    resource_version=planned.resource_version,
                )
        except KubeError as error:
            return DeleteOutcome.FAILED, kube_problem(error, refused=ProblemReason.POD_RECOVERY_REFUSED)
        if conflict is None:
            return outcome, None
        return outcome, Problem(ProblemReason.POD_RECOVERY_CONFLICT, conflict.detail, Persistence.PERMANENT)
