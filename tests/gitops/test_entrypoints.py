"""The public Flux entrypoints, the default Appliance/local they ship, the render-only demo
overlay and the example overlay repository that includes this tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from api.crdgen import load_committed_crds
from catalogs import load_catalogs
from planning.kustomizations import SETTINGS_CONFIG_MAP, SourceRef
from planning.settings import APPLIANCE_NAME, PlanSettings
from tests.gitops.tree import DEMO_OVERLAY, ENTRYPOINTS, REPOSITORY, build, in_repository, is_flux, of_kind
from tests.support.crd_schema import CrdSchemaRegistry, upstream_registry

NFD = "node-feature-discovery"
OVERLAY_REPOSITORY = REPOSITORY / "examples" / "overlay-repository"
PUBLIC_BOUNDARY = ("example.com", "example.local", "CHANGEME", "magicstick.local")


def kustomizations(path: str) -> dict[str, dict]:
    return {k["metadata"]["name"]: k for k in of_kind(build(path), "Kustomization")}


def _dependencies(graph: dict[str, dict], name: str) -> set[str]:
    direct = {d["name"] for d in graph[name]["spec"].get("dependsOn", [])}
    return direct.union(*(_dependencies(graph, d) for d in direct)) if direct else set()


@pytest.mark.parametrize("path", [*ENTRYPOINTS, DEMO_OVERLAY])
def test_every_entrypoint_builds_and_its_flux_objects_validate_against_the_upstream_schema(path):
    registry = upstream_registry()
    flux = [o for o in build(path) if is_flux(o)]
    assert flux
    for obj in flux:
        assert registry.errors(obj) == [], f"{obj['kind']}/{obj['metadata']['name']}"


def test_the_single_node_entrypoint_is_the_neutral_graph():
    assert build(ENTRYPOINTS[1]) == build(ENTRYPOINTS[0])


def test_node_feature_discovery_starts_first_and_everything_else_waits_for_it():
    graph = kustomizations(ENTRYPOINTS[0])
    assert "dependsOn" not in graph[NFD]["spec"]
    assert graph[NFD]["spec"]["wait"] is True
    for name in graph:
        if name != NFD:
            assert NFD in _dependencies(graph, name), name


def test_the_operator_kustomization_installs_the_program_from_deploy_and_never_waits_on_the_appliance():
    graph = kustomizations(ENTRYPOINTS[0])
    operator = graph["magicstick-operator"]["spec"]
    assert operator["path"] == "./deploy"
    assert operator["wait"] is False and "healthChecks" not in operator
    assert build("deploy")


def test_the_pulumi_state_volume_of_deploy_is_never_pruned_by_flux():
    (state,) = of_kind(build("deploy"), "PersistentVolumeClaim")
    patches = kustomizations(ENTRYPOINTS[0])["magicstick-operator"]["spec"]["patches"]
    patched = [
        yaml.safe_load(p["patch"])
        for p in patches
        if p["target"] == {"kind": "PersistentVolumeClaim", "name": state["metadata"]["name"]}
    ]
    assert [p["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"] for p in patched] == ["disabled"]


def test_the_neutral_graph_installs_no_vendor_gpu_operator():
    gpu_paths = {entry.path for entry in load_catalogs().modules.entries if entry.hardware_provider}
    paths = {k["spec"]["path"] for k in kustomizations(ENTRYPOINTS[0]).values()}
    assert paths.isdisjoint(gpu_paths)
    built = [
        o
        for k in kustomizations(ENTRYPOINTS[0]).values()
        if k["spec"]["path"].startswith("./magic-cluster")
        for o in build(in_repository(k["spec"]["path"]))
    ]
    charts = {r["spec"].get("chart", {}).get("spec", {}).get("chart") for r in of_kind(built, "HelmRelease")}
    assert charts.isdisjoint({"gpu-operator", "gpu-operator-charts", "intel-device-plugins-operator"})


def test_every_path_of_the_neutral_graph_exists_and_builds():
    for kustomization in kustomizations(ENTRYPOINTS[0]).values():
        assert build(in_repository(kustomization["spec"]["path"])), kustomization["metadata"]["name"]


def test_every_kustomization_of_the_graph_reads_the_appliance_default_source_which_the_graph_provides():
    source = SourceRef()
    objects = build(ENTRYPOINTS[0])
    (repository,) = of_kind(objects, "GitRepository")
    assert (repository["metadata"]["namespace"], repository["metadata"]["name"]) == (source.namespace, source.name)
    assert repository["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/ssa"] == "IfNotPresent"
    for kustomization in of_kind(objects, "Kustomization"):
        assert kustomization["spec"]["sourceRef"] == {"kind": source.kind, "name": source.name}


@pytest.fixture(scope="module")
def default_appliance() -> dict:
    graph = kustomizations(ENTRYPOINTS[0])
    shipped = [
        o
        for k in graph.values()
        if k["spec"]["path"] != "./deploy"
        for o in build(in_repository(k["spec"]["path"]))
        if o["kind"] == "Appliance"
    ]
    (appliance,) = shipped
    return appliance


def test_the_base_entrypoint_ships_the_default_appliance_local(default_appliance):
    assert default_appliance["metadata"] == {"name": APPLIANCE_NAME, "namespace": PlanSettings().system_namespace}


def test_the_default_appliance_is_the_gpu_neutral_workstation_with_the_four_default_modules(default_appliance):
    spec = default_appliance["spec"]
    assert spec["profile"] == "ai-workstation"
    assert spec["modules"] == {name: {"enabled": True} for name in ("basis", "dashboard", "litellm", "model-catalog")}
    hardware = {entry.name for entry in load_catalogs().modules.entries if entry.hardware_provider}
    assert hardware.isdisjoint(spec["modules"]) and "kubeai" not in spec["modules"]


def test_the_default_appliance_reads_the_source_the_graph_provides(default_appliance):
    source = SourceRef()
    assert default_appliance["spec"]["source"] == {
        "kind": source.kind,
        "name": source.name,
        "namespace": source.namespace,
    }


@pytest.fixture(scope="module")
def shipped_crds() -> dict[str, dict]:
    """The CustomResourceDefinitions the graph's magicstick-appliance Kustomization applies, by name."""
    path = kustomizations(ENTRYPOINTS[0])["magicstick-appliance"]["spec"]["path"]
    return {o["metadata"]["name"]: o for o in of_kind(build(in_repository(path)), "CustomResourceDefinition")}


