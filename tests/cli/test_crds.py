"""`python -m cli.crds`: the committed CRD files under api/crds/ against the api types."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.crdgen import CRD_DIRECTORY
from api.meta import GROUP
from cli.crds import main, stale_files, write_crds


def test_committed_crd_files_match_the_types() -> None:
    assert stale_files(CRD_DIRECTORY) == [], "run: python -m cli.crds --write"


def test_check_passes_on_freshly_written_files(tmp_path: Path) -> None:
    write_crds(tmp_path)
    assert main(["--check", "--directory", str(tmp_path)]) == 0


def test_check_fails_naming_the_file_that_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_crds(tmp_path)
    changed = tmp_path / f"modelactivations.{GROUP}.yaml"
    changed.write_text(changed.read_text().replace("minimum: 16", "minimum: 8"))
    assert main(["--check", "--directory", str(tmp_path)]) == 1
    assert changed.name in capsys.readouterr().err


def test_check_fails_for_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_crds(tmp_path)
    (tmp_path / f"hostoperations.{GROUP}.yaml").unlink()
    assert main(["--check", "--directory", str(tmp_path)]) == 1
    assert f"hostoperations.{GROUP}.yaml" in capsys.readouterr().err


def test_check_fails_for_a_file_no_kind_generates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_crds(tmp_path)
    (tmp_path / f"gadgets.{GROUP}.yaml").write_text("kind: CustomResourceDefinition\n")
    assert main(["--check", "--directory", str(tmp_path)]) == 1
    assert f"gadgets.{GROUP}.yaml" in capsys.readouterr().err


def test_write_creates_one_file_per_crd_named_plural_dot_group(tmp_path: Path) -> None:
    written = write_crds(tmp_path)
    plurals = [
        "appliances",
        "moduleactivations",
        "modelactivations",
        "appinstances",
        "hostoperations",
        "appliancesetups",
    ]
    assert [path.name for path in written] == [f"{plural}.{GROUP}.yaml" for plural in plurals]


def test_each_written_file_says_which_command_regenerates_it(tmp_path: Path) -> None:
    assert all(
        path.read_text().startswith("# Generated from the api package by `python -m cli.crds --write`.")
        for path in write_crds(tmp_path)
    )
