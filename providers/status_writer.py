"""Status write-back: a dynamic provider that writes one runtime object's status.

Rules:
- the write goes through the /status subresource by server-side apply, under its own field
  manager, so the status fields the program owns are exactly the ones it last wrote;
- nothing is written when the object already holds the desired status;
- an object deleted in between is success: there is nothing left to report on;
- what happened at apply time reaches the status in the same run: the input `problems` holds
  the `problem` outputs of the object's own dynamic resources (providers/outcomes.py), and
  when any is set the status written is Degraded (a Failed one stays Failed) with the first
  problem's reason and every problem's message, and Ready False (`status_with_problems`).
  Without problems the planned status is written unchanged, so a converged run writes nothing;
- a refused or unanswered status write concerns this one object and never fails the run: it
  is the `problem` output of the StatusWrite itself (StatusWriteRefused, Temporary, tried again
  on the next run; StatusWriteInvalid for a status the server refuses, Permanent, tried again
  when the status changes), and the program logs it as a warning on the resource;
- `delete` never touches the object: the status belongs to the object, not to the stack.

The inputs name the object, its status and its problems, nothing else: each method builds its
own client from the cluster access the stack's configuration names (providers/cluster_access.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import StrEnum
from typing import Any, Final

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from planning.conditions import READY, condition
from planning.objects import decode_status
from providers.cluster_access import ClusterResourceProvider, without_legacy_access
from providers.kinds import APPLIANCE_KINDS
from providers.outcomes import STARTING_REASONS, Problem, ProblemReason, is_unknown, kube_problem, problem_from, retry_requested, with_problem
from providers.pulumi_values import restore_integers
from providers.kube import KubeClient, KubeError, NotFound, open_client

STATUS_FIELD_MANAGER = "magicstick-status"
IDENTITY_PROPERTIES = ("apiVersion", "kind", "namespace", "name")
STATUS_INPUT: Final = "status"
"""Input: the status to write, as a mapping or as its JSON text (`encode_status`)."""
PROBLEMS_INPUT: Final = "problems"
"""Input: the `problem` outputs of the object's dynamic resources, by the resource's logical name."""


class Phase(StrEnum):
    """The phases the merge of problems writes or keeps."""

    DEGRADED = "Degraded"
    FAILED = "Failed"
    STARTING = "Starting"


@dataclass(frozen=True)
class StatusTarget:
    api_version: str
    kind: str
    namespace: str
    name: str
    status: Mapping[str, Any]
    problems: tuple[Problem, ...] = field(default=())
    """What went wrong applying the object's dynamic resources in this run, by resource name."""

    @classmethod
    def from_inputs(cls, props: Mapping[str, Any]) -> StatusTarget:
        return cls(
            api_version=props["apiVersion"],
            kind=props["kind"],
            namespace=props["namespace"],
            name=props["name"],
            status=restore_integers(decode_status(props.get(STATUS_INPUT)) or {}),
            problems=problems_of(props.get(PROBLEMS_INPUT)),
        )


def problems_of(value: Any) -> tuple[Problem, ...]:
    """The problems an input `problems` holds, in the order of their resource names. Pure."""
    if not isinstance(value, Mapping):
        return ()
    found = (problem_from(value[source]) for source in sorted(value))
    return tuple(problem for problem in found if problem is not None)


def status_with_problems(
    status: Mapping[str, Any], problems: Sequence[Problem], *, previous: Mapping[str, Any], now: datetime
) -> dict[str, Any]:
    """The status to write: `status`, or when `problems` happened, that object's failure. Pure.

    Degraded with the first problem's reason and every problem's message (Starting when every
    problem is an API outage of a direct runtime, STARTING_REASONS); a Failed status stays
    Failed with its reason (the user must act on it first) and names the problems after its
    message. Ready turns False; its lastTransitionTime is kept from `status`, else from
    `previous` (the object's current status) when Ready was already False there, else `now`.
    `reason` and `message` are set only where the planned status has them (the Appliance has not).
    """
    if not problems:
        return dict(status)
    if status.get("phase") == Phase.FAILED:
        told = "; ".join(f"{problem.reason}: {problem.message}" for problem in problems)
        phase, reason = Phase.FAILED, str(status.get("reason") or problems[0].reason)
        message = f"{status['message']} Also: {told}" if status.get("message") else told
    else:
        outage = all(problem.reason in STARTING_REASONS for problem in problems)
        phase, reason, message = Phase.STARTING if outage else Phase.DEGRADED, str(problems[0].reason), _told(problems)
    merged = {**status, "phase": phase.value}
    merged |= {key: value for key, value in (("reason", reason), ("message", message)) if key in status}
    if "conditions" in status:
        merged["conditions"] = _not_ready(status, previous, reason=reason, message=message, now=now)
    return merged


def _told(problems: Sequence[Problem]) -> str:
    if len(problems) == 1:
        return problems[0].message
    return "; ".join(f"{problem.reason}: {problem.message}" for problem in problems)


def _not_ready(status: Mapping[str, Any], previous: Mapping[str, Any], *, reason: str, message: str, now: datetime) -> list[Any]:
    """`status`'s conditions with Ready False for `reason`, in place of the planned Ready."""
    planned = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    earlier = [c for c in previous.get("conditions") or () if isinstance(c, Mapping)]
    ready = condition(
        previous_status={"conditions": [*earlier, *planned]},
        condition_type=READY,
        status=False,
        reason=reason,
        message=message,
        now=now,
    )
    planned_ready = next((c for c in planned if c.get("type") == READY), {})
    if "observedGeneration" in planned_ready:
        ready["observedGeneration"] = planned_ready["observedGeneration"]
    conditions = [ready if isinstance(c, Mapping) and c.get("type") == READY else c for c in status.get("conditions") or ()]
    return conditions if ready in conditions else [ready, *conditions]


