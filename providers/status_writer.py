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
- a Temporary problem is remembered across runs in the output `retries` (attempts and first
  failure, providers.retry_records): the status says it, and one that lasts past the limit
  makes the object Stalled; while one lasts, every run counts, so `diff` reports a change;
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
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from api.vocabulary import ConditionType, Phase, ProblemReason, StatusReason, reason_of, stalls
from planning.conditions import READY, condition
from planning.frozen import thaw
from planning.objects import StatusUpdate, decode_status
from planning.provider_wire import PROBLEMS_INPUT, STATUS_INPUT
from providers.cluster_access import ClusterResourceProvider, without_legacy_access
from providers.kinds import APPLIANCE_KINDS
from providers.kube import KubeClient, KubeError, NotFound, open_client
from providers.outcomes import (
    STARTING_REASONS,
    Persistence,
    Problem,
    kube_problem,
    problem_from,
    retry_requested,
    with_problem,
)
from providers.pulumi_values import is_unknown, restore_integers
from providers.retry_records import RETRIES_OUTPUT, RetryRecord, longest, next_records, records_from, records_output

STATUS_FIELD_MANAGER = "magicstick-status"
IDENTITY_PROPERTIES = ("apiVersion", "kind", "namespace", "name")


@dataclass(frozen=True)
class StatusTarget:
    api_version: str
    kind: str
    namespace: str
    name: str
    status: Mapping[str, Any]
    problems: tuple[Problem, ...] = field(default=())
    """What went wrong applying the object's dynamic resources in this run, by resource name."""
    retries: tuple[RetryRecord, ...] = field(default=())
    """How long the Temporary ones among them have lasted (providers.retry_records)."""

    @classmethod
    def from_inputs(cls, props: Mapping[str, Any]) -> StatusTarget:
        """The update the plan declared (StatusUpdate.to_inputs) and the problems beside it."""
        update = StatusUpdate.from_inputs(props)
        return cls(
            api_version=update.api_version,
            kind=update.kind,
            namespace=update.namespace,
            name=update.name,
            status=restore_integers(thaw(update.status)),
            problems=problems_of(props.get(PROBLEMS_INPUT)),
        )


def problems_of(value: Any) -> tuple[Problem, ...]:
    """The problems an input `problems` holds, in the order of their resource names. Pure."""
    return tuple(problems_by_source(value).values())


def problems_by_source(value: Any) -> dict[str, Problem]:
    """The problems an input `problems` holds, by resource name, in the order of the names. Pure."""
    if not isinstance(value, Mapping):
        return {}
    found = ((source, problem_from(value[source])) for source in sorted(value))
    return {source: problem for source, problem in found if problem is not None}


def status_with_problems(
    status: Mapping[str, Any],
    problems: Sequence[Problem],
    *,
    previous: Mapping[str, Any],
    now: datetime,
    retries: Sequence[RetryRecord] = (),
) -> dict[str, Any]:
    """The status to write: `status`, or when `problems` happened, that object's failure. Pure.

    Degraded with the first problem's reason and every problem's message (Starting when every
    problem is an API outage of a direct runtime, STARTING_REASONS); a Failed status stays
    Failed with its reason (the user must act on it first) and names the problems after its
    message. Ready turns False; its lastTransitionTime is kept from `status`, else from
    `previous` (the object's current status) when Ready was already False there, else `now`.
    Beside it, Stalled when the status is Failed, a problem is Permanent or a Temporary one has
    lasted past the limit (`retries`, providers.retry_records), else Reconciling. A Temporary
    problem met on more than one run says since when and how often (`(failing for 14 min, 9 attempts)`).
    `reason` and `message` are set only where the planned status has them (the Appliance has not).
    """
    if not problems:
        return dict(status)
    if status.get("phase") == Phase.FAILED:
        told = "; ".join(f"{problem.reason}: {problem.message}" for problem in problems)
        phase, reason = Phase.FAILED, reason_of(str(status.get("reason") or problems[0].reason))
        message = f"{status['message']} Also: {told}" if status.get("message") else told
    else:
        outage = all(problem.reason in STARTING_REASONS for problem in problems)
        phase, reason, message = (
            Phase.STARTING if outage else Phase.DEGRADED,
            reason_of(str(problems[0].reason)),
            _told(problems),
        )
    record = longest(retries)
    if record is not None and record.attempts > 1:
        message = f"{message} ({record.describe(now)})"
    merged = {**status, "phase": phase.value}
    merged |= {key: value for key, value in (("reason", str(reason)), ("message", message)) if key in status}
    if "conditions" in status:
        permanent = any(problem.persistence is Persistence.PERMANENT for problem in problems) or any(
            r.stalls(now) for r in retries
        )
        merged["conditions"] = _not_ready(
            status, previous, phase=phase, reason=reason, message=message, permanent=permanent, now=now
        )
    return merged


