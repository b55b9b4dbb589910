"""The vendored upstream files are unmodified, listed, licensed, and the only ones the tests read."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tests.support.vendored import REPOSITORY_ROOT, VENDORED_CRDS

SOURCES = VENDORED_CRDS / "SOURCES.md"
_ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| (?P<project>[^|]+?) \| `(?P<tag>[^`]+)` \| `(?P<path>[^`]+)` \| `(?P<commit>[0-9a-f]{40})` \| `(?P<blob>[0-9a-f]{40})` \|$")


def _rows() -> dict[str, re.Match[str]]:
    rows = {}
    for line in SOURCES.read_text().splitlines():
        match = _ROW.match(line)
        if match:
            rows[match["file"]] = match
    return rows


def _git_blob(path: Path) -> str:
    """What `git hash-object` prints for the file."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _vendored_files() -> list[str]:
    return sorted(str(p.relative_to(VENDORED_CRDS)) for p in VENDORED_CRDS.rglob("*") if p.is_file() and p != SOURCES)


def test_every_vendored_file_has_a_row_and_every_row_a_file():
    assert sorted(_rows()) == _vendored_files()


@pytest.mark.parametrize("relative", _vendored_files())
def test_every_vendored_file_is_the_upstream_blob_its_row_names(relative):
    assert _git_blob(VENDORED_CRDS / relative) == _rows()[relative]["blob"], f"{relative} differs from upstream"


def test_every_vendored_project_carries_its_license_from_the_same_tag():
    rows = _rows()
    for folder in sorted({Path(name).parts[0] for name in rows}):
        license_row = rows.get(f"{folder}/LICENSE")
        assert license_row is not None, f"{folder} has no LICENSE"
        tags = {row["tag"] for name, row in rows.items() if name.startswith(f"{folder}/")}
        assert tags == {license_row["tag"]}, f"{folder}: files from {tags}, license from {license_row['tag']}"


_NOT_PROJECT_FILES = frozenset({".git", "venv", "build", "out", "third_party", "__pycache__", ".pytest_cache", ".hypothesis", ".import_linter_cache"})


def test_no_project_file_refers_to_a_folder_outside_the_repository():
    outside = "../" + "shared"
    offenders = [
        str(path.relative_to(REPOSITORY_ROOT))
        for path in REPOSITORY_ROOT.rglob("*")
        if path.is_file()
        and not _NOT_PROJECT_FILES.intersection(path.relative_to(REPOSITORY_ROOT).parts)
        and not any(part.endswith(".egg-info") for part in path.parts)
        and outside in path.read_text(errors="ignore")
    ]
    assert offenders == []
