"""The vendored upstream files are unmodified, listed, licensed, and the only ones the tests read."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tests.support.native_schema import VENDORED_KUBERNETES
from tests.support.vendored import REPOSITORY_ROOT, VENDORED_CHARTS, VENDORED_CRDS, VENDORED_MANIFESTS

VENDORED_FOLDERS = (VENDORED_CRDS, VENDORED_CHARTS, VENDORED_KUBERNETES, VENDORED_MANIFESTS)
"""Each holds a SOURCES.md listing its files; the same rules hold for all."""
_ROW = re.compile(
    r"^\| `(?P<file>[^`]+)` \| (?P<project>[^|]+?) \| `(?P<tag>[^`]+)` \| `(?P<path>[^`]+)` \| `(?P<commit>[0-9a-f]{40})` \| `(?P<blob>[0-9a-f]{40})` \|$"
)


def _rows(folder: Path) -> dict[str, re.Match[str]]:
    rows = {}
    for line in (folder / "SOURCES.md").read_text().splitlines():
        match = _ROW.match(line)
        if match:
            rows[match["file"]] = match
    return rows


def _git_blob(path: Path) -> str:
    """What `git hash-object` prints for the file."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _vendored_files(folder: Path) -> list[str]:
    sources = folder / "SOURCES.md"
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p != sources)


def _folder_id(folder: Path) -> str:
    return str(folder.relative_to(REPOSITORY_ROOT))


@pytest.mark.parametrize("folder", VENDORED_FOLDERS, ids=_folder_id)
def test_every_vendored_file_has_a_row_and_every_row_a_file(folder):
    assert sorted(_rows(folder)) == _vendored_files(folder)


@pytest.mark.parametrize(
    ("folder", "relative"),
    [(folder, relative) for folder in VENDORED_FOLDERS for relative in _vendored_files(folder)],
    ids=lambda value: _folder_id(value) if isinstance(value, Path) else value,
)
def test_every_vendored_file_is_the_upstream_blob_its_row_names(folder, relative):
    assert _git_blob(folder / relative) == _rows(folder)[relative]["blob"], f"{relative} differs from upstream"


@pytest.mark.parametrize("folder", VENDORED_FOLDERS, ids=_folder_id)
def test_every_vendored_project_carries_its_license_from_the_same_tag(folder):
    rows = _rows(folder)
    for project in sorted({Path(name).parts[0] for name in rows}):
        license_row = rows.get(f"{project}/LICENSE")
        assert license_row is not None, f"{project} has no LICENSE"
        tags = {row["tag"] for name, row in rows.items() if name.startswith(f"{project}/")}
        assert tags == {license_row["tag"]}, f"{project}: files from {tags}, license from {license_row['tag']}"
        commits = {row["commit"] for name, row in rows.items() if name.startswith(f"{project}/")}
        assert commits == {license_row["commit"]}, (
            f"{project}: files from {commits}, license from {license_row['commit']}"
        )


_NOT_PROJECT_FILES = frozenset(
    {
        ".git",
        "venv",
        "build",
        "out",
        "third_party",
        "__pycache__",
        ".pytest_cache",
        ".hypothesis",
        ".import_linter_cache",
    }
)


_MAY_LOOK_BESIDE_THE_CHECKOUT = frozenset({".ci/run"})
"""The CI entry point points the toolchain build at Go source archives beside the checkout when
that folder exists (scripts/toolchain/README.md): a fallback for modules the proxy refuses,
never something a test reads."""


def test_no_project_file_refers_to_a_folder_outside_the_repository():
    outside = "../" + "shared"
    offenders = [
        str(path.relative_to(REPOSITORY_ROOT))
        for path in REPOSITORY_ROOT.rglob("*")
        if path.is_file()
        and str(path.relative_to(REPOSITORY_ROOT)) not in _MAY_LOOK_BESIDE_THE_CHECKOUT
        and not _NOT_PROJECT_FILES.intersection(path.relative_to(REPOSITORY_ROOT).parts)
        and not any(part.endswith(".egg-info") for part in path.parts)
        and outside in path.read_text(errors="ignore")
    ]
    assert offenders == []
