"""`magicstick snapshot`: the List it writes records the system namespace; render reads it back.

The live capture is tested against a real API server in tests/live; here, the pure part that
builds the document, the reader, the file replacement and the command's failure path.
"""

from __future__ import annotations

import errno
import os

import pytest
import yaml

from cli.errors import RenderInputError
from cli.main import EXIT_BAD_INPUT, main
from cli.snapshot import replace_file
from planning.snapshot import HealthObservation
from providers.snapshot_capture import snapshot_document, snapshot_text
from providers.snapshot_file import (
    HEALTH_ANNOTATION,
    SYSTEM_NAMESPACE_ANNOTATION,
    SnapshotFileError,
    load_snapshot_file,
    parse_snapshot_text,
    read_snapshot_file,
)
from tests.cli.inputs import DEMO, demo_objects

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "managedFields": [{"manager": "kubelet"}]}}


def test_the_snapshot_document_is_a_list_recording_the_system_namespace_in_an_annotation():
    document = snapshot_document([NODE], system_namespace="stick-system")
    assert document["apiVersion"] == "v1" and document["kind"] == "List"
    assert document["metadata"] == {"annotations": {SYSTEM_NAMESPACE_ANNOTATION: "stick-system"}}
    assert [item["metadata"]["name"] for item in document["items"]] == ["n"]


def test_the_snapshot_document_drops_managed_fields_and_leaves_the_objects_read_unchanged():
    document = snapshot_document([NODE], system_namespace="ai-system")
    assert document["items"][0]["metadata"] == {"name": "n"}
    assert NODE["metadata"]["managedFields"] == [{"manager": "kubelet"}]


def test_a_captured_file_reads_back_with_its_objects_and_its_namespace():
    text = snapshot_text(snapshot_document(demo_objects(), system_namespace="stick-system"))
    loaded = parse_snapshot_text(text, source="captured.yaml")
    assert loaded.system_namespace == "stick-system"
    assert loaded.objects == len(demo_objects())
    assert loaded.snapshot == read_snapshot_file(DEMO)


def test_a_snapshot_without_a_recorded_namespace_reads_as_none():
    loaded = load_snapshot_file(DEMO)
    assert loaded.system_namespace is None
    assert loaded.snapshot == read_snapshot_file(DEMO)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (
            [{SYSTEM_NAMESPACE_ANNOTATION: "a"}, {SYSTEM_NAMESPACE_ANNOTATION: "b"}],
            "Lists record different system namespaces: a, b",
        ),
        (
            [{SYSTEM_NAMESPACE_ANNOTATION: 42}],
            f"List annotation {SYSTEM_NAMESPACE_ANNOTATION}: 42 is not a namespace name",
        ),
        (
            [{SYSTEM_NAMESPACE_ANNOTATION: "Not_A"}],
            f"List annotation {SYSTEM_NAMESPACE_ANNOTATION}: 'Not_A' is not a namespace name",
        ),
    ],
)
def test_an_unusable_recorded_namespace_names_the_file(annotations, expected):
    lists = [
        {
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"annotations": a},
            "items": [{**NODE, "metadata": {"name": f"node-{index}"}}],
        }
        for index, a in enumerate(annotations)
    ]
    with pytest.raises(SnapshotFileError) as raised:
        parse_snapshot_text(yaml.safe_dump_all(lists), source="s.yaml")
    assert str(raised.value) == f"s.yaml: {expected}"


HEALTH = (
    HealthObservation(
        namespace="team-x",
        pod="omni-1",
        healthy=False,
        error="GET health: 503 Service Unavailable: engine is not running",
    ),
    HealthObservation(namespace="ai", pod="omni-0", healthy=True),
)


def test_the_snapshot_document_records_the_health_observations_sorted_in_an_annotation():
    document = snapshot_document([NODE], system_namespace="ai-system", health=HEALTH)
    assert document["metadata"]["annotations"][HEALTH_ANNOTATION] == (
        '[{"error": "", "healthy": true, "namespace": "ai", "pod": "omni-0"}, '
        '{"error": "GET health: 503 Service Unavailable: engine is not running", "healthy": false, "namespace": "team-x", "pod": "omni-1"}]'
    )


