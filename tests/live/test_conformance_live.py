"""Everything `render` produces for the demo is accepted by the real apiserver (dryRun=All)."""

from __future__ import annotations

from pathlib import Path

import yaml

from cli.render import render
from providers.kinds import CRD
from tests.live.world import kind_of, load
from tests.support.crd_defaults import with_defaults
from tests.support.crd_schema import UnknownKindError, upstream_registry

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo" / "snapshot.yaml"


def _rendered(tmp_path: Path, folder: str) -> list[dict]:
    out = tmp_path / "render"
    render(snapshot=DEMO, out=out, now="2026-01-01T12:00:00Z")
    return [yaml.safe_load(p.read_text()) for p in sorted((out / folder).glob("*.yaml"))]


def test_every_rendered_object_is_accepted_by_server_side_apply_with_dry_run(clean_shared_namespaces, admin, tmp_path):
    objects = _rendered(tmp_path, "resources")
    assert {o["kind"] for o in objects} >= {
        "CustomResourceDefinition",
        "Kustomization",
        "ModuleActivation",
        "SecurityPolicy",
        "HTTPRoute",
        "ReferenceGrant",
        "PodDisruptionBudget",
    }
    for obj in objects:
        accepted = admin.apply(kind_of(obj), obj, field_manager="magicstick", dry_run=True)
        assert (accepted["apiVersion"], accepted["kind"], accepted["metadata"]["name"]) == (
            obj["apiVersion"],
            obj["kind"],
            obj["metadata"]["name"],
        )


def test_every_rendered_status_is_accepted_through_the_status_subresource(clean_shared_namespaces, admin, tmp_path):
    load(admin, [o for o in yaml.safe_load_all(DEMO.read_text()) if o and o["kind"] != "CustomResourceDefinition"])
    statuses = _rendered(tmp_path, "status")
    assert statuses
    for document in statuses:
        accepted = admin.apply(
            kind_of(document), document, field_manager="magicstick-status", dry_run=True, subresource="status"
        )
        assert accepted["status"]["phase"] == document["status"]["phase"]


def test_the_crd_defaults_of_the_test_doubles_are_the_ones_the_server_stores(clean_shared_namespaces, admin, tmp_path):
    """tests.support.crd_defaults against the API server's own defaulting, on every rendered
    upstream object (its answer to a dry-run apply is the object as stored), `default: ""`
    included: a client secret reference without a group is stored with `group: ""`."""
    compared = set()
    for obj in _rendered(tmp_path, "resources"):
        kind = kind_of(obj)
        if kind is CRD or not _is_upstream(obj):
            continue
        stored = admin.apply(kind, obj, field_manager="magicstick", dry_run=True)
        assert stored["spec"] == with_defaults(obj)["spec"], obj["metadata"]["name"]
        compared.add(obj["kind"])
    assert compared >= {"Kustomization", "HelmRelease", "SecurityPolicy", "HTTPRoute", "Model", "ReferenceGrant"}


def _is_upstream(obj) -> bool:
    try:
        upstream_registry().definition_for(obj["apiVersion"], obj["kind"])
    except UnknownKindError:
        return False
    return True
