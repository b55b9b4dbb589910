"""The statuses a run declared, one per object, read out of its status batches (components/status.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from cli.offline import OfflineRun, Registration
from planning.provider_wire import MEMBERS_INPUT
from providers.status_batch import Batch, StatusBatchProvider
from providers.status_writer import status_with_problems

STATUS_BATCH: Final = "pulumi-python:dynamic/magicstick:StatusBatch"


@dataclass(frozen=True)
class MemberWrite:
    """One object's status write: its member of a batch."""

    batch: Registration
    key: str

    @property
    def inputs(self) -> dict[str, Any]:
        """The member's inputs with the batch's apiVersion and kind: what one object's write takes."""
        member = self.batch.inputs[MEMBERS_INPUT][self.key]
        return {"apiVersion": self.batch.inputs["apiVersion"], "kind": self.batch.inputs["kind"], **member}

    @property
    def dependencies(self) -> Any:
        return self.batch.dependencies


def status_writes(run: OfflineRun) -> list[MemberWrite]:
    """Every member of every status batch of `run`, by batch then key."""
    return [
        MemberWrite(batch, key) for batch in run.of_type(STATUS_BATCH) for key in sorted(batch.inputs[MEMBERS_INPUT])
    ]


def status_write(run: OfflineRun, kind: str, name: str) -> MemberWrite:
    (found,) = [w for w in status_writes(run) if (w.inputs["kind"], w.inputs["name"]) == (kind, name)]
    return found


def checked_batch(inputs: Mapping[str, Any]) -> Batch:
    """The batch `inputs` after the provider's check; fails the test on a check failure."""
    result = StatusBatchProvider().check({}, dict(inputs))
    assert not result.failures, result.failures
    return Batch.from_props(result.inputs)


def written_status(write: MemberWrite, *, now: datetime, previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The status the batch provider writes for this member onto an object whose status is `previous`."""
    target = checked_batch(write.batch.inputs).target(write.key, {})
    return status_with_problems(target.status, target.problems, previous=previous or {}, now=now)
