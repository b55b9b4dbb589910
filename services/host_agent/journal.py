"""The recovery journal: one fsynced file per HostOperation, written before the host is touched.

Rule: an entry is durable (written to a temporary file, fsynced, renamed over the old one, the
directory fsynced) before the action it announces starts, and again after the action ended.
After a crash or a reboot the agent reads the entry first and never starts the action again:

- `started` without `finished`: the action may or may not have happened. The operation is
  reported as uncertain with what the entry knows (unless the action defines a recovery, such
  as a reboot, which completes when the boot ID has changed, or a network change, which is
  rolled back to the saved configuration);
- `finished`: the outcome is known and is (re)written to the status.

Entries live in `<state dir>/journal/<operation UID>.json` (mode 0600); an entry whose operation
no longer exists is removed. What an action keeps to recover (`data`, e.g. a network change's
saved netplan files, which may hold an earlier Wi-Fi password) lives only while the action is
in flight: an ended entry holds only what the action's last step gives (engine.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any


class Stage(StrEnum):
    STARTED = "started"
    """Durable before the action starts."""
    APPLIED = "applied"
    """A network change is in place and waits for its confirmation (configure-network only)."""
    FINISHED = "finished"
    """The action ended; `outcome` holds the status it leads to."""


@dataclass(frozen=True)
class Outcome:
    """The status an action ended with."""

    phase: str
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    """Action-specific status fields (camelCase), e.g. networks for scan-wifi."""


@dataclass(frozen=True)
class Entry:
    operation_uid: str
    operation: str
    """namespace/name, for people reading the journal."""
    request_id: str
    action: str
    boot_id: str
    """The boot in which the action started."""
    stage: Stage
    started_at: str
    finished_at: str = ""
    outcome: Outcome | None = None
    data: dict[str, Any] = field(default_factory=dict)
    """What the action needs to recover (e.g. the saved network configuration's files), while it
    is in flight; once it ended, only what its last step gives."""

    def finished(self, outcome: Outcome, at: str) -> Entry:
        return replace(self, stage=Stage.FINISHED, finished_at=at, outcome=outcome)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Entry:
        raw = json.loads(text)
        outcome = raw.pop("outcome", None)
        return cls(**{**raw, "stage": Stage(raw["stage"]), "outcome": Outcome(**outcome) if outcome else None})


class JournalError(Exception):
    """An entry cannot be written or read: the action must not start."""


def durable_write(path: Path, text: str | bytes, *, mode: int = 0o600) -> None:
    """Replace `path` with `text` so that after a crash it holds either the old or the new text."""
    temporary = path.with_name(f".{path.name}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(descriptor, text.encode() if isinstance(text, str) else text)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class Journal:
    def __init__(self, directory: Path) -> None:
        self._directory = directory

    def _path(self, operation_uid: str) -> Path:
        if not operation_uid or "/" in operation_uid or operation_uid.startswith("."):
            raise JournalError(f"{operation_uid!r} is not an object UID")
        return self._directory / f"{operation_uid}.json"

    def read(self, operation_uid: str) -> Entry | None:
        path = self._path(operation_uid)
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise JournalError(f"journal entry {path} cannot be read: {error.strerror}") from error
        try:
            return Entry.from_json(text)
        except (ValueError, TypeError, KeyError) as error:
            raise JournalError(f"journal entry {path} is damaged: {error}") from error

    def write(self, entry: Entry) -> None:
        try:
            self._directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            durable_write(self._path(entry.operation_uid), entry.to_json())
        except OSError as error:
            raise JournalError(f"journal entry of {entry.operation} cannot be written: {error.strerror}") from error

    def operation_uids(self) -> frozenset[str]:
        if not self._directory.is_dir():
            return frozenset()
        return frozenset(path.stem for path in self._directory.glob("*.json"))

    def remove(self, operation_uid: str) -> None:
        path = self._path(operation_uid)
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            raise JournalError(f"journal entry {path} cannot be removed: {error.strerror}") from error
