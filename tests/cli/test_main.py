"""The face of the command: help, version, exit statuses."""

from __future__ import annotations

from importlib import metadata

import pytest

from cli.main import EXIT_OK, main


def test_no_arguments_prints_the_help_and_exits_0(capsys):
    assert main([]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("usage: magicstick")
    assert all(command in out for command in ("render", "diff", "snapshot"))


def test_version_prints_the_version_of_the_installed_distribution(capsys):
    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out == f"magicstick {metadata.version('magicstick')}\n"


def test_the_render_help_says_the_namespace_flag_wins_over_the_recorded_namespace(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["render", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert exited.value.code == 0
    assert "-f SNAPSHOT, --snapshot SNAPSHOT" in out and "-o OUT, --out OUT" in out
    assert "wins over the namespace the snapshot records" in out
    for flag in ("--namespace", "--domain", "--local-domain", "--strict", "--verbose", "--catalogs", "--now"):
        assert flag in out


def test_an_unknown_command_is_a_usage_error_with_status_2(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["frobnicate"])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
