"""The host's netplan configuration: its files below the root, saved and restored whole.

The agent writes one file of its own (NETPLAN_FILE); a rollback restores every file exactly as
it was (names, contents, modes), so nothing the administrator wrote is lost.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Final

from services.host_agent.journal import durable_write

NETPLAN_DIR: Final = "etc/netplan"
NETPLAN_FILE: Final = "90-magicstick.yaml"


def netplan_dir(root: Path) -> Path:
    return root / NETPLAN_DIR


def netplan_hashes(root: Path) -> dict[str, str]:
    """name -> SHA-256 of every *.yaml file of the netplan directory."""
    directory = netplan_dir(root)
    if not directory.is_dir():
        return {}
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(directory.glob("*.yaml"))}


def saved_configuration(root: Path) -> dict[str, dict[str, str | int]]:
    """Every netplan file, as the journal keeps it: name -> base64 contents and mode."""
    directory = netplan_dir(root)
    if not directory.is_dir():
        return {}
    return {
        path.name: {"contents": base64.b64encode(path.read_bytes()).decode(), "mode": path.stat().st_mode & 0o777}
        for path in sorted(directory.glob("*.yaml"))
    }


def restore_configuration(root: Path, saved: dict[str, dict[str, str | int]]) -> None:
    """Make the netplan directory's *.yaml files exactly `saved` again."""
    directory = netplan_dir(root)
    directory.mkdir(parents=True, exist_ok=True)
    for path in directory.glob("*.yaml"):
        if path.name not in saved:
            path.unlink()
    for name, file in saved.items():
        durable_write(directory / name, base64.b64decode(str(file["contents"])), mode=int(file["mode"]))
        os.chmod(directory / name, int(file["mode"]))
