"""Paths given to render that are the wrong thing: a catalog directory that is absent or a file,
a Pulumi project file given as settings."""

from __future__ import annotations

from cli.main import EXIT_BAD_INPUT, main
from tests.cli.inputs import DEMO, NOW, REPOSITORY


def _render(tmp_path, *flags: str) -> int:
    return main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--now", NOW, *flags])


def test_an_absent_catalog_directory_is_named_with_its_flag(tmp_path, capsys):
    missing = tmp_path / "catalogs"
    assert _render(tmp_path, "--catalogs", str(missing)) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == f"magicstick render: --catalogs {missing}: no such directory\n"


def test_a_catalog_path_that_is_a_file_says_a_directory_is_needed(tmp_path, capsys):
    file = tmp_path / "modules.yaml"
    file.write_text("modules: []\n")
    assert _render(tmp_path, "--catalogs", str(file)) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == (
        f"magicstick render: --catalogs {file}: is a file; give the directory that holds the catalog files\n"
    )


def test_a_pulumi_project_file_as_settings_says_what_it_is_and_what_to_give(tmp_path, capsys):
    project = REPOSITORY / "Pulumi.yaml"
    assert _render(tmp_path, "--settings", str(project)) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == (
        f"magicstick render: {project}: a Pulumi project file (it declares name: and runtime:), not settings;"
        " give a stack settings file (Pulumi.<stack>.yaml) or a mapping of magicstick: keys\n"
    )
    assert not (tmp_path / "out").exists()
