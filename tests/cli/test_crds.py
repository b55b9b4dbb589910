"""`python -m cli.crds`: the committed CRD files, under api/crds/ and in the public base's copy,
against the api types."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.crdgen import CRD_DIRECTORY
from api.meta import GROUP
from cli import crds
from cli.crds import PUBLIC_BASE_DIRECTORY, committed_directories, main, stale_files, write_crds


def test_committed_crd_files_match_the_types() -> None:
    assert stale_files(CRD_DIRECTORY) == [], "run: python -m cli.crds --write"


def test_the_public_bases_copy_of_the_crds_is_byte_for_byte_what_the_types_generate() -> None:
    assert stale_files(PUBLIC_BASE_DIRECTORY) == [], "run: python -m cli.crds --write"


def test_in_a_checkout_the_crds_are_committed_in_the_api_package_and_in_the_public_base() -> None:
    assert committed_directories() == (CRD_DIRECTORY, PUBLIC_BASE_DIRECTORY)


def test_write_without_a_directory_writes_every_committed_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copies = (tmp_path / "api", tmp_path / "base")
    monkeypatch.setattr(crds, "committed_directories", lambda: copies)
    assert main(["--write"]) == 0
    assert [stale_files(copy) for copy in copies] == [[], []]


def test_check_without_a_directory_names_a_stale_file_of_the_public_bases_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    copies = (tmp_path / "api", tmp_path / "base")
    for copy in copies:
        write_crds(copy)
    changed = copies[1] / f"appliances.{GROUP}.yaml"
    changed.write_text(changed.read_text() + "# edited by hand\n")
    monkeypatch.setattr(crds, "committed_directories", lambda: copies)
    assert main(["--check"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{changed} differs from the api types; run python -m cli.crds --write"
    ]


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
