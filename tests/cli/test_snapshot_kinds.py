"""What a snapshot holds besides what the program reads: a misspelled kind of our group, kinds
of other groups, nothing at all."""

from __future__ import annotations

import io
import sys

import pytest
import yaml

from cli.main import EXIT_BAD_INPUT, EXIT_OK, main
from planning.snapshot import Snapshot
from providers.live_reader import reads
from providers.snapshot_file import SnapshotFileError, parse_snapshot_text, reads_kind
from tests.cli.inputs import DEMO, NOW, snapshot_with

MISSPELLED = {
    "apiVersion": "appliance.magicstick.dev/v1alpha1",
    "kind": "AppInstanse",
    "metadata": {"name": "chat", "namespace": "ai-system"},
    "spec": {"application": "openwebui"},
}
WIDGET = {"apiVersion": "widgets.example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ai-system"}}


def _line_of(path, needle: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), start=1) if needle in line)


def test_an_unknown_kind_in_our_group_is_an_error_naming_the_kind_and_line(tmp_path, capsys):
    snapshot = snapshot_with(tmp_path, MISSPELLED)
    assert main(["render", "-f", str(snapshot), "-o", str(tmp_path / "out"), "--now", NOW]) == EXIT_BAD_INPUT
    line = _line_of(snapshot, "kind: AppInstanse")
    assert capsys.readouterr().err == (
        f"magicstick render: {snapshot}: line {line}: kind AppInstanse is not a kind of appliance.magicstick.dev"
        " (did you mean AppInstance?)\n"
    )
    assert not (tmp_path / "out").exists()


def test_an_unknown_kind_in_our_group_inside_a_list_names_its_own_line():
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [WIDGET, MISSPELLED]}, sort_keys=False)
    with pytest.raises(SnapshotFileError) as raised:
        parse_snapshot_text(text, source="s.yaml")
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if "AppInstanse" in row)
    assert str(raised.value).startswith(
        f"s.yaml: line {line}: kind AppInstanse is not a kind of appliance.magicstick.dev"
    )


def test_an_unknown_version_of_our_group_is_an_error_naming_the_version_and_line():
    text = yaml.safe_dump(
        dict(MISSPELLED, apiVersion="appliance.magicstick.dev/v1", kind="AppInstance"), sort_keys=False
    )
    with pytest.raises(SnapshotFileError) as raised:
        parse_snapshot_text(text, source="s.yaml")
    assert (
        str(raised.value)
        == "s.yaml: line 1: apiVersion appliance.magicstick.dev/v1 is not served (the version is v1alpha1)"
    )


def test_an_unknown_kind_on_standard_input_is_named_by_standard_input(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(yaml.safe_dump(MISSPELLED, sort_keys=False)))
    assert main(["render", "-f", "-", "-o", "-", "--now", NOW]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.startswith("magicstick render: standard input: line 2: kind AppInstanse")


def test_objects_of_kinds_of_other_groups_are_counted_in_the_summary(tmp_path, capsys):
    other = dict(WIDGET, metadata={"name": "w2", "namespace": "ai-system"})
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ai-system"}}
    snapshot = snapshot_with(tmp_path, WIDGET, other, service)
    assert main(["render", "-f", str(snapshot), "-o", str(tmp_path / "out"), "--now", NOW]) == EXIT_OK
    line = capsys.readouterr().out.strip()
    assert line.endswith(
        "; not read: 3 objects of kinds the program does not use (Widget widgets.example.com/v1 2, Service v1 1)"
    )


def test_a_snapshot_of_only_read_kinds_says_nothing_about_kinds_not_read(tmp_path, capsys):
    assert main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--now", NOW]) == EXIT_OK
    assert "not read" not in capsys.readouterr().out


def test_an_empty_snapshot_renders_with_a_warning_on_stderr(tmp_path, capsys):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert main(["render", "-f", str(empty), "-o", str(tmp_path / "out"), "--now", NOW]) == EXIT_OK
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0] == (
        f"magicstick render: warning: {empty} holds no objects; the render is what an empty cluster gives"
    )


def test_an_empty_snapshot_side_of_a_diff_is_a_warning(tmp_path, demo_render, capsys):
    empty = tmp_path / "empty.yaml"
    empty.write_text("---\n")
    main(["diff", str(demo_render), str(empty), "--now", NOW])
    assert "magicstick diff: warning: " + f"{empty} holds no objects" in capsys.readouterr().err


@pytest.mark.parametrize(
    "obj",
    [
        {
            "apiVersion": "appliance.magicstick.dev/v1alpha1",
            "kind": "AppInstance",
            "metadata": {"name": "x", "namespace": "n"},
        },
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "x", "namespace": "n"},
        },
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x"}},
        {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature", "metadata": {"name": "x", "namespace": "n"}},
        {"apiVersion": "kubeai.org/v1", "kind": "Model", "metadata": {"name": "x", "namespace": "n"}, "spec": {}},
        {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "x", "namespace": "n"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "n"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "n"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "n"}},
    ],
    ids=lambda obj: obj["kind"],
)
def test_a_kind_counted_as_read_is_one_the_snapshot_keeps(obj):
    assert reads_kind(obj["apiVersion"], obj["kind"])
    assert Snapshot.from_objects([obj]) != Snapshot.from_objects([])


def test_a_kind_counted_as_not_read_is_one_the_snapshot_drops():
    assert not reads_kind(WIDGET["apiVersion"], WIDGET["kind"])
    assert Snapshot.from_objects([WIDGET]) == Snapshot.from_objects([])


def test_every_kind_the_live_reader_lists_is_counted_as_read():
    assert [r.kind.kind for r in reads("ai-system") if not reads_kind(r.kind.api_version, r.kind.kind)] == []
