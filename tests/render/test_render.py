"""`magicstick render`: the real program offline, deterministic files, clear errors."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
import yaml

from cli.main import EXIT_BAD_INPUT, main
from cli.offline import Registration
from cli.render import MASK, _as_object, render

REPOSITORY = Path(__file__).resolve().parents[2]
DEMO = REPOSITORY / "examples" / "demo" / "snapshot.yaml"
GOLDEN = REPOSITORY / "tests" / "golden" / "demo"
NOW = "2026-01-01T12:00:00Z"
UPDATE_GOLDEN = "MAGICSTICK_UPDATE_GOLDEN"


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*.yaml"))}


def test_rendering_the_demo_twice_gives_identical_bytes(tmp_path):
    render(snapshot=DEMO, out=tmp_path / "first", now=NOW)
    render(snapshot=DEMO, out=tmp_path / "second", now=NOW)
    first, second = _tree(tmp_path / "first"), _tree(tmp_path / "second")
    assert first and first == second


def test_the_demo_render_matches_the_reviewed_golden_files(tmp_path):
    render(snapshot=DEMO, out=tmp_path, now=NOW)
    if os.environ.get(UPDATE_GOLDEN):
        shutil.rmtree(GOLDEN, ignore_errors=True)
        shutil.copytree(tmp_path, GOLDEN)
    assert _tree(tmp_path) == _tree(GOLDEN), f"golden render changed; review it, then set {UPDATE_GOLDEN}=1 to accept"


def test_render_writes_objects_statuses_and_dynamic_resources_in_their_folders(tmp_path):
    result = render(snapshot=DEMO, out=tmp_path, now=NOW)
    assert len(list((tmp_path / "resources").iterdir())) == result.resources > 0
    assert len(list((tmp_path / "status").iterdir())) == result.statuses > 0
    assert (tmp_path / "dynamic").is_dir()
    appliance = yaml.safe_load((tmp_path / "status" / "appliance.ai-system.local.yaml").read_text())
    assert set(appliance) == {"apiVersion", "kind", "metadata", "status"}
    assert appliance["metadata"] == {"name": "local", "namespace": "ai-system"}


def test_host_operation_and_appliance_setup_status_is_never_rendered(tmp_path):
    snapshot = tmp_path / "snapshot.yaml"
    host_operation = {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "HostOperation",
        "metadata": {"name": "reboot-1", "namespace": "ai-system"},
        "spec": {},
    }
    snapshot.write_text(DEMO.read_text() + "\n---\n" + yaml.safe_dump(host_operation))
    render(snapshot=snapshot, out=tmp_path / "out", now=NOW)
    assert not [p for p in (tmp_path / "out" / "status").iterdir() if p.name.startswith("hostoperation")]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("kind: Node\nmetadata: {name: n}\n", "apiVersion is missing"),
        ("apiVersion: v1\nkind: Node\nmetadata: {}\n", "object 0 (Node): metadata.name is missing"),
        ("apiVersion: v1\nkind: [unclosed\n", "not valid YAML"),
        ("- just\n- a list\n", "is not a Kubernetes object"),
    ],
)
def test_a_bad_snapshot_exits_with_status_2_and_one_line_naming_file_and_object(tmp_path, capsys, content, expected):
    snapshot = tmp_path / "broken.yaml"
    snapshot.write_text(content)
    code = main(["render", "--snapshot", str(snapshot), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert len(err.strip().splitlines()) == 1
    assert str(snapshot) in err and expected in err
    assert "Traceback" not in err


def test_a_missing_snapshot_file_exits_with_status_2(tmp_path, capsys):
    code = main(["render", "--snapshot", str(tmp_path / "absent.yaml"), "--out", str(tmp_path / "out")])
    assert code == EXIT_BAD_INPUT
    assert "absent.yaml" in capsys.readouterr().err


def test_a_bad_catalog_exits_with_status_2_naming_the_file(tmp_path, capsys):
    catalogs = tmp_path / "catalogs"
    catalogs.mkdir()
    (catalogs / "modules.yaml").write_text("modules:\n  - name: basis\n    path: 42\n")
    code = main(["render", "--snapshot", str(DEMO), "--out", str(tmp_path / "out"), "--catalogs", str(catalogs)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert "modules.yaml" in err and len(err.strip().splitlines()) == 1


def test_a_bad_clock_exits_with_status_2(tmp_path, capsys):
    code = main(["render", "--snapshot", str(DEMO), "--out", str(tmp_path / "out"), "--now", "yesterday"])
    assert code == EXIT_BAD_INPUT
    assert "magicstick:now" in capsys.readouterr().err


def test_secret_data_never_reaches_a_rendered_file():
    secret = Registration(
        urn="urn",
        type="kubernetes:core/v1:Secret",
        name="api-key",
        parent="",
        custom=True,
        inputs={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "k"}, "stringData": {"api-key": "CHANGEME"}},
    )
    assert _as_object(secret)["stringData"] == {"api-key": MASK}


def test_a_render_runs_in_a_thread_an_earlier_asyncio_run_left_without_a_loop(tmp_path):
    asyncio.run(asyncio.sleep(0))
    asyncio.set_event_loop(None)
    result = render(snapshot=DEMO, out=tmp_path, now=NOW)
    assert result.resources == len(list((tmp_path / "resources").iterdir())) > 0
