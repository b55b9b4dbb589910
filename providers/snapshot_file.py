"""Read a snapshot file: Kubernetes objects as `kubectl get -o yaml` prints them.

The file holds one or more YAML documents; each is an object or a `List` of objects.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from planning.snapshot import Snapshot, SnapshotError


class SnapshotFileError(Exception):
    """The snapshot file cannot be used; the message names the file and the object."""


def read_snapshot_file(path: Path) -> Snapshot:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SnapshotFileError(f"{path}: cannot read snapshot file: {error.strerror or error}") from error
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise SnapshotFileError(f"{path}: not valid YAML{where}: {problem}") from error
    try:
        return Snapshot.from_objects(documents)
    except SnapshotError as error:
        raise SnapshotFileError(f"{path}: {error}") from error
