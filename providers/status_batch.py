"""Status write-back in batches: one dynamic resource writes the planned statuses of up to a
hundred objects of one kind (planning/status_batches.py says how they are grouped).

Rules (each member is written as providers/status_writer.py writes one object):
- the inputs are the kind, its apiVersion and `members`: by member key (`<namespace>/<name>`),
  the object's namespace, name, planned status and `problems` (the `problem` outputs of its
  own dynamic resources). `check` decodes each status and names a bad member by its path
  (`members["ai/chat"].status`);
- `diff` reports a change when a member was added, removed or changed, when a member's last
  write met a Temporary problem, or when one of its own problems is Temporary (its retry record
  counts the run). `create` writes every member, `update` only those: a converged run, and an
  edit of one object, write nothing else;
- an object is read once per write: a handful by GET, more by one LIST of their namespace
  (LIST_FROM members), and nothing is written when it already holds the desired status;
- what happened to each member stays its own: `writeProblems` holds the problem of each
  member whose write was refused or unanswered (StatusWriteRefused, Temporary; StatusWriteInvalid,
  Permanent), `retries` the retry records of each member's Temporary problems. `problem`, the
  output every dynamic resource has, sums them up so the run logs one warning naming each
  object. Nothing concerning one member raises: the other members are still written;
- the outputs keep of each member its identity, the fields of its planned status and digests
  of that status and of its problems, not the status itself: the inputs hold it for the
  preview's diff, and twice would double a large stack's state (`recorded_member`);
- `read` (`pulumi refresh`) lists each namespace once and records the digest of every member's
  live status, so the next `up` writes back a status someone else changed;
- `delete`, and forgetting a member, never touch the object: the status belongs to the object.

The inputs name the objects, not how the cluster is reached (providers/cluster_access.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from planning.frozen import thaw
from planning.objects import decode_status
from planning.provider_wire import MEMBERS_INPUT, PROBLEMS_INPUT, STATUS_INPUT
from planning.status_batches import member_key
from providers.cluster_access import ClusterResourceProvider, without_legacy_access
from providers.kinds import APPLIANCE_KINDS
from providers.kube import KubeClient, KubeError, open_client
from providers.outcomes import Persistence, Problem, problem_from, with_problem
from providers.pulumi_values import is_unknown, restore_integers
from providers.retry_records import RetryRecord, next_records, records_from, records_output
from providers.status_writer import (
    StatusTarget,
    problems_by_source,
    status_write_problem,
    without_empty_problems,
    write_status_over,
)

WRITE_PROBLEMS_OUTPUT: Final = "writeProblems"
"""By member key: the problem of a member whose status could not be written."""
FIELDS_OUTPUT: Final = "fields"
STATUS_DIGEST_OUTPUT: Final = "statusDigest"
PROBLEMS_DIGEST_OUTPUT: Final = "problemsDigest"
MEMBER_RETRIES_OUTPUT: Final = "retries"
"""By member key: the member's retry records (providers.retry_records), by resource name."""
LIST_FROM: Final = 8
"""From this many members to write, their objects are read by one LIST per namespace."""
BATCH_PROPERTIES: Final = ("apiVersion", "kind")

Members = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Batch:
    """A batch's inputs, as `check` left them."""

    api_version: str
    kind: str
    members: Members

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> Batch:
        members = props.get(MEMBERS_INPUT)
        return cls(
            api_version=props["apiVersion"],
            kind=props["kind"],
            members=dict(members) if isinstance(members, Mapping) else {},
        )

    def target(self, key: str, retries: Mapping[str, RetryRecord]) -> StatusTarget:
        member = self.members[key]
        return StatusTarget(
            api_version=self.api_version,
            kind=self.kind,
            namespace=member["namespace"],
            name=member["name"],
            status=restore_integers(thaw(decode_status(member[STATUS_INPUT]))),
            problems=tuple(problems_by_source(member.get(PROBLEMS_INPUT)).values()),
            retries=tuple(retries.values()),
        )


def check_members(value: Any) -> tuple[Members, list[CheckFailure]]:
    """The members with their statuses decoded and empty problems left out, and what is wrong
    with them, each failure at its member's path. Pure."""
    if not isinstance(value, Mapping):
        return {}, [CheckFailure(MEMBERS_INPUT, "members must be a mapping of member key to member")]
    members: Members = {}
    failures: list[CheckFailure] = []
    for key in sorted(value):
        path = f'{MEMBERS_INPUT}["{key}"]'
        member = value[key]
        if not isinstance(member, Mapping):
            failures.append(CheckFailure(path, "a member must be a mapping with namespace, name and status"))
            continue
        checked = without_empty_problems(member)
        checked[STATUS_INPUT] = decode_status(checked.get(STATUS_INPUT))
        namespace, name = checked.get("namespace"), checked.get("name")
        if not isinstance(name, str) or not name:
            failures.append(CheckFailure(f"{path}.name", "name is required"))
        elif not isinstance(namespace, str) or member_key(namespace, name) != key:
            failures.append(
                CheckFailure(
                    path, f"the key of {namespace!r}/{name!r} must be {member_key(str(namespace or ''), name)!r}"
                )
            )
        if not isinstance(checked[STATUS_INPUT], dict):
            failures.append(CheckFailure(f"{path}.{STATUS_INPUT}", "status must be a mapping, or the JSON text of one"))
        problems = checked.get(PROBLEMS_INPUT, {})
        if not (isinstance(problems, Mapping) or is_unknown(problems)):
            failures.append(
                CheckFailure(f"{path}.{PROBLEMS_INPUT}", "problems must be a mapping of resource name to problem")
            )
        members[key] = checked
    return members, failures


