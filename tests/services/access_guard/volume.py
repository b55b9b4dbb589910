"""A grants directory written the way the kubelet writes a ConfigMap volume.

The kubelet's atomic writer never rewrites a file in place: it writes every key into a new
timestamped directory, points a temporary symlink at it and renames that over `..data`
(an atomic swap), then adds the user-visible `<key> -> ..data/<key>` symlinks for new keys,
removes those of removed keys, and deletes the old directory.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

DATA = "..data"
SYSTEM_NAMESPACE = "ai-system"
CLAIMS = {"subject": "sub", "roles": "roles", "groups": "groups"}


def grant(
    instance: str, *, authentication: str = "sso", minimum_role: str = "user", sharing: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A grant document as the program writes it, for `ai-system/<instance>`."""
    return {
        "instance": f"{SYSTEM_NAMESPACE}/{instance}",
        "authentication": authentication,
        "minimumRole": minimum_role,
        "sharing": sharing if sharing is not None else {"mode": "all"},
        "claims": dict(CLAIMS),
    }


def file_name(instance: str) -> str:
    return f"{SYSTEM_NAMESPACE}.{instance}.json"


class ConfigMapVolume:
    """A directory whose keys change only by the kubelet's `..data` swap."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[str, str] = {}
        self._serial = itertools.count(1)
        self._publish()

    def put(self, instance: str, document: dict[str, Any] | str) -> None:
        """Publish the grant of `instance` (a document, or raw text for malformed ones)."""
        self._files[file_name(instance)] = document if isinstance(document, str) else json.dumps(document)
        self._publish()

    def remove(self, instance: str) -> None:
        del self._files[file_name(instance)]
        self._publish()

    def _publish(self) -> None:
        previous = os.readlink(self.root / DATA) if (self.root / DATA).is_symlink() else None
        version = f"..2026_01_01_00_00_00.{next(self._serial):06d}"
        (self.root / version).mkdir()
        for name, text in self._files.items():
            (self.root / version / name).write_text(text, encoding="utf-8")
        temporary = self.root / "..data_tmp"
        temporary.symlink_to(version)
        os.replace(temporary, self.root / DATA)
        for name in self._files:
            if not (self.root / name).is_symlink():
                (self.root / name).symlink_to(Path(DATA) / name)
        for entry in self.root.iterdir():
            if entry.is_symlink() and not entry.name.startswith("..") and entry.name not in self._files:
                entry.unlink()
        if previous is not None:
            for child in (self.root / previous).iterdir():
                child.unlink()
            (self.root / previous).rmdir()
