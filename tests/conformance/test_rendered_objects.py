"""Every rendered object validates against the schema of its kind.

Flux objects are checked against the vendored upstream CRDs in third_party/crds, the
program's own kinds against the CRDs it generates and installs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from api.crdgen import load_committed_crds
from cli.render import render
from tests.planning.builders import CATALOGS, activation, appliance, kustomization_for, ready_modules, with_flux
from tests.support.crd_schema import CrdSchemaRegistry, upstream_registry

REPOSITORY = Path(__file__).resolve().parents[2]
DEMO = REPOSITORY / "examples" / "demo" / "snapshot.yaml"


@pytest.fixture(scope="module")
def own_registry(tmp_path_factory) -> CrdSchemaRegistry:
    directory = tmp_path_factory.mktemp("own-crds")
    for crd in load_committed_crds():
        (directory / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd))
    return CrdSchemaRegistry(directory)


def _every_module_scenario() -> list[dict]:
    """Every catalogued module enabled (dashboard by seeding), most Ready, one suspended by an unready dependency."""
    names = [entry.name for entry in CATALOGS.modules.entries]
    objects = [appliance({"dashboard": True})] + [activation(name) for name in names if name != "dashboard"]
    objects += ready_modules(*[n for n in names if n != "litellm"])
    objects.append(kustomization_for("litellm", "False", reason="HealthCheckFailed", message="timeout"))
    return objects


def _render(tmp_path: Path, objects: list[dict] | None) -> Path:
    snapshot = DEMO
    if objects is not None:
        snapshot = tmp_path / "snapshot.yaml"
        snapshot.write_text(yaml.safe_dump_all(with_flux(objects)))
    out = tmp_path / "out"
    render(snapshot=snapshot, out=out, now="2026-01-01T00:00:00Z")
    return out


@pytest.mark.parametrize("scenario", ["demo", "every-module"])
def test_every_rendered_kustomization_validates_against_the_upstream_flux_schema(tmp_path, scenario):
    out = _render(tmp_path, None if scenario == "demo" else _every_module_scenario())
    registry = upstream_registry()
    kustomizations = [yaml.safe_load(p.read_text()) for p in sorted((out / "resources").glob("kustomization.*.yaml"))]
    assert kustomizations
    for obj in kustomizations:
        assert registry.errors(obj) == [], obj["metadata"]["name"]


def test_every_rendered_kubeai_model_validates_against_the_upstream_kubeai_schema(tmp_path):
    out = _render(tmp_path, None)
    models = [yaml.safe_load(p.read_text()) for p in sorted((out / "resources").glob("model.*.yaml"))]
    assert len(models) == 2
    for model in models:
        assert upstream_registry().errors(model) == [], model["metadata"]["name"]
        assert len(model["metadata"]["name"]) <= 40


@pytest.mark.parametrize("kind", ["helmrelease", "httproute", "referencegrant", "securitypolicy"])
def test_every_rendered_instance_object_validates_against_its_upstream_schema(tmp_path, kind):
    out = _render(tmp_path, None)
    objects = [yaml.safe_load(p.read_text()) for p in sorted((out / "resources").glob(f"{kind}.*.yaml"))]
    assert objects
    for obj in objects:
        assert upstream_registry().errors(obj) == [], obj["metadata"]["name"]


def test_the_rendered_amd_device_config_validates_against_the_upstream_rocm_schema(tmp_path):
    out = _render(tmp_path, None)
    (device_config,) = [yaml.safe_load(p.read_text()) for p in (out / "resources").glob("deviceconfig.*.yaml")]
    assert upstream_registry().errors(device_config) == []


def test_the_every_module_scenario_renders_a_suspended_kustomization(tmp_path):
    out = _render(tmp_path, _every_module_scenario())
    model_catalog = CATALOGS.modules.get("model-catalog").kustomization
    rendered = yaml.safe_load((out / "resources" / f"kustomization.flux-system.{model_catalog}.yaml").read_text())
    assert rendered["spec"]["suspend"] is True


@pytest.mark.parametrize("scenario", ["demo", "every-module"])
def test_every_rendered_object_and_status_of_our_own_kinds_validates_against_our_crds(tmp_path, own_registry, scenario):
    out = _render(tmp_path, None if scenario == "demo" else _every_module_scenario())
    objects = [yaml.safe_load(p.read_text()) for p in sorted((out / "resources").glob("moduleactivation.*.yaml"))]
    statuses = [yaml.safe_load(p.read_text()) for p in sorted((out / "status").glob("*.yaml"))]
    assert objects and statuses
    for obj in objects:
        assert own_registry.errors(obj) == [], f"{obj['kind']}/{obj['metadata']['name']}"
    status_only = "spec: required field is missing"  # a /status write carries no spec
    for status in statuses:
        errors = [e for e in own_registry.errors(status) if e != status_only]
        assert errors == [], f"{status['kind']}/{status['metadata']['name']}"
