"""Inputs of the command-line and render tests: the demo snapshot, variants of it, file trees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from cli.render import render

REPOSITORY = Path(__file__).resolve().parents[2]
DEMO = REPOSITORY / "examples" / "demo" / "snapshot.yaml"
NOW = "2026-01-01T12:00:00Z"
INVALID_MODEL = {
    "apiVersion": "appliance.magicstick.dev/v1alpha1",
    "kind": "ModelActivation",
    "metadata": {"name": "broken", "namespace": "ai-system", "generation": 1},
    "spec": {"type": "bogus"},
}


def demo_objects() -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(DEMO.read_text()) if document]


def snapshot_with(tmp_path: Path, *extra: dict[str, Any], name: str = "snapshot.yaml") -> Path:
    """The demo snapshot plus `extra` objects, as a file."""
    path = tmp_path / name
    path.write_text(DEMO.read_text() + "".join("\n---\n" + yaml.safe_dump(obj) for obj in extra))
    return path


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` (hidden ones included), by relative path."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def render_demo(directory: Path) -> Path:
    """The demo rendered at NOW into `directory`/render."""
    out = directory / "render"
    render(snapshot=DEMO, out=out, now=NOW)
    return out
