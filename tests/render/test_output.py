"""Where a render goes: never over files it did not write, replaced whole, every failure one line.

A previous render is recognised by the marker file render writes at its root; anything else in
a non-empty directory is refused before the program runs. Failures midway are injected through
render's `write_file` parameter, the function that writes each file.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml

from cli.errors import RenderInputError
from cli.main import EXIT_BAD_INPUT, EXIT_OK, main
from cli.output import MARKER, write_text_file
from cli.render import render
from tests.cli.inputs import DEMO, NOW, snapshot_with, tree
from tests.support.unwritable import refusal_of, refusing_directory


def _failing_after(count: int, error: OSError):
    """A file writer that writes `count` files, then fails with `error`."""
    written = []

    def write_file(path: Path, text: str) -> None:
        if len(written) >= count:
            raise error
        write_text_file(path, text)
        written.append(path)

    return write_file


def _previous_render(tmp_path: Path, demo_render: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(demo_render, out)
    (out / "resources" / "stale.yaml").write_text("old: true\n")
    return out


def _siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name != out.name)


def test_render_writes_an_absent_directory_and_marks_it_as_a_render(tmp_path):
    out = tmp_path / "new" / "out"
    render(snapshot=DEMO, out=out, now=NOW)
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "dynamic", "resources", "status"]


def test_render_writes_into_an_empty_directory(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    render(snapshot=DEMO, out=out, now=NOW)
    assert (out / MARKER).is_file() and (out / "status" / "appliance.ai-system.local.yaml").is_file()


def test_a_written_directory_has_the_mode_the_umask_gives_not_a_private_temporary_one(tmp_path):
    out = tmp_path / "out"
    render(snapshot=DEMO, out=out, now=NOW)
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~mask


def test_render_replaces_a_previous_render_whole(tmp_path, demo_render):
    out = _previous_render(tmp_path, demo_render)
    render(snapshot=DEMO, out=out, now=NOW)
    assert not (out / "resources" / "stale.yaml").exists()
    assert tree(out) == tree(demo_render)
    assert _siblings(out) == []


def test_render_refuses_a_directory_that_is_not_a_render_and_leaves_its_files_untouched(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "resources").mkdir(parents=True)
    (out / "resources" / "mine.yaml").write_text("mine: true\n")
    (out / "notes.txt").write_text("mine\n")
    before = tree(out)
    assert main(["render", "-f", str(DEMO), "-o", str(out), "--now", NOW]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert (
        err
        == f"magicstick render: {out}: not empty and not a previous render (no {MARKER}); choose an empty or new directory\n"
    )
    assert tree(out) == before
    assert _siblings(out) == []


@pytest.mark.parametrize(
    ("foreign", "named"),
    [
        ("notes.txt", "notes.txt"),
        ("resources/README.md", "resources/README.md"),
        ("status/nested/x.yaml", "status/nested"),
    ],
)
def test_render_refuses_a_previous_render_holding_a_file_it_did_not_write(
    tmp_path, demo_render, capsys, foreign, named
):
    out = _previous_render(tmp_path, demo_render)
    (out / foreign).parent.mkdir(parents=True, exist_ok=True)
    (out / foreign).write_text("mine\n")
    before = tree(out)
    assert main(["render", "-f", str(DEMO), "-o", str(out), "--now", NOW]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert (
        err
        == f"magicstick render: {out}: holds {named}, which render did not write; remove it or choose another directory\n"
    )
    assert tree(out) == before


def test_a_render_failing_midway_leaves_the_previous_render_whole_and_no_temporary_directory(tmp_path, demo_render):
    out = _previous_render(tmp_path, demo_render)
    before = tree(out)
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    with pytest.raises(RenderInputError) as raised:
        render(snapshot=DEMO, out=out, now=NOW, write_file=_failing_after(5, full))
    assert str(raised.value).startswith(f"{out}/resources/")
    assert str(raised.value).endswith(": No space left on device")
    assert tree(out) == before
    assert _siblings(out) == []


def test_a_first_render_failing_midway_leaves_nothing_behind(tmp_path):
    out = tmp_path / "out"
    read_only = OSError(errno.EROFS, os.strerror(errno.EROFS))
    with pytest.raises(RenderInputError) as raised:
        render(snapshot=DEMO, out=out, now=NOW, write_file=_failing_after(0, read_only))
    assert str(raised.value) == f"{out}/{MARKER}: Read-only file system"
    assert list(tmp_path.iterdir()) == []


def test_a_render_failing_before_writing_leaves_the_previous_render_whole(tmp_path, demo_render, capsys):
    out = _previous_render(tmp_path, demo_render)
    before = tree(out)
    assert main(["render", "-f", str(DEMO), "-o", str(out), "--now", "yesterday"]) == EXIT_BAD_INPUT
    assert "magicstick:now" in capsys.readouterr().err
    assert tree(out) == before


def _one_line_exit_2(capsys, argv: list[str]) -> str:
    assert main(argv) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert len(captured.err.splitlines()) == 1 and "Traceback" not in captured.err
    return captured.err.strip()


def test_an_output_path_through_a_file_exits_2_naming_the_path_and_the_cause(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "out"
    err = _one_line_exit_2(capsys, ["render", "-f", str(DEMO), "-o", str(out), "--now", NOW])
    assert err == f"magicstick render: {out}: Not a directory"


def test_an_output_path_that_is_a_file_exits_2(tmp_path, capsys):
    out = tmp_path / "file"
    out.write_text("mine\n")
    err = _one_line_exit_2(capsys, ["render", "-f", str(DEMO), "-o", str(out), "--now", NOW])
    assert err == f"magicstick render: {out}: not a directory"
    assert out.read_text() == "mine\n"


def test_an_output_name_too_long_exits_2_naming_the_path_and_the_cause(tmp_path, capsys):
    out = tmp_path / ("o" * 300)
    err = _one_line_exit_2(capsys, ["render", "-f", str(DEMO), "-o", str(out), "--now", NOW])
    assert err == f"magicstick render: {out}: File name too long"


def test_a_snapshot_path_that_is_a_directory_exits_2_naming_it(tmp_path, capsys):
    err = _one_line_exit_2(capsys, ["render", "-f", str(tmp_path), "-o", str(tmp_path / "out")])
    assert err == f"magicstick render: {tmp_path}: cannot read snapshot file: Is a directory"


def test_an_output_directory_in_a_parent_without_write_permission_exits_2_naming_the_path_and_the_cause(
    tmp_path, capsys
):
    parent = refusing_directory(tmp_path)
    try:
        err = _one_line_exit_2(capsys, ["render", "-f", str(DEMO), "-o", str(parent / "magicstick-out"), "--now", NOW])
    finally:
        (tmp_path / "read-only").chmod(0o700)
    assert err == f"magicstick render: {parent / 'magicstick-out'}: {refusal_of(parent)}"


def test_an_object_with_a_253_character_name_renders_into_a_file_that_fits(tmp_path):
    name = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
    assert len(name) == 253
    long_model = {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModelActivation",
        "metadata": {"name": name, "namespace": "ai-system", "generation": 1},
        "spec": {"type": "bogus"},
    }
    snapshot = snapshot_with(tmp_path, long_model)
    out = tmp_path / "out"
    assert main(["render", "-f", str(snapshot), "-o", str(out), "--now", NOW]) == EXIT_OK
    [path] = [p for p in (out / "status").iterdir() if p.name.startswith("modelactivation.ai-system.aaa")]
    assert len(path.name.encode()) == 255
    assert yaml.safe_load(path.read_text())["metadata"]["name"] == name


def test_a_link_to_a_previous_render_stays_a_link_to_the_new_render(tmp_path, demo_render):
    real = _previous_render(tmp_path, demo_render)
    link = tmp_path / "link"
    link.symlink_to(real)
    render(snapshot=DEMO, out=link, now=NOW)
    assert link.is_symlink() and link.resolve() == real
    assert tree(real) == tree(demo_render)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "out"]
