"""Identities as the engine sees them: unique URNs by construction, aliases from earlier names,
and the offline monitor refusing a duplicate URN exactly as the engine does."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from cli.main import EXIT_BAD_INPUT, main
from cli.offline import DuplicateUrnError, RecordingMonitor, run_offline
from planning.objects import DesiredObject, dashed_logical_name_of, logical_name_of
from program import main as program
from tests.planning.builders import with_flux
from tests.planning.models.world import local_model, platform

NOW = "2026-01-01T00:00:00Z"
KUBEAI_MODEL = "kubernetes:kubeai.org/v1:Model"


def _model_in(name: str, target_namespace: str) -> dict:
    model = local_model(name)
    model["spec"]["targetNamespace"] = target_namespace
    return model


def _run(tmp_path: Path, *objects: dict):
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(with_flux(objects)))
    _, run = run_offline(program.run, {"snapshotFile": str(snapshot), "now": NOW})
    return run


def test_two_models_whose_dashed_names_collide_get_two_urns(tmp_path):
    run = _run(tmp_path, *platform(), _model_in("team-llama", "ai"), _model_in("llama", "ai-team"))
    names = sorted(r.name for r in run.of_type(KUBEAI_MODEL))
    assert names == ["model/ai-team/llama", "model/ai/team-llama"]
    assert len({r.urn for r in run.registrations}) == len(run.registrations)


def test_every_renamed_object_keeps_its_earlier_name_as_an_alias(tmp_path):
    run = _run(tmp_path, *platform(), _model_in("team-llama", "ai"))
    (model,) = run.of_type(KUBEAI_MODEL)
    assert model.aliases == ("model-ai-team-llama",)


_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)


@given(first=st.tuples(_LABEL, _LABEL), second=st.tuples(_LABEL, _LABEL))
def test_logical_names_of_different_objects_never_collide(first, second):
    """Kubernetes names and namespaces never contain the separator, so the join is injective."""
    if first != second:
        assert logical_name_of(kind="Model", namespace=first[0], name=first[1]) != logical_name_of(
            kind="Model", namespace=second[0], name=second[1]
        )


def test_the_dashed_scheme_of_earlier_versions_did_collide():
    assert dashed_logical_name_of(kind="Model", namespace="ai", name="team-llama") == dashed_logical_name_of(
        kind="Model", namespace="ai-team", name="llama"
    )


def test_an_object_with_an_explicit_logical_name_has_no_alias():
    crd = DesiredObject.of(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "x.example.com"},
        },
        logical_name="crd-x.example.com",
    )
    assert crd.previous_logical_names == ()


def _two_config_maps_named_alike() -> None:
    k8s.core.v1.ConfigMap("same", metadata={"name": "first", "namespace": "a"})
    k8s.core.v1.ConfigMap("same", metadata={"name": "second", "namespace": "b"}, opts=pulumi.ResourceOptions())


def test_the_offline_monitor_refuses_a_duplicate_urn_naming_both_source_objects():
    monitor = RecordingMonitor()
    with pytest.raises(DuplicateUrnError) as raised:
        run_offline(_two_config_maps_named_alike, {}, monitor=monitor)
    message = str(raised.value)
    assert message.startswith("duplicate resource URN urn:pulumi:offline::magicstick::")
    assert message.endswith("declared for ConfigMap a/first and for ConfigMap b/second")
    assert [r.name for r in monitor.registrations] == ["same"]


def test_render_of_the_colliding_models_succeeds(tmp_path, capsys):
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(
        yaml.safe_dump_all(with_flux([*platform(), _model_in("team-llama", "ai"), _model_in("llama", "ai-team")]))
    )
    assert main(["render", "-f", str(snapshot), "-o", str(tmp_path / "out"), "--now", NOW]) != EXIT_BAD_INPUT
    assert (tmp_path / "out" / "resources" / "model.ai-team.llama.yaml").is_file()
    assert (tmp_path / "out" / "resources" / "model.ai.team-llama.yaml").is_file()


def test_render_refuses_a_program_that_declares_a_duplicate_urn_with_one_line_naming_both(tmp_path):
    from cli.render import RenderInputError, RenderOptions, render_files

    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(with_flux([])))
    with pytest.raises(RenderInputError) as raised:
        render_files(snapshot=snapshot, options=RenderOptions(now=NOW), pulumi_program=_two_config_maps_named_alike)
    message = str(raised.value)
    assert len(message.splitlines()) == 1
    assert message.startswith(f"{snapshot}: duplicate resource URN ")
    assert message.endswith("declared for ConfigMap a/first and for ConfigMap b/second")