def members_to_write(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    """The keys of the members of `news` that the next update writes, in key order. Pure.

    A member is written when it is new or changed, when its last write met a Temporary problem,
    or when one of its own problems is Temporary (the run counts in its retry record).
    """
    before, write_problems, members = (
        _mapping(olds, MEMBERS_INPUT),
        _mapping(olds, WRITE_PROBLEMS_OUTPUT),
        _mapping(news, MEMBERS_INPUT),
    )
    chosen = []
    for key in sorted(members):
        member = members[key] if isinstance(members[key], Mapping) else {}
        refused = problem_from(write_problems.get(key))
        lasting = any(problem.retried for problem in problems_by_source(member.get(PROBLEMS_INPUT)).values())
        recorded = before.get(key)
        if (
            not isinstance(recorded, Mapping)
            or not same_member(recorded, member)
            or (refused is not None and refused.retried)
            or lasting
        ):
            chosen.append(key)
    return chosen


def digest(value: Any) -> str | None:
    """The sha256 of `value`'s canonical JSON (sorted keys, whole floats as integers, as the
    protocol carries them either way); None while a part of it is not known. Pure."""
    if _has_unknown(value):
        return None
    text = json.dumps(restore_integers(thaw(value)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def recorded_member(member: Mapping[str, Any]) -> dict[str, Any]:
    """What the outputs keep of a member: its identity, the fields of its planned status, and the
    digests of that status and of its problems, never the status itself (the inputs hold it, for
    the preview's diff; keeping it twice doubled a large stack's state). Pure."""
    status = decode_status(member.get(STATUS_INPUT))
    return {
        "namespace": member.get("namespace"),
        "name": member.get("name"),
        FIELDS_OUTPUT: sorted(status) if isinstance(status, Mapping) else [],
        STATUS_DIGEST_OUTPUT: digest(status),
        PROBLEMS_DIGEST_OUTPUT: digest(member.get(PROBLEMS_INPUT) or {}),
    }


def same_member(recorded: Mapping[str, Any], member: Mapping[str, Any]) -> bool:
    """True when `member` (checked inputs) is the one `recorded` (outputs) describes. Pure."""
    now = recorded_member(member)
    if now[STATUS_DIGEST_OUTPUT] is None or now[PROBLEMS_DIGEST_OUTPUT] is None:
        return False
    keys = ("namespace", "name", STATUS_DIGEST_OUTPUT, PROBLEMS_DIGEST_OUTPUT)
    return all(recorded.get(key) == now[key] for key in keys)


def _has_unknown(value: Any) -> bool:
    if is_unknown(value):
        return True
    if isinstance(value, Mapping):
        return any(_has_unknown(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_unknown(item) for item in value)
    return False


def batch_problem(problems: Mapping[str, Problem], members: int) -> Problem | None:
    """The `problem` of a batch whose members met `problems` (by member key): the first one's
    reason, every member named; Temporary when any is. Pure."""
    if not problems:
        return None
    first = problems[min(problems)]
    told = "; ".join(f"{key}: {problem.reason}: {problem.message}" for key, problem in sorted(problems.items()))
    persistence = (
        Persistence.TEMPORARY if any(problem.retried for problem in problems.values()) else Persistence.PERMANENT
    )
    return Problem(first.reason, f"{len(problems)} of {members} statuses not written: {told}", persistence)


class StatusBatchProvider(ClusterResourceProvider):
    """Writes the planned statuses of a batch of appliance.magicstick.dev objects of one kind."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = without_legacy_access(news)
        failures = [CheckFailure(p, f"{p} is required") for p in BATCH_PROPERTIES if not inputs.get(p)]
        if inputs.get("kind") and inputs["kind"] not in APPLIANCE_KINDS:
            failures.append(CheckFailure("kind", f"kind {inputs['kind']} is not an appliance.magicstick.dev kind"))
        members, member_failures = check_members(inputs.get(MEMBERS_INPUT))
        inputs[MEMBERS_INPUT] = members
        return CheckResult(inputs, failures + member_failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        same_kind = all(olds.get(p) == news.get(p) for p in BATCH_PROPERTIES)
        removed = set(_mapping(olds, MEMBERS_INPUT)) - set(_mapping(news, MEMBERS_INPUT))
        changes = not same_kind or bool(removed) or bool(members_to_write(olds, news))
        return DiffResult(changes=changes, replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        batch = Batch.from_props(props)
        outputs = self._outputs(props, batch, sorted(batch.members), {})
        return CreateResult(id_=f"{batch.kind}/statuses", outs=outputs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._outputs(news, Batch.from_props(news), members_to_write(olds, news), olds))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        observed = without_legacy_access(props)
        batch = Batch.from_props(observed)
        try:
            with open_client(self.cluster_access()) as client:
                current = _current_objects(client, batch, sorted(batch.members))
        except KubeError as error:
            return ReadResult(id_=id_, outs=with_problem(observed, status_write_problem(error)))
        members = dict(batch.members)
        for key, obj in current.items():
            fields = members[key].get(FIELDS_OUTPUT) or ()
            live = obj.get("status") or {}
            members[key] = {
                **members[key],
                STATUS_DIGEST_OUTPUT: digest({k: v for k, v in live.items() if k in fields}),
            }
        return ReadResult(id_=id_, outs={**observed, MEMBERS_INPUT: members})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None

    def _outputs(
        self, props: Mapping[str, Any], batch: Batch, keys: list[str], olds: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Write the members `keys`, counting this run in their retry records; the full outputs.
        The members not written keep the problems and records their last write left."""
        now = datetime.now(UTC)
        old_problems, old_retries = _mapping(olds, WRITE_PROBLEMS_OUTPUT), _mapping(olds, MEMBER_RETRIES_OUTPUT)
        written = set(keys)
        problems = {
            key: p
            for key in batch.members
            if key not in written and (p := problem_from(old_problems.get(key))) is not None
        }
        retries = {
            key: records_from(old_retries.get(key))
            for key in batch.members
            if key not in written and old_retries.get(key)
        }
        for key in keys:
            records = next_records(
                problems_by_source(batch.members[key].get(PROBLEMS_INPUT)), records_from(old_retries.get(key)), now
            )
            if records:
                retries[key] = records
        problems |= self._write(batch, keys, retries, now)
        outputs = with_problem(without_legacy_access(props), batch_problem(problems, len(batch.members)))
        outputs[MEMBERS_INPUT] = {key: recorded_member(member) for key, member in sorted(batch.members.items())}
        outputs[WRITE_PROBLEMS_OUTPUT] = {key: problem.output() for key, problem in sorted(problems.items())}
        outputs[MEMBER_RETRIES_OUTPUT] = {
            key: records_output(records) for key, records in sorted(retries.items()) if records
        }
        return outputs

    def _write(
        self, batch: Batch, keys: list[str], retries: Mapping[str, Mapping[str, RetryRecord]], now: datetime
    ) -> dict[str, Problem]:
        """Write the members `keys`; the problem of each one that could not be written."""
        if not keys:
            return {}
        problems: dict[str, Problem] = {}
        with open_client(self.cluster_access()) as client:
            try:
                current = _current_objects(client, batch, keys)
            except KubeError as error:
                return {key: status_write_problem(error) for key in keys}
            for key in keys:
                target = batch.target(key, retries.get(key, {}))
                try:
                    write_status_over(client, target, current.get(key), now=now)
                except KubeError as error:
                    problems[key] = status_write_problem(error)
        return problems


def _mapping(props: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """`props[key]` when it is a mapping, else an empty one. Pure."""
    value = props.get(key)
    return value if isinstance(value, Mapping) else {}


def _current_objects(client: KubeClient, batch: Batch, keys: list[str]) -> dict[str, dict[str, Any]]:
    """The objects of the members `keys` that exist, by key: one GET each, or from LIST_FROM
    members on, one LIST of each of their namespaces."""
    kind = APPLIANCE_KINDS[batch.kind]
    if len(keys) < LIST_FROM:
        found = (
            (key, client.get_or_none(kind, batch.members[key]["name"], batch.members[key]["namespace"] or None))
            for key in keys
        )
        return {key: obj for key, obj in found if obj is not None}
    wanted = set(keys)
    current: dict[str, dict[str, Any]] = {}
    for namespace in sorted({batch.members[key]["namespace"] for key in keys}):
        for obj in client.list(kind, namespace=namespace or None):
            metadata = obj.get("metadata") or {}
            key = member_key(str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
            if key in wanted:
                current[key] = obj
    return current


__all__ = [
    "MEMBERS_INPUT",
    "WRITE_PROBLEMS_OUTPUT",
    "MEMBER_RETRIES_OUTPUT",
    "StatusBatchProvider",
    "members_to_write",
    "batch_problem",
    "check_members",
]
