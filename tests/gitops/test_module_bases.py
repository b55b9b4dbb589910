"""Every module of catalogs/modules.yaml has its base at the path the catalog names, and the base
is what the generated Flux Kustomization can apply: it builds, its Flux objects validate against
the upstream schemas, its Helm charts are pinned, and it installs where the catalog expects.

The catalog is the one source of truth: a module added there without a base, or a base moved
away from its path, fails here.
"""

from __future__ import annotations

import re

import pytest

from catalogs import ModuleEntry
from planning.kustomizations import SourceRef
from tests.gitops.tree import (
    BARE_VARIABLE,
    build,
    build_text,
    flux_build,
    in_repository,
    is_flux,
    module_entries,
    of_kind,
    variables,
)
from tests.support.crd_schema import upstream_registry

MODULES = module_entries()
HARDWARE_PROVIDERS = tuple(entry for entry in MODULES if entry.hardware_provider)
APPLIANCE_SOURCE = SourceRef()
"""The GitRepository of the default Appliance/local (flux-system), which charts in this tree are read from."""
PINNED = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+$")


def _id(entry: ModuleEntry) -> str:
    return entry.name


@pytest.mark.parametrize("entry", MODULES, ids=_id)
def test_every_catalogued_module_has_a_kustomize_base_at_its_path(entry):
    assert (in_repository(entry.path) / "kustomization.yaml").is_file(), f"{entry.name}: no base at {entry.path}"


@pytest.mark.parametrize("entry", MODULES, ids=_id)
def test_every_module_base_builds_with_kustomize(entry):
    assert build(in_repository(entry.path)), f"{entry.name}: the build of {entry.path} is empty"


@pytest.mark.parametrize("entry", MODULES, ids=_id)
def test_every_flux_object_of_a_module_base_validates_against_the_upstream_schema(entry):
    registry = upstream_registry()
    for obj in flux_build(in_repository(entry.path)):
        if is_flux(obj):
            assert registry.errors(obj) == [], f"{entry.name}: {obj['kind']}/{obj['metadata']['name']}"


@pytest.mark.parametrize("entry", MODULES, ids=_id)
def test_every_helm_release_of_a_module_base_reads_a_source_the_base_or_the_appliance_provides(entry):
    objects = build(in_repository(entry.path))
    provided = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if is_flux(o)}
    provided.add(("GitRepository", APPLIANCE_SOURCE.namespace, APPLIANCE_SOURCE.name))
    for release in of_kind(objects, "HelmRelease"):
        spec = release["spec"]
        reference = spec.get("chartRef") or spec["chart"]["spec"]["sourceRef"]
        namespace = reference.get("namespace", release["metadata"]["namespace"])
        assert (reference["kind"], namespace, reference["name"]) in provided, release["metadata"]["name"]


@pytest.mark.parametrize("entry", [e for e in MODULES if e.target_namespace], ids=_id)
def test_a_module_with_a_target_namespace_installs_every_release_there(entry):
    releases = of_kind(build(in_repository(entry.path)), "HelmRelease")
    assert releases, f"{entry.name} names a target namespace but installs no release"
    assert {r["spec"]["targetNamespace"] for r in releases} == {entry.target_namespace}


@pytest.mark.parametrize("entry", MODULES, ids=_id)
def test_every_chart_a_module_base_installs_is_pinned_to_one_version(entry):
    objects = build(in_repository(entry.path))
    for release in of_kind(objects, "HelmRelease"):
        chart = release["spec"].get("chart", {}).get("spec")
        if chart is not None and chart["sourceRef"]["kind"] == "HelmRepository":
            assert PINNED.match(chart.get("version", "")), f"{release['metadata']['name']}: {chart.get('version')!r}"
    for source in of_kind(objects, "OCIRepository") + of_kind(objects, "GitRepository"):
        assert PINNED.match(source["spec"]["ref"].get("tag", "")), (
            f"{source['metadata']['name']}: {source['spec']['ref']}"
        )


@pytest.mark.parametrize("entry", MODULES, ids=_id)
def test_every_setting_a_module_base_substitutes_has_a_default(entry):
    text = build_text(in_repository(entry.path))
    assert [m.group(0) for m in variables(text) if m["default"] is None] == []
    assert BARE_VARIABLE.findall(text) == [], "a bare $name would be substituted by Flux"


@pytest.mark.parametrize("entry", HARDWARE_PROVIDERS, ids=_id)
def test_each_gpu_operator_base_installs_the_operator_version_the_catalog_reports(entry):
    releases = of_kind(build(in_repository(entry.path)), "HelmRelease")
    versions = {r["spec"]["chart"]["spec"]["version"].removeprefix("v") for r in releases}
    assert entry.operator_version is not None
    assert entry.operator_version.removeprefix("v") in versions


@pytest.mark.parametrize("entry", HARDWARE_PROVIDERS, ids=_id)
def test_no_gpu_operator_base_installs_a_second_node_feature_discovery(entry):
    for release in of_kind(build(in_repository(entry.path)), "HelmRelease"):
        values = release["spec"].get("values", {})
        bundled = values.get("nfd", values.get("node-feature-discovery"))
        if bundled is not None:
            assert bundled["enabled"] is False, release["metadata"]["name"]