def owned_status_fields(obj: Mapping[str, Any], field_manager: str) -> set[str]:
    """Top-level status fields that `field_manager` owns on `obj`, from its managedFields."""
    owned: set[str] = set()
    for entry in obj.get("metadata", {}).get("managedFields") or ():
        if entry.get("manager") != field_manager:
            continue
        status_fields = (entry.get("fieldsV1") or {}).get("f:status") or {}
        owned |= {key[2:] for key in status_fields if key.startswith("f:")}
    return owned


def status_is_current(obj: Mapping[str, Any], desired: Mapping[str, Any], field_manager: str) -> bool:
    """True when `obj` shows the desired status and holds no other field this manager owns."""
    current = obj.get("status") or {}
    if any(current.get(key) != value for key, value in desired.items()):
        return False
    return owned_status_fields(obj, field_manager) <= set(desired)


def write_status(
    client: KubeClient, target: StatusTarget, field_manager: str = STATUS_FIELD_MANAGER, *, now: datetime | None = None
) -> bool:
    """Write `target.status`, with its problems merged in, if needed; False when nothing was
    written (current, or object gone). `now` dates a Ready that turns False (default: the clock)."""
    kind = APPLIANCE_KINDS[target.kind]
    current = client.get_or_none(kind, target.name, target.namespace)
    if current is None:
        return False
    moment = now or datetime.now(timezone.utc)
    desired = status_with_problems(target.status, target.problems, previous=current.get("status") or {}, now=moment)
    if status_is_current(current, desired, field_manager):
        return False
    body = {
        "apiVersion": target.api_version,
        "kind": target.kind,
        "metadata": {"name": target.name, "namespace": target.namespace},
        "status": desired,
    }
    try:
        client.apply(kind, body, field_manager=field_manager, subresource="status")
    except NotFound:
        return False
    return True


class StatusProvider(ClusterResourceProvider):
    """Writes the planned status of one appliance.magicstick.dev object, with what happened to it."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = without_empty_problems(without_legacy_access(news))
        if STATUS_INPUT in inputs:
            inputs[STATUS_INPUT] = decode_status(inputs[STATUS_INPUT])
        failures = [CheckFailure(p, f"{p} is required") for p in IDENTITY_PROPERTIES if not inputs.get(p)]
        if inputs.get("kind") and inputs["kind"] not in APPLIANCE_KINDS:
            failures.append(CheckFailure("kind", f"kind {inputs['kind']} is not an appliance.magicstick.dev kind"))
        if not isinstance(inputs.get("status"), dict):
            failures.append(CheckFailure("status", "status must be a mapping, or the JSON text of one"))
        problems = inputs.get(PROBLEMS_INPUT, {})
        if not (isinstance(problems, dict) or is_unknown(problems)):
            failures.append(CheckFailure(PROBLEMS_INPUT, "problems must be a mapping of resource name to problem"))
        return CheckResult(inputs, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [p for p in IDENTITY_PROPERTIES if olds.get(p) != news.get(p)]
        changed = replaces + [p for p in ("status", PROBLEMS_INPUT) if olds.get(p) != news.get(p)]
        return DiffResult(changes=bool(changed) or retry_requested(olds), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        target = StatusTarget.from_inputs(props)
        outputs = with_problem(without_legacy_access(props), self._write(target))
        return CreateResult(id_=f"{target.kind}/{target.namespace}/{target.name}", outs=outputs)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        target = StatusTarget.from_inputs(news)
        return UpdateResult(outs=with_problem(without_legacy_access(news), self._write(target)))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        target = StatusTarget.from_inputs(props)
        observed = without_legacy_access(props)
        try:
            with open_client(self.cluster_access()) as client:
                current = client.get_or_none(APPLIANCE_KINDS[target.kind], target.name, target.namespace)
        except KubeError as error:
            return ReadResult(id_=id_, outs=with_problem(observed, status_write_problem(error)))
        if current is not None:
            observed["status"] = {k: v for k, v in (current.get("status") or {}).items() if k in target.status}
        return ReadResult(id_=id_, outs=observed)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None

    def _write(self, target: StatusTarget) -> Problem | None:
        """Write the status; the problem that kept it from the object, or None."""
        try:
            with open_client(self.cluster_access()) as client:
                write_status(client, target)
        except KubeError as error:
            return status_write_problem(error)
        return None


def status_write_problem(error: KubeError) -> Problem:
    """A refused status write: Permanent when the server refuses the status itself. Pure."""
    return kube_problem(error, refused=ProblemReason.STATUS_WRITE_REFUSED, invalid=ProblemReason.STATUS_WRITE_INVALID)


def without_empty_problems(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """`inputs` whose `problems` keeps only the problems that are set (or not yet known). Pure.

    An empty `problems` is left out, so a status without problems has the inputs it had before
    the input existed, and a stack written by an earlier version shows no change.
    """
    problems = inputs.get(PROBLEMS_INPUT)
    if not isinstance(problems, Mapping):
        return dict(inputs)
    kept = {source: value for source, value in problems.items() if is_unknown(value) or problem_from(value) is not None}
    rest = {key: value for key, value in inputs.items() if key != PROBLEMS_INPUT}
    return {**rest, PROBLEMS_INPUT: kept} if kept else rest
