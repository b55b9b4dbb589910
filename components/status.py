"""StatusWrite: the dynamic resource that carries one planned status to its object.

Its inputs name the object, its status and `problems`: the `problem` outputs of the object's
own dynamic resources (its runtime profile, Pod recovery, Ollama alias; for the Appliance, the
removals of stale objects), keyed by their logical names. Taking them as inputs makes the
status write wait for those resources, so what happened at apply time reaches the status in
the same run (the provider merges them: providers/status_writer.py). An object without dynamic
resources has no `problems` input at all. The provider reaches the cluster as the stack's
configuration says (see components/dynamic.py).

The status travels as one JSON string (`encode_status`): the Pulumi SDK serializes an input
value by value, awaiting each, so a nested status of some thirty values cost more than the rest
of its registration (about a sixth of a large program's time). The provider's `check` turns it
back into the mapping, so the engine stores and diffs the same inputs as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import Resource, ResourceProvider

from components.dynamic import PROBLEM, LogicalName
from planning.objects import StatusUpdate
from planning.provider_wire import PROBLEMS_INPUT

__all__ = ["PROBLEMS", "StatusWrite", "status_logical_name"]

PROBLEMS = PROBLEMS_INPUT
"""The input that carries the object's problems."""


def status_logical_name(update: StatusUpdate) -> LogicalName:
    """`status/<kind>/<namespace>/<name>` (lower-case kind). Pure."""
    parts = (update.kind.lower(), update.namespace, update.name)
    return LogicalName.of("status", *parts, previous="-".join(("status", *parts)))


class StatusWrite(Resource, module="magicstick", name="Status"):
    problem: pulumi.Output[Any]
    """The write's own problem (refused, invalid, unanswered): it cannot be written to the object."""

    def __init__(
        self,
        update: StatusUpdate,
        *,
        provider: ResourceProvider,
        opts: pulumi.ResourceOptions,
        problems: Mapping[str, pulumi.Input[Any]] | None = None,
    ) -> None:
        props: dict[str, Any] = {**update.to_inputs(), PROBLEM: None}
        if problems:
            props[PROBLEMS] = dict(sorted(problems.items()))
        name = status_logical_name(update)
        super().__init__(provider, name.name, props, name.options(opts, type(self)))
