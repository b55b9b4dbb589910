"""`render -o -`: a stream kubectl and kustomize can read, the other documents behind a flag."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cli.main import EXIT_BAD_INPUT, EXIT_OK, main
from tests.cli.inputs import DEMO, NOW
from tests.live.conftest import admin, admin_access, clean_shared_namespaces, own_crds  # noqa: F401 - fixtures of the dry run
from tests.live.world import kind_of

MAGICSTICK = Path(sys.executable).parent / "magicstick"


def _sources(stream: str) -> list[str]:
    return [line.removeprefix("# Source: ") for line in stream.splitlines() if line.startswith("# Source: ")]


def test_every_document_of_the_stream_is_a_kubernetes_object_with_api_version_kind_and_name(capsys):
    assert main(["render", "-f", str(DEMO), "-o", "-", "--now", NOW]) == EXIT_OK
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert documents
    for document in documents:
        assert isinstance(document.get("apiVersion"), str) and document["apiVersion"]
        assert isinstance(document.get("kind"), str) and document["kind"]
        assert isinstance(document["metadata"].get("name"), str) and document["metadata"]["name"]


def test_the_stream_holds_every_resource_of_a_directory_render_and_nothing_else(capsys, demo_render):
    assert main(["render", "-f", str(DEMO), "-o", "-", "--now", NOW]) == EXIT_OK
    streamed = _sources(capsys.readouterr().out)
    assert streamed == [f"resources/{p.name}" for p in sorted((demo_render / "resources").iterdir())]


def test_all_streams_the_status_and_dynamic_documents_after_the_resources(capsys, demo_render):
    assert main(["render", "-f", str(DEMO), "-o", "-", "--now", NOW, "--all"]) == EXIT_OK
    streamed = _sources(capsys.readouterr().out)
    folders = ("resources", "status", "dynamic")
    assert streamed == [f"{folder}/{p.name}" for folder in folders for p in sorted((demo_render / folder).iterdir())]


def test_the_summary_of_a_resources_only_stream_still_counts_everything_rendered(capsys):
    assert main(["render", "-f", str(DEMO), "-o", "-", "--now", NOW]) == EXIT_OK
    captured = capsys.readouterr()
    assert captured.err.splitlines()[-1].startswith(
        "wrote 40 resources to standard output (13 statuses and 4 dynamic resources not streamed, see --all);"
    )


def test_all_with_an_output_directory_is_a_usage_error_naming_the_flag(tmp_path, capsys):
    assert main(["render", "-f", str(DEMO), "-o", str(tmp_path / "out"), "--all"]) == EXIT_BAD_INPUT
    assert (
        capsys.readouterr().err
        == "magicstick render: --all: only with -o - (a directory render always holds every document)\n"
    )
    assert not (tmp_path / "out").exists()


def test_the_stream_applies_with_a_server_side_dry_run(tmp_path, clean_shared_namespaces, admin):
    """`magicstick render -f s.yaml -o - | kubectl apply --dry-run=server -f -`, with the test
    API server's own apply (dryRun=All) in place of kubectl."""
    done = subprocess.run(
        [str(MAGICSTICK), "render", "-f", str(DEMO), "-o", "-", "--now", NOW],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == EXIT_OK, done.stderr
    documents = list(yaml.safe_load_all(done.stdout))
    assert documents
    for document in documents:
        accepted = admin.apply(kind_of(document), document, field_manager="magicstick", dry_run=True)
        assert (accepted["kind"], accepted["metadata"]["name"]) == (document["kind"], document["metadata"]["name"])


def test_the_render_help_says_the_stream_holds_the_resources_and_all_adds_the_rest(capsys):
    with pytest.raises(SystemExit):
        main(["render", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "-o - streams the resources only" in out
    assert "--all adds the status/ and dynamic/ documents" in out