def test_the_base_entrypoint_ships_the_programs_crds_with_the_default_appliance(shipped_crds):
    committed = {crd["metadata"]["name"]: crd["spec"] for crd in load_committed_crds()}
    assert {name: crd["spec"] for name, crd in shipped_crds.items()} == committed


def test_flux_creates_the_programs_crds_only_where_none_exist_and_never_prunes_them(shipped_crds):
    assert shipped_crds
    for name, crd in shipped_crds.items():
        assert crd["metadata"]["annotations"] == {
            "kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent",
            "kustomize.toolkit.fluxcd.io/prune": "disabled",
        }, name


def test_the_default_appliance_validates_against_the_program_own_crd(default_appliance, tmp_path):
    for crd in load_committed_crds():
        (tmp_path / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd))
    assert CrdSchemaRegistry(tmp_path).errors(default_appliance) == []


def test_the_demo_overlay_provides_the_settings_every_module_base_may_substitute():
    (settings,) = [c for c in of_kind(build(DEMO_OVERLAY), "ConfigMap") if c["metadata"]["name"] == SETTINGS_CONFIG_MAP]
    assert {"domain", "local_domain"} <= set(settings["data"])


def test_the_demo_overlay_holds_only_values_on_the_public_boundary():
    (settings,) = [c for c in of_kind(build(DEMO_OVERLAY), "ConfigMap") if c["metadata"]["name"] == SETTINGS_CONFIG_MAP]
    (repository,) = of_kind(build(DEMO_OVERLAY), "GitRepository")
    for value in [*settings["data"].values(), repository["spec"]["url"]]:
        assert any(marker in value for marker in PUBLIC_BOUNDARY), value


@pytest.fixture(scope="module")
def overlay_checkout(tmp_path_factory) -> Path:
    """The example deployment repository as Flux's artifact holds it: this tree included at vendor/magicstick."""
    checkout = tmp_path_factory.mktemp("overlay") / "deployment"
    shutil.copytree(OVERLAY_REPOSITORY, checkout)
    (checkout / "vendor").mkdir()
    (checkout / "vendor" / "magicstick").symlink_to(REPOSITORY, target_is_directory=True)
    return checkout


def test_the_overlay_repository_includes_this_tree_at_its_vendor_path(overlay_checkout):
    objects = build(overlay_checkout / "clusters" / "appliance")
    (own,) = [r for r in of_kind(objects, "GitRepository") if r["metadata"]["name"] == "flux-system"]
    assert own["spec"]["include"] == [
        {"repository": {"name": "magicstick-public"}, "fromPath": ".", "toPath": "vendor/magicstick"}
    ]
    registry = upstream_registry()
    for obj in [o for o in objects if is_flux(o)]:
        assert registry.errors(obj) == [], obj["metadata"]["name"]


def test_the_overlay_repository_patches_the_appliance_path_to_its_own_overlay(overlay_checkout):
    graph = {
        k["metadata"]["name"]: k for k in of_kind(build(overlay_checkout / "clusters" / "appliance"), "Kustomization")
    }
    path = graph["magicstick-appliance"]["spec"]["path"]
    assert path == "./deployments/example/infra-cluster/appliance"
    (appliance,) = of_kind(build(overlay_checkout / path.removeprefix("./")), "Appliance")
    assert appliance["spec"]["source"]["name"] == "magicstick-public"


def test_the_overlay_repository_reads_the_public_graph_from_the_public_source(overlay_checkout):
    graph = {
        k["metadata"]["name"]: k for k in of_kind(build(overlay_checkout / "clusters" / "appliance"), "Kustomization")
    }
    public = set(kustomizations(ENTRYPOINTS[0])) - {"magicstick-appliance"}
    assert {graph[name]["spec"]["sourceRef"]["name"] for name in public} == {"magicstick-public"}
