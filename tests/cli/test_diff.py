"""`magicstick diff OLD NEW`: what a run would change, between renders or snapshots."""

from __future__ import annotations

import io
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import program.settings as program_settings
from cli.diff import RenderTree, compare
from cli.main import EXIT_BAD_INPUT, EXIT_FINDING, EXIT_OK, main
from tests.cli.inputs import DEMO, INVALID_MODEL, NOW, snapshot_with

APPLIANCE_STATUS = "status/appliance.ai-system.local.yaml"


def _copy(demo_render: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(demo_render, tmp_path / "copy"))


def test_a_render_against_itself_exits_0_and_says_no_changes(demo_render, capsys):
    assert main(["diff", str(demo_render), str(demo_render)]) == EXIT_OK
    assert capsys.readouterr().out == "no changes (57 files compared)\n"


def test_a_snapshot_against_its_own_render_exits_0(demo_render, capsys):
    assert main(["diff", str(DEMO), str(demo_render), "--now", NOW]) == EXIT_OK
    assert capsys.readouterr().out.startswith("no changes")


def test_a_changed_object_exits_1_with_its_unified_diff(demo_render, tmp_path, capsys):
    new = _copy(demo_render, tmp_path)
    path = new / APPLIANCE_STATUS
    path.write_text(
        path.read_text().replace("namespace: ai-system", "namespace: ai-system\n  labels: {edited: 'true'}", 1)
    )
    assert main(["diff", str(demo_render), str(new)]) == EXIT_FINDING
    out = capsys.readouterr().out
    assert out.startswith(f"changed: {APPLIANCE_STATUS}\n--- old/{APPLIANCE_STATUS}\n+++ new/{APPLIANCE_STATUS}\n@@ ")
    assert "\n+  labels: {edited: 'true'}\n" in out
    assert out.endswith("0 added, 0 removed, 1 changed\n")


def test_added_and_removed_objects_are_listed_in_render_order(demo_render, tmp_path, capsys):
    new = _copy(demo_render, tmp_path)
    (new / "resources" / "service.ai-system.magicstick-access-guard.yaml").unlink()
    (new / "dynamic" / "extra.yaml").write_text("type: x\n")
    (new / "resources" / "aaa.yaml").write_text("kind: X\n")
    assert main(["diff", str(demo_render), str(new)]) == EXIT_FINDING
    assert capsys.readouterr().out == (
        "added: resources/aaa.yaml\n"
        "added: dynamic/extra.yaml\n"
        "removed: resources/service.ai-system.magicstick-access-guard.yaml\n"
        "2 added, 1 removed, 0 changed\n"
    )


def test_two_snapshots_are_rendered_with_the_same_flags_and_compared(tmp_path, capsys):
    broken = snapshot_with(tmp_path, INVALID_MODEL)
    assert main(["diff", str(DEMO), str(broken), "--now", NOW]) == EXIT_FINDING
    out = capsys.readouterr().out
    assert "added: status/modelactivation.ai-system.broken.yaml\n" in out
    assert f"changed: {APPLIANCE_STATUS}\n" in out
    assert f"--- old/{APPLIANCE_STATUS}\n+++ new/{APPLIANCE_STATUS}\n" in out


def test_a_snapshot_on_standard_input_is_one_side_of_the_diff(demo_render, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(DEMO.read_text()))
    assert main(["diff", str(demo_render), "-", "--now", NOW]) == EXIT_OK
    assert capsys.readouterr().out.startswith("no changes")


def test_the_report_is_the_same_on_every_run(tmp_path, capsys):
    broken = snapshot_with(tmp_path, INVALID_MODEL)
    reports = []
    for _ in range(2):
        main(["diff", str(DEMO), str(broken), "--now", NOW])
        reports.append(capsys.readouterr().out)
    assert reports[0] == reports[1]


def test_an_absent_side_exits_2_with_one_line_naming_it(demo_render, tmp_path, capsys):
    absent = tmp_path / "absent.yaml"
    assert main(["diff", str(demo_render), str(absent)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"magicstick diff: {absent}: cannot read snapshot file") and len(err.splitlines()) == 1


def test_a_directory_that_is_not_a_render_exits_2(tmp_path, demo_render, capsys):
    assert main(["diff", str(tmp_path), str(demo_render)]) == EXIT_BAD_INPUT
    assert (
        capsys.readouterr().err
        == f"magicstick diff: {tmp_path}: not a render (no resources/, status/ or dynamic/ folder)\n"
    )


def test_both_sides_cannot_be_standard_input(capsys):
    assert main(["diff", "-", "-"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == "magicstick diff: OLD and NEW cannot both be standard input\n"


def test_compare_matches_files_by_path_and_ignores_order_of_reading():
    old = RenderTree(files={"status/b.yaml": "x\n", "resources/a.yaml": "1\n"})
    new = RenderTree(files={"resources/a.yaml": "2\n", "dynamic/c.yaml": "y\n"})
    difference = compare(old, new)
    assert (difference.added, difference.removed, difference.changed) == (
        ("dynamic/c.yaml",),
        ("status/b.yaml",),
        ("resources/a.yaml",),
    )
    assert not difference.equal


class _TickingClock(datetime):
    """A wall clock that moves a minute each time it is read."""

    reads = 0

    @classmethod
    def now(cls, tz=None):
        cls.reads += 1
        return datetime(2026, 1, 1, 12, 0, tzinfo=UTC) + timedelta(minutes=cls.reads)


def test_a_snapshot_against_itself_without_now_renders_both_sides_at_one_moment(monkeypatch, capsys):
    monkeypatch.setattr(program_settings, "datetime", _TickingClock)

    assert main(["diff", str(DEMO), str(DEMO)]) == EXIT_OK
    assert capsys.readouterr().out.startswith("no changes")