def _told(problems: Sequence[Problem]) -> str:
    if len(problems) == 1:
        return problems[0].message
    return "; ".join(f"{problem.reason}: {problem.message}" for problem in problems)


_KSTATUS: Final = frozenset({ConditionType.READY, ConditionType.RECONCILING, ConditionType.STALLED})


def _not_ready(
    status: Mapping[str, Any],
    previous: Mapping[str, Any],
    *,
    phase: Phase,
    reason: StatusReason,
    message: str,
    permanent: bool,
    now: datetime,
) -> list[Any]:
    """`status`'s conditions with Ready False for `reason` and Stalled (Failed, or a Permanent
    problem) or Reconciling beside it, in place of the planned kstatus conditions; the others kept."""
    planned = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    earlier = [c for c in previous.get("conditions") or () if isinstance(c, Mapping)]
    planned_ready = next((c for c in planned if c.get("type") == READY), {})
    generation = planned_ready.get("observedGeneration", status.get("observedGeneration"))
    stalled = permanent or stalls(phase, reason)

    def made(condition_type: ConditionType, value: bool) -> dict[str, Any]:
        return condition(
            previous_status={"conditions": [*earlier, *planned]},
            condition_type=condition_type,
            status=value,
            reason=reason,
            message=message,
            now=now,
            generation=generation if isinstance(generation, int) else None,
        )

    kstatus = [made(READY, False), made(ConditionType.STALLED if stalled else ConditionType.RECONCILING, True)]
    conditions: list[Any] = []
    for found in status.get("conditions") or ():
        kind = found.get("type") if isinstance(found, Mapping) else None
        if kind == READY:
            conditions += kstatus
        elif kind not in _KSTATUS:
            conditions.append(found)
    return conditions if kstatus[0] in conditions else [*kstatus, *conditions]


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
    current = client.get_or_none(APPLIANCE_KINDS[target.kind], target.name, target.namespace)
    return write_status_over(client, target, current, field_manager, now=now)


def write_status_over(
    client: KubeClient,
    target: StatusTarget,
    current: Mapping[str, Any] | None,
    field_manager: str = STATUS_FIELD_MANAGER,
    *,
    now: datetime | None = None,
) -> bool:
    """`write_status` with the object as just read (`current`, None: gone): a batch reads a
    whole namespace with one LIST instead of one GET per object."""
    if current is None:
        return False
    kind = APPLIANCE_KINDS[target.kind]
    moment = now or datetime.now(UTC)
    desired = status_with_problems(
        target.status, target.problems, previous=current.get("status") or {}, now=moment, retries=target.retries
    )
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
        lasting = any(problem.retried for problem in problems_of(news.get(PROBLEMS_INPUT)))
        return DiffResult(
            changes=bool(changed) or retry_requested(olds) or lasting, replaces=replaces, delete_before_replace=False
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        target = StatusTarget.from_inputs(props)
        return CreateResult(
            id_=f"{target.kind}/{target.namespace}/{target.name}", outs=self._outputs(props, target, {})
        )

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(
            outs=self._outputs(news, StatusTarget.from_inputs(news), records_from(olds.get(RETRIES_OUTPUT)))
        )

    def _outputs(
        self, props: Mapping[str, Any], target: StatusTarget, previous: Mapping[str, RetryRecord]
    ) -> dict[str, Any]:
        """Write the status, counting this run in the retry records; the full outputs."""
        now = datetime.now(UTC)
        records = next_records(problems_by_source(props.get(PROBLEMS_INPUT)), previous, now)
        outputs = with_problem(
            without_legacy_access(props), self._write(replace(target, retries=tuple(records.values())), now)
        )
        if records:
            outputs[RETRIES_OUTPUT] = records_output(records)
        return outputs

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

    def _write(self, target: StatusTarget, now: datetime) -> Problem | None:
        """Write the status; the problem that kept it from the object, or None."""
        try:
            with open_client(self.cluster_access()) as client:
                write_status(client, target, now=now)
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
