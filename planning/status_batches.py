"""How the planned statuses travel to their objects: in bounded batches, one dynamic resource
per kind and bucket, instead of one per object. PURE.

Rules:
- an object's batch is `statuses/<kind>/<bucket>` (lower-case kind): its bucket is the first
  eight hex digits of sha256(`<namespace>/<name>`) modulo the kind's bucket count, so it depends
  on the object's identity alone, never on a position in a list (invariant 3);
- a kind's bucket count is the smallest power of two that puts at most `MEMBERS_PER_BATCH`
  objects in a batch on average. Doubling it splits each bucket in two (bucket b keeps the
  members whose hash is b modulo the new count, the others go to b + the old count): an object
  that changes batch is written by the new one only if its status is not current, and the old
  one forgets it without touching it (a status belongs to its object, not to a batch);
- inside a batch, each object is a member under its key `<namespace>/<name>` (the name alone
  for a cluster-wide object), which no two objects share: Kubernetes names hold no '/'.

> **Why** — one resource per object was the largest part of a big stack: with 1,000
> activations a thousand status writes, each a dynamic-provider call on every preview and up
> and a record in the state. A batch keeps what made them useful: the members and their
> statuses are the batch's inputs, so `pulumi preview --diff` still names every object whose
> status changes, and each member's problem and retry record are its own outputs. The bound
> keeps one edit's update, which carries its whole batch, small.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from planning.objects import NAME_SEPARATOR, StatusUpdate

MEMBERS_PER_BATCH: Final = 100
"""The average number of objects of one kind per batch the bucket count aims at."""

BATCH_PREFIX: Final = "statuses"
_HASH_DIGITS: Final = 8


def member_key(namespace: str, name: str) -> str:
    """`<namespace>/<name>`, or `<name>` for a cluster-wide object. Pure."""
    return f"{namespace}{NAME_SEPARATOR}{name}" if namespace else name


def bucket_count(members: int, *, per_batch: int = MEMBERS_PER_BATCH) -> int:
    """The smallest power of two `c` with `members / c <= per_batch` (1 for none). Pure."""
    if per_batch < 1:
        raise ValueError(f"per_batch must be at least 1, got {per_batch}")
    count = 1
    while members > count * per_batch:
        count *= 2
    return count


def bucket_of(key: str, count: int) -> int:
    """The bucket of the member `key` among `count` (a power of two). Pure."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:_HASH_DIGITS], 16) % count


@dataclass(frozen=True)
class StatusBatch:
    """The status updates of one kind that one dynamic resource writes."""

    api_version: str
    kind: str
    bucket: int
    members: tuple[StatusUpdate, ...]
    """Sorted by member key."""

    @property
    def logical_name(self) -> str:
        """`statuses/<kind>/<bucket>`. Pure."""
        return NAME_SEPARATOR.join((BATCH_PREFIX, self.kind.lower(), str(self.bucket)))

    @staticmethod
    def key(update: StatusUpdate) -> str:
        return member_key(update.namespace, update.name)


def status_batches(updates: Iterable[StatusUpdate], *, per_batch: int = MEMBERS_PER_BATCH) -> tuple[StatusBatch, ...]:
    """The batches that carry `updates`, ordered by kind and bucket. Pure.

    Raises ValueError when two updates name one object, or one kind comes with two apiVersions:
    the plan never gives either.
    """
    by_kind: dict[str, dict[str, StatusUpdate]] = {}
    versions: dict[str, str] = {}
    for update in updates:
        if versions.setdefault(update.kind, update.api_version) != update.api_version:
            raise ValueError(f"{update.kind} has two apiVersions: {versions[update.kind]} and {update.api_version}")
        members = by_kind.setdefault(update.kind, {})
        key = StatusBatch.key(update)
        if key in members:
            raise ValueError(f"two status updates for {update.kind} {key}")
        members[key] = update
    batches: list[StatusBatch] = []
    for kind in sorted(by_kind):
        members = by_kind[kind]
        count = bucket_count(len(members), per_batch=per_batch)
        buckets: dict[int, list[StatusUpdate]] = {}
        for key in sorted(members):
            buckets.setdefault(bucket_of(key, count), []).append(members[key])
        batches += [StatusBatch(versions[kind], kind, bucket, tuple(buckets[bucket])) for bucket in sorted(buckets)]
    return tuple(batches)
