"""The words of the command's counts: one of a thing in the singular, and the same count everywhere."""

from __future__ import annotations

from cli.diff import RenderTree, compare
from cli.main import EXIT_OK, main
from cli.render import RenderResult, summary
from planning.summary import RunSummary
from providers.snapshot_file import IgnoredKind
from tests.cli.inputs import DEMO, NOW

READY_ONE = RunSummary(phases=(("Ready", 1),), problems=())


def _result(count: int, *, ignored: tuple[IgnoredKind, ...] = ()) -> RenderResult:
    return RenderResult(
        files=(), resources=count, statuses=count, dynamic=count, status_summary=READY_ONE, ignored=ignored
    )


def test_one_of_each_is_counted_in_the_singular():
    assert summary(_result(1), "out") == "wrote 1 resource, 1 status and 1 dynamic resource under out; phases: Ready 1"


def test_none_and_many_are_counted_in_the_plural():
    assert summary(_result(0), "-").startswith(
        "wrote 0 resources, 0 statuses and 0 dynamic resources to standard output;"
    )
    assert summary(_result(2), "out").startswith("wrote 2 resources, 2 statuses and 2 dynamic resources under out;")


def test_one_object_not_read_is_counted_in_the_singular():
    text = summary(_result(2, ignored=(IgnoredKind(api_version="example.com/v1", kind="Widget", count=1),)), "out")
    assert text.endswith("; not read: 1 object of a kind the program does not use (Widget example.com/v1 1)")


def test_a_snapshot_of_one_object_says_one_object(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr("cli.main.write_snapshot", lambda **_: 1)
    assert main(["snapshot", "-o", str(tmp_path / "s.yaml")]) == EXIT_OK
    assert capsys.readouterr().out == f"wrote 1 object to {tmp_path / 's.yaml'}\n"


def test_a_diff_of_one_unchanged_file_says_one_file():
    tree = RenderTree(files={"resources/configmap.a.b.yaml": "x: 1\n"})
    assert list(compare(tree, tree).lines()) == ["no changes (1 file compared)\n"]


def test_the_verbose_count_of_declared_resources_is_the_summary_count(tmp_path, capsys):
    assert main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--now", NOW, "-v"]) == EXIT_OK
    captured = capsys.readouterr()
    declaring = next(line for line in captured.err.splitlines() if line.startswith("magicstick render: declaring: "))
    counted = declaring.removeprefix("magicstick render: declaring: ")
    assert captured.out.startswith(f"wrote {counted.split(' (')[0]} under ")
