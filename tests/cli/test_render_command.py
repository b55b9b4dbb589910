"""`magicstick render`: standard input and output, the summary, --strict, progress, run flags."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import yaml

from catalogs import load_catalogs
from cli.main import EXIT_BAD_INPUT, EXIT_FINDING, EXIT_OK, main
from planning.snapshot import Snapshot
from planning.unset_images import unset_images
from providers.snapshot_capture import snapshot_document, snapshot_text
from tests.cli.inputs import DEMO, INVALID_MODEL, NOW, demo_objects, snapshot_with

MAGICSTICK = Path(sys.executable).parent / "magicstick"


def _documents_of(directory: Path) -> list[dict]:
    """The documents of a directory render, in render order (resources/, status/, dynamic/, by name)."""
    return [
        yaml.safe_load(p.read_text())
        for folder in ("resources", "status", "dynamic")
        for p in sorted((directory / folder).iterdir())
    ]


def _sources(stream: str) -> list[str]:
    return [line.removeprefix("# Source: ") for line in stream.splitlines() if line.startswith("# Source: ")]


def test_render_from_stdin_to_stdout_with_all_gives_the_documents_of_a_directory_render(
    monkeypatch, capsys, demo_render
):
    monkeypatch.setattr(sys, "stdin", io.StringIO(DEMO.read_text()))
    assert main(["render", "-f", "-", "-o", "-", "--now", NOW, "--all"]) == EXIT_OK
    out = capsys.readouterr().out
    assert list(yaml.safe_load_all(out)) == _documents_of(demo_render)


def test_each_streamed_document_follows_a_separator_and_the_name_of_its_file_in_render_order(
    monkeypatch, capsys, demo_render
):
    monkeypatch.setattr(sys, "stdin", io.StringIO(DEMO.read_text()))
    main(["render", "--snapshot", "-", "--out", "-", "--now", NOW, "--all"])
    out = capsys.readouterr().out
    expected = [
        f"{folder}/{p.name}"
        for folder in ("resources", "status", "dynamic")
        for p in sorted((demo_render / folder).iterdir())
    ]
    assert _sources(out) == expected
    assert out.count("---\n# Source: ") == len(expected)
    assert out.startswith("---\n# Source: resources/")


def test_the_installed_command_streams_pure_yaml_and_keeps_the_summary_on_stderr(demo_render):
    done = subprocess.run(
        [str(MAGICSTICK), "render", "-f", "-", "-o", "-", "--now", NOW, "--all"],
        input=DEMO.read_text(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == EXIT_OK, done.stderr
    assert list(yaml.safe_load_all(done.stdout)) == _documents_of(demo_render)
    assert "wrote 40 resources" not in done.stdout
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("wrote 40 resources, 13 statuses and 4 dynamic resources to standard output")
    )


def test_a_bad_snapshot_on_stdin_exits_2_naming_standard_input(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("apiVersion: v1\nkind: [unclosed\n"))
    assert main(["render", "-f", "-", "-o", "-"]) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err.startswith("magicstick render: standard input: not valid YAML")
        and len(captured.err.splitlines()) == 1
    )


def test_a_snapshot_on_stdin_that_is_not_utf8_exits_2_with_one_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"kind: \xff\xfe\n"), errors="surrogateescape"))
    assert main(["render", "-f", "-", "-o", "-"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == "magicstick render: standard input: not UTF-8 text (byte 6)\n"


def test_the_summary_counts_the_rendered_statuses_by_phase(tmp_path, capsys):
    assert main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--now", NOW]) == EXIT_OK
    line = capsys.readouterr().out.strip()
    assert line == (
        f"wrote 40 resources, 13 statuses and 4 dynamic resources under {tmp_path / 'out'}; "
        "phases: Ready 7, Reconciling 3, Starting 1, WaitingForGPU 1, WaitingForModules 1"
    )


def test_the_summary_names_a_failed_object_with_its_reason(tmp_path, capsys):
    snapshot = snapshot_with(tmp_path, INVALID_MODEL)
    assert main(["render", "-f", str(snapshot), "-o", str(tmp_path / "out"), "--now", NOW]) == EXIT_OK
    line = capsys.readouterr().out.strip()
    assert "phases: Failed 1, Ready 7," in line
    assert line.endswith("; unhealthy: ModelActivation ai-system/broken Failed: InvalidSpec")


def test_strict_exits_1_when_an_object_is_failed(tmp_path, capsys):
    snapshot = snapshot_with(tmp_path, INVALID_MODEL)
    assert main(["render", "-f", str(snapshot), "-o", str(tmp_path / "out"), "--now", NOW, "--strict"]) == EXIT_FINDING
    assert (tmp_path / "out" / "status" / "modelactivation.ai-system.broken.yaml").is_file()


def test_strict_exits_0_when_no_object_is_failed(tmp_path):
    assert main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--now", NOW, "--strict"]) == EXIT_OK


def test_strict_with_stdout_exits_1_and_still_streams_every_document(tmp_path, capsys):
    snapshot = snapshot_with(tmp_path, INVALID_MODEL)
    assert main(["render", "-f", str(snapshot), "-o", "-", "--now", NOW, "--strict", "--all"]) == EXIT_FINDING
    captured = capsys.readouterr()
    assert "status/modelactivation.ai-system.broken.yaml" in _sources(captured.out)
    assert "unhealthy: ModelActivation ai-system/broken Failed: InvalidSpec" in captured.err


def test_verbose_render_says_each_stage_on_stderr_in_one_line(tmp_path, capsys):
    assert main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--now", NOW, "-v"]) == EXIT_OK
    err = capsys.readouterr().err.splitlines()
    stages = [line.removeprefix("magicstick render: ") for line in err if ": warning: " not in line]
    assert stages[0] == f"reading the snapshot: {len(demo_objects())} objects"
    assert stages[1] == "planning"
    assert stages[2].startswith("declaring: ") and stages[2].endswith(" resources")
    assert stages[3] == "writing: 57 files"
    assert len(stages) == 4


def test_render_says_no_stage_on_stderr_when_stderr_is_not_a_terminal(tmp_path, capsys):
    assert main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--now", NOW]) == EXIT_OK
    assert [line for line in capsys.readouterr().err.splitlines() if ": warning: " not in line] == []


def _unset_image_warnings(command: str = "render") -> list[str]:
    """The warning lines the demo's unset images give, in the order the program lists them."""
    listed = unset_images(load_catalogs(), Snapshot.from_objects(demo_objects()))
    assert "runtimes.yaml freetoken.image" in [image.field for image in listed]
    return [f"magicstick {command}: warning: {image.describe()}" for image in listed]


