"""Read a snapshot file: Kubernetes objects as `kubectl get -o yaml` prints them.

The file holds one or more YAML documents; each is an object or a `List` of objects. A `List`
written by `magicstick snapshot` records the system namespace it was taken with in the
annotation SYSTEM_NAMESPACE_ANNOTATION of its own metadata (kubectl ignores a List's metadata).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from planning.snapshot import UNREADABLE_ANNOTATION, Snapshot, SnapshotError, UnreadableNamespace, unreadable_from_annotation

SYSTEM_NAMESPACE_ANNOTATION = "appliance.magicstick.dev/system-namespace"
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class SnapshotFileError(Exception):
    """The snapshot file cannot be used; the message names the file and the object."""


@dataclass(frozen=True)
class SnapshotFile:
    """A parsed snapshot file: the snapshot, how many objects it holds, the namespace it records."""

    snapshot: Snapshot
    objects: int
    system_namespace: str | None


def read_snapshot_file(path: Path) -> Snapshot:
    return load_snapshot_file(path).snapshot


def load_snapshot_file(path: Path) -> SnapshotFile:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        cause = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise SnapshotFileError(f"{path}: cannot read snapshot file: {cause}") from error
    return parse_snapshot_text(text, source=str(path))


def parse_snapshot_text(text: str, *, source: str) -> SnapshotFile:
    """Parse snapshot text; `source` names it in errors (a path, or "standard input")."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = " ".join(str(getattr(error, "problem", None) or error).split())
        raise SnapshotFileError(f"{source}: not valid YAML{where}: {problem}") from error
    try:
        snapshot = Snapshot.from_objects(documents, unreadable=_recorded_unreadable(documents))
    except SnapshotError as error:
        raise SnapshotFileError(f"{source}: {error}") from error
    return SnapshotFile(
        snapshot=snapshot,
        objects=_count(documents),
        system_namespace=_recorded_namespace(documents, source=source),
    )


def _is_list(document: Any) -> bool:
    """As Snapshot.from_objects flattens: kind List, or a kind ending in List that has items."""
    if not isinstance(document, Mapping):
        return False
    kind = str(document.get("kind", ""))
    return kind == "List" or (kind.endswith("List") and "items" in document)


def _count(documents: Iterable[Any]) -> int:
    total = 0
    for document in documents:
        if _is_list(document):
            total += _count(document.get("items") or [])
        elif document is not None:
            total += 1
    return total


def _list_annotations(documents: Iterable[Any], key: str) -> Iterator[Any]:
    """The value of annotation `key` on every List document that carries it."""
    for document in documents:
        if not _is_list(document):
            continue
        metadata = document.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
        value = annotations.get(key) if isinstance(annotations, Mapping) else None
        if value is not None:
            yield value


def _recorded_namespace(documents: Iterable[Any], *, source: str) -> str | None:
    recorded = set()
    for value in _list_annotations(documents, SYSTEM_NAMESPACE_ANNOTATION):
        if not isinstance(value, str) or not _NAMESPACE.fullmatch(value):
            raise SnapshotFileError(f"{source}: List annotation {SYSTEM_NAMESPACE_ANNOTATION}: {value!r} is not a namespace name")
        recorded.add(value)
    if len(recorded) > 1:
        raise SnapshotFileError(f"{source}: Lists record different system namespaces: {', '.join(sorted(recorded))}")
    return next(iter(recorded), None)


def _recorded_unreadable(documents: Iterable[Any]) -> tuple[UnreadableNamespace, ...]:
    """The unreadable namespaces the Lists record (UNREADABLE_ANNOTATION); SnapshotError when malformed."""
    found: list[UnreadableNamespace] = []
    for value in _list_annotations(documents, UNREADABLE_ANNOTATION):
        found += unreadable_from_annotation(value, f"List annotation {UNREADABLE_ANNOTATION}")
    return tuple(found)
