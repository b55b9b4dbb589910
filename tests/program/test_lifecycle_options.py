"""What decides an object's lifecycle in the engine: retained CRDs and forced ownership."""

from __future__ import annotations

from pathlib import Path

import yaml

from cli.offline import run_offline
from program import main as program
from tests.planning.builders import activation, appliance, kustomization_for, with_flux

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
FORCE = "pulumi.com/patchForce"


def _run(tmp_path: Path, *objects: dict):
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(with_flux(objects)))
    _, run = run_offline(program.run, {"snapshotFile": str(snapshot), "now": "2026-01-01T00:00:00Z"})
    return run


def test_the_programs_own_crds_are_retained_when_the_stack_deletes_them(tmp_path):
    crds = _run(tmp_path, appliance()).of_type(CRD)
    assert {c.inputs["metadata"]["name"] for c in crds} >= {
        "appliances.appliance.magicstick.dev",
        "modelactivations.appliance.magicstick.dev",
    }
    assert all(c.retain_on_delete for c in crds)


def test_every_object_the_program_owns_forces_its_server_side_apply(tmp_path):
    run = _run(tmp_path, appliance({"litellm": True}), activation("basis"))
    objects = [r for r in run.registrations if r.custom and r.type.startswith("kubernetes:") and "metadata" in r.inputs]
    owned = [r for r in objects if "spec" not in r.ignore_changes]
    assert owned and all(r.inputs["metadata"]["annotations"][FORCE] == "true" for r in owned)


def test_a_seeded_activation_whose_spec_belongs_to_its_user_is_never_forced(tmp_path):
    run = _run(tmp_path, appliance({"litellm": True}))
    (seeded,) = run.of_type("kubernetes:appliance.magicstick.dev/v1alpha1:ModuleActivation")
    assert FORCE not in seeded.inputs["metadata"].get("annotations", {})


def test_a_stale_generated_kustomization_is_removed_by_a_stale_removal_under_the_appliance(tmp_path):
    leftover = kustomization_for("litellm")
    leftover["metadata"]["uid"] = "uid-litellm"
    run = _run(tmp_path, appliance(), activation("litellm", enabled=False), leftover)
    (removal,) = run.of_type("pulumi-python:dynamic/magicstick:StaleRemoval")
    assert removal.name == f"stale/kustomization/flux-system/{leftover['metadata']['name']}"
    assert removal.parent == run.of_type("magicstick:index:Appliance")[0].urn
    assert {k: removal.inputs[k] for k in ("kind", "namespace", "uid")} == {
        "kind": "Kustomization",
        "namespace": "flux-system",
        "uid": "uid-litellm",
    }
    assert not run.of_type("kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization")