def test_the_demo_render_warns_once_about_each_unset_image_on_stderr(tmp_path, capsys):
    assert main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--now", NOW]) == EXIT_OK
    assert capsys.readouterr().err.splitlines() == _unset_image_warnings()


def test_a_diff_of_two_snapshots_warns_once_about_each_unset_image(tmp_path, capsys):
    other = snapshot_with(tmp_path, INVALID_MODEL)
    main(["diff", str(DEMO), str(other), "--now", NOW])
    assert capsys.readouterr().err.splitlines() == _unset_image_warnings("diff")


def test_domain_flags_reach_the_program_as_its_config(tmp_path):
    out = tmp_path / "out"
    domains = ["--domain", "stick.example.com", "--local-domain", "stick.example.local"]
    assert main(["render", "-f", str(DEMO), "-o", str(out), "--now", NOW, *domains]) == EXIT_OK
    public = yaml.safe_load((out / "resources" / "httproute.ai-system.openclaw-default-public.yaml").read_text())
    local = yaml.safe_load((out / "resources" / "httproute.ai-system.openclaw-default-local.yaml").read_text())
    assert public["spec"]["hostnames"] == ["default.openclaw.stick.example.com"]
    assert local["spec"]["hostnames"] == ["default.openclaw.stick.example.local"]


def _moved_snapshot(tmp_path: Path, *, recorded: str | None) -> Path:
    """The demo with its system namespace renamed to stick-system, as `magicstick snapshot` writes it."""
    objects = yaml.safe_load_all(DEMO.read_text().replace("ai-system", "stick-system"))
    document = snapshot_document([o for o in objects if o], system_namespace=recorded or "unused")
    if recorded is None:
        del document["metadata"]
    path = tmp_path / "moved.yaml"
    path.write_text(snapshot_text(document))
    return path


def test_render_uses_the_namespace_the_snapshot_records(tmp_path):
    out = tmp_path / "out"
    assert (
        main(["render", "-f", str(_moved_snapshot(tmp_path, recorded="stick-system")), "-o", str(out), "--now", NOW])
        == EXIT_OK
    )
    appliance = yaml.safe_load((out / "status" / "appliance.stick-system.local.yaml").read_text())
    assert appliance["status"]["phase"]


def test_the_namespace_flag_wins_over_the_recorded_namespace(tmp_path):
    out = tmp_path / "out"
    snapshot = _moved_snapshot(tmp_path, recorded="stick-system")
    assert main(["render", "-f", str(snapshot), "-o", str(out), "--now", NOW, "--namespace", "ai-system"]) == EXIT_OK
    assert not list((out / "status").iterdir())
    assert (out / "resources" / "moduleactivation.ai-system.amd-gpu.yaml").is_file()


def test_without_a_flag_or_a_recorded_namespace_render_uses_the_default(tmp_path):
    out = tmp_path / "out"
    assert (
        main(["render", "-f", str(_moved_snapshot(tmp_path, recorded=None)), "-o", str(out), "--now", NOW]) == EXIT_OK
    )
    assert (out / "resources" / "moduleactivation.ai-system.amd-gpu.yaml").is_file()


def test_an_invalid_namespace_flag_exits_2_naming_the_flag(tmp_path, capsys):
    assert (
        main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--namespace", "Not_A_Namespace"])
        == EXIT_BAD_INPUT
    )
    err = capsys.readouterr().err
    assert err.startswith("magicstick render: --namespace: 'Not_A_Namespace'") and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()
