"""StatusBatchWrite: the dynamic resource that carries a batch of planned statuses to their
objects (planning/status_batches.py groups them; providers/status_batch.py writes them).

Its input `members` holds, by member key (`<namespace>/<name>`), each object's identity, its
status and its `problems`: the `problem` outputs of the object's own dynamic resources (its
runtime profile, Pod recovery, Ollama alias; for the Appliance, the removals of stale objects),
keyed by their logical names. Taking them as inputs makes the batch wait for those resources,
so what happened at apply time reaches the status in the same run. A member without dynamic
resources has no `problems` at all.

Each status travels as one JSON string (`encode_status`): the Pulumi SDK serializes an input
value by value, awaiting each, so a nested status of some thirty values cost more than the rest
of its registration. The provider's `check` turns it back into the mapping, so the engine stores
and diffs each member's status field by field, and `pulumi preview --diff` names the objects
whose status changes (`members["ai/chat"].status.phase`).

Earlier releases declared one `magicstick:Status` resource per object. A stack of theirs sees
those deleted (their provider's delete touches nothing) and the batches created; a batch writes
a member only when its object does not hold the planned status already.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import Resource, ResourceProvider

from components.dynamic import PROBLEM
from planning.objects import encode_status
from planning.provider_wire import MEMBERS_INPUT, PROBLEMS_INPUT, STATUS_INPUT
from planning.status_batches import StatusBatch

__all__ = ["StatusBatchWrite", "member_inputs"]

MemberProblems = Mapping[str, Mapping[str, pulumi.Input[Any]]]
"""By member key: the `problem` outputs of the member's dynamic resources, by logical name."""


def member_inputs(batch: StatusBatch, problems: MemberProblems) -> dict[str, dict[str, Any]]:
    """The `members` input of `batch`: by key, namespace, name, the status as JSON text and the
    member's problems when it has any."""
    members: dict[str, dict[str, Any]] = {}
    for update in batch.members:
        key = batch.key(update)
        member: dict[str, Any] = {
            "namespace": update.namespace,
            "name": update.name,
            STATUS_INPUT: encode_status(update.status),
        }
        found = problems.get(key)
        if found:
            member[PROBLEMS_INPUT] = dict(sorted(found.items()))
        members[key] = member
    return members


class StatusBatchWrite(Resource, module="magicstick", name="StatusBatch"):
    problem: pulumi.Output[Any]
    """Every member's write problem (refused, invalid, unanswered), summed up; `{}` when none."""

    def __init__(
        self,
        batch: StatusBatch,
        *,
        provider: ResourceProvider,
        opts: pulumi.ResourceOptions,
        problems: MemberProblems | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "apiVersion": batch.api_version,
            "kind": batch.kind,
            MEMBERS_INPUT: member_inputs(batch, problems or {}),
            PROBLEM: None,
        }
        super().__init__(provider, batch.logical_name, props, opts)
