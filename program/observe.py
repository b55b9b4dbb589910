"""Observe the world: the snapshot every plan starts from.

Invariant 1: a snapshot is complete or the run stops here, before any resource is declared.
"""

from __future__ import annotations

from planning.snapshot import Snapshot
from program.settings import Settings
from providers.snapshot_file import read_snapshot_file


class ObserveError(Exception):
    """The world could not be read completely; nothing may be declared."""


def observe(settings: Settings) -> Snapshot:
    if settings.snapshot_file is not None:
        return read_snapshot_file(settings.snapshot_file)
    raise ObserveError(
        "magicstick:snapshotFile is not set and this version reads no live cluster; "
        "capture a snapshot with `kubectl get ... -o yaml` and set magicstick:snapshotFile"
    )
