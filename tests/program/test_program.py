"""The Pulumi program under Pulumi's mocks: what it registers, under which parent, with which inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pulumi.runtime import rpc

from cli.offline import OfflineRun, run_offline
from planning.objects import decode_status
from planning.snapshot import Snapshot
from planning.unset_images import unset_images
from program import main as program
from providers.status_batch import StatusBatchProvider
from tests.planning.builders import CATALOGS, activation, appliance, instance, ready_modules, with_flux
from tests.planning.models.direct_world import freetoken_model
from tests.program.statuses import STATUS_BATCH, status_writes

KUSTOMIZATION = "kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
MODULE_ACTIVATION = "kubernetes:appliance.magicstick.dev/v1alpha1:ModuleActivation"
UNSET_IMAGE_WARNING = "RuntimeImageNotSet: "


@pytest.fixture
def run_program(tmp_path: Path):
    def run(*objects: dict, **config: str) -> OfflineRun:
        snapshot = tmp_path / "snapshot.yaml"
        snapshot.write_text(yaml.safe_dump_all(with_flux(objects)))
        _, recorded = run_offline(program.run, {"snapshotFile": str(snapshot), "now": "2026-01-01T00:00:00Z", **config})
        return recorded

    return run


def test_the_appliance_component_is_the_root_and_owns_the_crds(run_program):
    run = run_program(appliance())
    (root,) = run.of_type("magicstick:index:Appliance")
    assert root.name == "local"
    assert root.parent.endswith("pulumi:pulumi:Stack::magicstick-offline") or root.parent == ""
    crds = run.of_type(CRD)
    assert {c.inputs["metadata"]["name"] for c in crds} >= {
        "appliances.appliance.magicstick.dev",
        "moduleactivations.appliance.magicstick.dev",
    }
    assert all(c.parent == root.urn for c in crds)
    assert all(c.name == f"crd-{c.inputs['metadata']['name']}" for c in crds)


def test_a_module_component_owns_its_kustomization(run_program):
    run = run_program(appliance(), activation("basis"))
    (module,) = run.of_type("magicstick:index:Module")
    assert module.name == "basis"
    assert module.parent == run.of_type("magicstick:index:Appliance")[0].urn
    (kustomization,) = run.of_type(KUSTOMIZATION)
    assert kustomization.parent == module.urn
    assert kustomization.name == f"kustomization/flux-system/{CATALOGS.modules.get('basis').kustomization}"
    assert kustomization.inputs["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1"
    assert kustomization.inputs["kind"] == "Kustomization"
    assert kustomization.inputs["spec"]["interval"] == "10m0s"
    assert kustomization.inputs["metadata"]["annotations"]["pulumi.com/patchFieldManager"] == "magicstick"


def test_a_seeded_activation_waits_for_the_crds_ignores_spec_edits_and_is_retained(run_program):
    run = run_program(appliance({"litellm": True}))
    (seeded,) = run.of_type(MODULE_ACTIVATION)
    assert seeded.name == "moduleactivation/ai-system/litellm"
    assert seeded.ignore_changes == ("spec",)
    assert seeded.retain_on_delete
    crd_urns = {c.urn for c in run.of_type(CRD)}
    assert crd_urns and crd_urns <= set(seeded.dependencies)


def test_every_kubernetes_resource_uses_the_one_explicit_provider(run_program):
    run = run_program(appliance(), activation("basis"))
    (provider,) = run.of_type("pulumi:providers:kubernetes")
    assert provider.inputs.get("enableServerSideApply") == "true"
    assert "upsertExistingObjects" not in provider.inputs, (
        "pulumi-kubernetes 4.25 has no such option; its server-side create adopts"
    )
    assert provider.inputs.get("enableConfigMapMutable") == "true"


def test_auto_enabled_modules_get_their_components(run_program):
    run = run_program(appliance(), instance("openclaw-default", "openclaw"), *ready_modules("basis"))
    names = {m.name for m in run.of_type("magicstick:index:Module")}
    assert "openclaw-operator" in names
    assert "litellm" in names


def test_logical_names_do_not_depend_on_the_order_of_the_snapshot(run_program):
    objects = [appliance(), activation("basis"), activation("litellm"), activation("kubeai")]
    first = sorted((r.type, r.name) for r in run_program(*objects).registrations)
    second = sorted((r.type, r.name) for r in run_program(*reversed(objects)).registrations)
    assert first == second


def test_every_runtime_object_gets_a_status_write_in_a_batch_of_its_kind_owned_by_the_appliance(run_program):
    run = run_program(
        appliance(generation=5), activation("basis", generation=2), instance("openclaw-default", "openclaw")
    )
    batches = {r.name: r for r in run.of_type(STATUS_BATCH)}
    assert set(batches) == {"statuses/appliance/0", "statuses/moduleactivation/0", "statuses/appinstance/0"}
    root = run.of_type("magicstick:index:Appliance")[0]
    assert all(b.parent == root.urn for b in batches.values())
    writes = {(w.inputs["kind"], w.key): w.inputs for w in status_writes(run)}
    assert set(writes) == {
        ("Appliance", "ai-system/local"),
        ("ModuleActivation", "ai-system/basis"),
        ("AppInstance", "ai-system/openclaw-default"),
    }
    basis = writes[("ModuleActivation", "ai-system/basis")]
    assert (basis["apiVersion"], basis["kind"], basis["namespace"], basis["name"]) == (
        "appliance.magicstick.dev/v1alpha1",
        "ModuleActivation",
        "ai-system",
        "basis",
    )
    assert decode_status(basis["status"])["observedGeneration"] == 2
    assert decode_status(writes[("Appliance", "ai-system/local")]["status"])["observedGeneration"] == 5


def test_a_status_travels_as_json_text_and_check_gives_the_engine_the_mapping(run_program):
    run = run_program(appliance(), activation("basis", generation=2))
    (batch,) = [r for r in run.registrations if r.name == "statuses/moduleactivation/0"]
    text = batch.inputs["members"]["ai-system/basis"]["status"]
    assert isinstance(text, str)
    checked = StatusBatchProvider().check({}, dict(batch.inputs))
    assert checked.failures == [] and checked.inputs["members"]["ai-system/basis"]["status"] == json.loads(text)


def test_host_operation_status_is_never_written(run_program):
    host_operation = {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "HostOperation",
        "metadata": {"name": "reboot-1", "namespace": "ai-system"},
        "spec": {},
    }
    run = run_program(appliance(), host_operation)
    assert run.of_type(STATUS_BATCH)
    assert not [w for w in status_writes(run) if w.inputs["kind"] == "HostOperation"]


def test_the_amd_hardware_provider_component_owns_the_device_config_and_the_eligibility_label(run_program):
    from tests.planning.builders import crd, kustomization_for
    from tests.planning.hardware.nodes import node

    run = run_program(
        appliance(),
        node("halo", "amd", allocatable={"amd.com/gpu": "1"}),
        activation("amd-gpu"),
        kustomization_for("amd-gpu"),
        crd("deviceconfigs.amd.com"),
    )
    (provider,) = run.of_type("magicstick:index:HardwareProvider")
    assert provider.name == "amd-gpu"
    assert provider.parent == run.of_type("magicstick:index:Appliance")[0].urn
    (device_config,) = run.of_type("kubernetes:amd.com/v1alpha1:DeviceConfig")
    assert device_config.parent == provider.urn
    assert device_config.inputs["spec"]["selector"] == {"appliance.magicstick.dev/amd-gpu-eligible": "true"}
    (patch,) = run.of_type("kubernetes:core/v1:NodePatch")
    assert patch.parent == provider.urn
    assert patch.name == "node-halo-amd-gpu-eligible"
    assert patch.inputs["metadata"]["labels"] == {"appliance.magicstick.dev/amd-gpu-eligible": "true"}


def test_a_kubeai_model_is_a_child_of_the_appliance_and_waits_for_its_runtime_profile(run_program):
    from tests.planning.models.world import local_model, platform

    run = run_program(*platform(), local_model("qwen2505bcpu"))
    root = run.of_type("magicstick:index:Appliance")[0]
    assert run.of_type("magicstick:index:Model") == []
    (model,) = run.of_type("kubernetes:kubeai.org/v1:Model")
    assert model.parent == root.urn
    assert model.name == "model/ai/qwen2505bcpu"
    (profile,) = run.of_type("pulumi-python:dynamic/magicstick:RuntimeProfile")
    assert profile.parent == root.urn
    assert profile.urn in model.dependencies
    assert model.inputs["spec"]["resourceProfile"] == f"{profile.inputs['profileName']}:1"
    assert profile.inputs["profile"]["requests"]["memory"] == "4096Mi"


def test_an_activations_resources_name_the_model_component_they_lived_under_as_their_former_parent(run_program):
    from tests.planning.models.world import catalog_publishing, local_model, observed_model, platform, pod

    run = run_program(
        *platform(),
        local_model("m", engine="OLlama"),
        observed_model("m", ready=1, all_=1, engine="OLlama"),
        pod("m-0", "m"),
        catalog_publishing("m"),
    )
    component = "magicstick:index:Appliance$magicstick:index:Model"
    (model,) = run.of_type("kubernetes:kubeai.org/v1:Model")
    (alias,) = run.of_type("pulumi-python:dynamic/magicstick:OllamaAlias")
    assert model.former_parent_types == (component,)
    assert alias.former_parent_types == (component,)
    assert (
        model.alias_urns[0] == f"urn:pulumi:offline::magicstick::{component}$kubernetes:kubeai.org/v1:Model::model/ai/m"
    )
    assert "m-ollama-alias" in alias.aliases, "the name it had under the component, before names joined with '/'"


def test_an_ollama_model_missing_its_alias_gets_an_alias_resource_on_the_model_server_port(run_program):
    from tests.planning.models.world import catalog_publishing, local_model, observed_model, platform, pod

    run = run_program(
        *platform(),
        local_model("m", engine="OLlama"),
        observed_model("m", ready=1, all_=1, engine="OLlama"),
        pod("m-0", "m"),
        catalog_publishing("m"),
    )
    (alias,) = run.of_type("pulumi-python:dynamic/magicstick:OllamaAlias")
    assert alias.parent == run.of_type("magicstick:index:Appliance")[0].urn
    assert (alias.inputs["pods"], alias.inputs["alias"], alias.inputs["port"]) == (["m-0"], "m:latest", 8000)


def test_a_terminal_pod_gets_one_recovery_resource_per_attempt(run_program):
    from tests.planning.models.world import local_model, observed_model, platform, pod

    run = run_program(*platform(), local_model("m"), observed_model("m"), pod("m-0", "m", phase="Failed", ready=False))
    (recovery,) = run.of_type("pulumi-python:dynamic/magicstick:PodRecovery")
    assert recovery.name == "pod-recovery/ai/m-0/1"
    assert (recovery.inputs["podUID"], recovery.inputs["resourceVersion"]) == ("pod-uid-m-0", "7")


def test_an_app_instance_component_owns_its_release_routes_grant_and_policy(run_program):
    from tests.planning.instances.test_instances import instance, platform

    run = run_program(*platform("openclaw"), instance("openclaw-default", "openclaw"))
    (component,) = run.of_type("magicstick:index:AppInstance")
    assert component.name == "openclaw-default"
    assert component.parent == run.of_type("magicstick:index:Appliance")[0].urn
    (release,) = run.of_type("kubernetes:helm.toolkit.fluxcd.io/v2:HelmRelease")
    (policy,) = run.of_type("kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy")
    routes = run.of_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")
    (grant,) = run.of_type("kubernetes:gateway.networking.k8s.io/v1beta1:ReferenceGrant")
    assert {r.parent for r in (release, policy, grant, *routes)} == {component.urn}
    assert len(routes) == 3
    assert all(policy.urn in route.dependencies for route in routes)
    assert release.inputs["metadata"]["namespace"] == "ai-system"


def test_kubeconfig_contents_reach_the_kubernetes_provider_only_as_a_secret(run_program):
    contents = "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n# CHANGEME\n"
    run = run_program(appliance(), kubeconfig=contents)
    (provider,) = run.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"][rpc._special_sig_key] == rpc._special_secret_sig


def test_a_kubeconfig_path_reaches_the_kubernetes_provider_as_it_is(run_program, tmp_path):
    run = run_program(appliance(), kubeconfig=str(tmp_path / "kubeconfig"))
    (provider,) = run.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == str(tmp_path / "kubeconfig")


def test_a_run_logs_one_summary_line_and_one_warning_per_failed_object(run_program, caplog):
    caplog.set_level("INFO")
    broken = activation("basis")
    broken["spec"]["enabled"] = "sometimes"
    run_program(appliance(), broken)
    infos = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    (summary,) = [line for line in infos if line.startswith("magicstick:")]
    assert summary.endswith("objects planned; status: 1 Degraded, 1 Failed")
    assert [w for w in warnings if not w.startswith(UNSET_IMAGE_WARNING)] == [
        "Appliance ai-system/local is Degraded: ModulesDegraded: Module basis is failing.",
        "ModuleActivation ai-system/basis is Failed: InvalidSpec: spec.enabled: must be a boolean",
    ]


def test_a_run_warns_once_about_each_unset_image_however_many_activations_use_it(run_program, caplog):
    caplog.set_level("WARNING")
    run_program(appliance(), freetoken_model("ft-1"), freetoken_model("ft-2"))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    expected = [image.describe() for image in unset_images(CATALOGS, Snapshot.from_objects([]))]
    assert [w for w in warnings if w.startswith(UNSET_IMAGE_WARNING)] == expected
    assert sum("runtimes.yaml freetoken.image" in w for w in expected) == 1


def test_every_kubernetes_type_is_a_token_the_provider_knows_core_kinds_under_core_v1():
    """The provider refuses `kubernetes:v1:Service` ("apiVersion does not have both a group and
    a version"); the SDK's mocks accept any token, so the rule is checked here."""
    from cli.offline import run_offline
    from program import main as program

    snapshot = Path(__file__).resolve().parents[2] / "examples" / "demo" / "snapshot.yaml"
    run = run_offline(program.run, {"snapshotFile": str(snapshot), "now": "2026-01-01T12:00:00Z"})[1]
    types = {r.type for r in run.registrations if r.type.startswith("kubernetes:")}
    assert "kubernetes:core/v1:Service" in types
    assert [t for t in types if t.split(":")[1] in ("v1", "") or "/" not in t.split(":")[1]] == []