def test_the_snapshot_document_has_no_health_annotation_when_no_pod_was_asked():
    assert HEALTH_ANNOTATION not in snapshot_document([NODE], system_namespace="ai-system")["metadata"]["annotations"]


def test_a_captured_file_reads_back_with_its_health_observations():
    text = snapshot_text(snapshot_document(demo_objects(), system_namespace="stick-system", health=HEALTH))
    loaded = parse_snapshot_text(text, source="captured.yaml")
    assert loaded.snapshot.health == tuple(sorted(HEALTH, key=lambda h: (h.namespace, h.pod)))
    assert loaded.snapshot.health_of("team-x", "omni-1") == HEALTH[0]


def _with_health(value: object) -> str:
    document = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {HEALTH_ANNOTATION: value}},
        "items": [NODE],
    }
    return yaml.safe_dump(document)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("not json", f"annotation {HEALTH_ANNOTATION} is not JSON: Expecting value"),
        ('{"pod": "omni-0"}', f"annotation {HEALTH_ANNOTATION} must be a JSON array"),
        ("[42]", "health observation 0 must be a mapping"),
        ('[{"pod": "omni-0", "healthy": true}]', "health observation 0: namespace must be a non-empty string"),
        ('[{"namespace": "ai", "pod": "", "healthy": true}]', "health observation 0: pod must be a non-empty string"),
        (
            '[{"namespace": "ai", "pod": "omni-0", "healthy": "yes"}]',
            "health observation 0: healthy must be true or false",
        ),
        (
            '[{"namespace": "ai", "pod": "omni-0", "healthy": false, "error": 503}]',
            "health observation 0: error must be a string",
        ),
        (
            '[{"namespace": "ai", "pod": "omni-0", "healthy": true}, {"namespace": "ai", "pod": "omni-0", "healthy": false}]',
            "Pod ai/omni-0 is recorded twice",
        ),
    ],
)
def test_a_malformed_health_record_names_the_file_the_annotation_and_the_field(value, expected):
    with pytest.raises(SnapshotFileError) as raised:
        parse_snapshot_text(_with_health(value), source="s.yaml")
    assert str(raised.value).startswith(f"s.yaml: List annotation {HEALTH_ANNOTATION}: {expected}")


def test_replacing_a_snapshot_file_writes_the_whole_text_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "deep" / "snapshot.yaml"
    replace_file(path, "old\n")
    replace_file(path, "new\n")
    assert path.read_text() == "new\n"
    assert [p.name for p in path.parent.iterdir()] == ["snapshot.yaml"]


def test_a_snapshot_file_that_cannot_be_written_is_one_line_naming_the_path_and_the_cause(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RenderInputError) as raised:
        replace_file(tmp_path / "file" / "snapshot.yaml", "text\n")
    assert str(raised.value) == f"{tmp_path / 'file' / 'snapshot.yaml'}: {os.strerror(errno.ENOTDIR)}"


def test_the_snapshot_command_exits_2_with_one_line_and_writes_nothing_when_the_kubeconfig_is_unusable(
    tmp_path, capsys
):
    out = tmp_path / "snapshot.yaml"
    assert main(["snapshot", "-o", str(out), "--kubeconfig", str(tmp_path / "absent")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("magicstick snapshot: kubeconfig file") and len(err.splitlines()) == 1
    assert not out.exists()


def test_verbose_snapshot_says_it_reads_the_cluster_on_stderr(tmp_path, capsys):
    main(
        [
            "snapshot",
            "-o",
            str(tmp_path / "s.yaml"),
            "--kubeconfig",
            str(tmp_path / "absent"),
            "--namespace",
            "stick-system",
            "-v",
        ]
    )
    assert (
        capsys.readouterr().err.splitlines()[0]
        == "magicstick snapshot: reading the cluster (system namespace stick-system)"
    )
