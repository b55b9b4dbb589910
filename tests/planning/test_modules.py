"""Modules through Flux: seeding, auto-enabling, dependencies, readiness and removal."""

from __future__ import annotations

import pytest

from planning.labels import SEEDED
from tests.planning.builders import (
    CATALOGS,
    activation,
    appliance,
    as_stored,
    cpu_model,
    crd,
    external_model,
    flux_status,
    gpu_model,
    instance,
    kustomization_for,
    kustomization_names,
    kustomization_of,
    plan_of,
    ready_modules,
    runtime,
    status_of,
)
from tests.planning.hardware.nodes import node


def module(result, name):
    outcome = result.modules.outcome(name)
    assert outcome is not None, f"module {name} is not in the plan"
    return outcome


def test_user_keys_are_normalised_to_canonical_module_names():
    result = plan_of(appliance(), activation("catalog", "modelCatalog"))
    assert module(result, "model-catalog").activation == "catalog"
    assert status_of(result, "ModuleActivation", "catalog")["module"] == "model-catalog"


def test_missing_activation_is_seeded_from_an_enabled_appliance_module():
    result = plan_of(appliance({"litellm": True}))
    seeded = result.modules.seeded_activations
    assert [s.name for s in seeded] == ["litellm"]
    assert seeded[0].body["spec"] == {"module": "litellm", "enabled": True}
    assert seeded[0].body["metadata"]["labels"][SEEDED] == "true"
    assert seeded[0].retain_on_delete and seeded[0].ignore_spec_changes


def test_seeding_normalises_the_appliance_module_key():
    result = plan_of(appliance({"model_catalog": True}))
    assert [s.name for s in result.modules.seeded_activations] == ["model-catalog"]


def test_a_disabled_appliance_module_is_not_seeded():
    result = plan_of(appliance({"litellm": False}))
    assert result.modules.seeded_activations == ()
    assert result.modules.outcome("litellm") is None


def test_an_existing_disabled_activation_takes_precedence_over_the_appliance_default():
    result = plan_of(appliance({"litellm": True}), activation("litellm", enabled=False))
    assert result.modules.seeded_activations == ()
    assert module(result, "litellm").phase == "Disabled"
    assert kustomization_of(result, "litellm") is None
    assert status_of(result, "ModuleActivation", "litellm")["phase"] == "Disabled"


def test_an_activation_under_another_name_prevents_seeding_of_its_module():
    result = plan_of(appliance({"litellm": True}), activation("my-litellm", "litellm"))
    assert result.modules.seeded_activations == ()
    assert module(result, "litellm").activation == "my-litellm"


def test_a_seeded_activation_is_declared_again_with_its_observed_spec():
    edited = activation("litellm", enabled=False, labels={SEEDED: "true", "app.kubernetes.io/managed-by": "magicstick"})
    result = plan_of(appliance({"litellm": True}), edited)
    (seeded,) = result.modules.seeded_activations
    assert seeded.body["spec"] == {"module": "litellm", "enabled": False}
    assert module(result, "litellm").phase == "Disabled"


def test_a_seeded_activation_outlives_its_appliance_entry_unchanged():
    seeded = activation("litellm", labels={SEEDED: "true"})
    result = plan_of(appliance({}), seeded)
    (kept,) = result.modules.seeded_activations
    assert kept.body["spec"] == {"module": "litellm", "enabled": True}
    assert kept.retain_on_delete and kept.ignore_spec_changes
    assert module(result, "litellm").phase != "Disabled"


def test_an_enabled_module_gets_a_kustomization_with_the_flux_defaults():
    source = {"kind": "GitRepository", "name": "magicstick-public", "namespace": "flux-system"}
    result = plan_of(appliance(source=source), activation("basis"))
    body = kustomization_of(result, "basis").body
    entry = CATALOGS.modules.get("basis")
    assert body["metadata"]["namespace"] == "flux-system"
    assert body["metadata"]["name"] == entry.kustomization
    spec = body["spec"]
    assert spec["interval"] == "10m0s"
    assert spec["prune"] is True
    assert spec["deletionPolicy"] == "Delete"
    assert spec["wait"] is False
    assert spec["suspend"] is False
    assert spec["path"] == entry.path
    assert dict(spec["sourceRef"]) == source
    assert spec["postBuild"]["substitute"] == {"var_substitution_enabled": "true"}
    assert [dict(s) for s in spec["postBuild"]["substituteFrom"]] == [
        {"kind": "ConfigMap", "name": "ai-appliance-settings", "optional": True}
    ]


def test_without_an_appliance_source_the_flux_system_git_repository_is_used():
    result = plan_of(appliance(), activation("basis"))
    assert dict(kustomization_of(result, "basis").body["spec"]["sourceRef"]) == {
        "kind": "GitRepository",
        "name": "flux-system",
        "namespace": "flux-system",
    }


def test_a_hardware_provider_kustomization_waits_for_readiness():
    result = plan_of(appliance(), activation("gpu"))
    spec = kustomization_of(result, "gpu").body["spec"]
    assert spec["wait"] is True
    assert "healthChecks" not in spec


def test_a_module_with_required_crds_health_checks_them_instead_of_waiting():
    result = plan_of(appliance(), activation("kubeai"), *ready_modules(*CATALOGS.modules.get("kubeai").depends_on))
    spec = kustomization_of(result, "kubeai").body["spec"]
    assert spec["wait"] is False
    assert [c["name"] for c in spec["healthChecks"]] == sorted(CATALOGS.modules.get("kubeai").required_crds)


def test_an_instance_auto_enables_its_required_modules():
    result = plan_of(appliance(), instance("openclaw-default", "openclaw"))
    for name in ("openclaw-operator", "litellm", "model-catalog"):
        assert module(result, name).auto_enabled, name
        assert "AppInstance/openclaw-default" in module(result, name).requested_by


def test_a_paperclip_instance_also_needs_the_agent_sandbox():
    result = plan_of(appliance(), instance("paperclip-default", "paperclip"))
    assert module(result, "paperclip-operator").auto_enabled
    assert module(result, "agent-sandbox").auto_enabled


def test_an_explicitly_enabled_module_is_not_reported_as_auto_enabled():
    result = plan_of(appliance(), activation("litellm"), instance("openclaw-default", "openclaw"))
    assert module(result, "litellm").auto_enabled is False


def test_a_cpu_model_auto_enables_kubeai_litellm_and_model_catalog():
    result = plan_of(appliance(), cpu_model("qwen2505bcpu"))
    requested = {m.name for m in result.modules.modules if "ModelActivation/qwen2505bcpu" in m.requested_by}
    assert requested == {"kubeai", "litellm", "model-catalog"}


def test_an_external_model_requires_only_litellm_and_model_catalog():
    result = plan_of(appliance(), external_model("gpt"))
    requested = {m.name for m in result.modules.modules if "ModelActivation/gpt" in m.requested_by}
    assert requested == {"litellm", "model-catalog"}


@pytest.mark.parametrize(
    ("target", "vendor", "pci"),
    [("nvidia-gpu", "gpu", "nvidia"), ("amd-gpu", "amd-gpu", "amd"), ("intel-gpu", "intel-gpu", "intel")],
)
def test_an_accelerator_model_adds_the_module_of_its_vendor_where_the_preflight_found_it(target, vendor, pci):
    result = plan_of(appliance(), node("gpu-1", pci), gpu_model("m", target))
    assert "ModelActivation/m" in module(result, vendor).requested_by


@pytest.mark.parametrize(
    ("target", "vendor"), [("nvidia-gpu", "gpu"), ("amd-gpu", "amd-gpu"), ("intel-gpu", "intel-gpu")]
)
def test_an_accelerator_model_adds_the_module_of_its_vendor_where_an_activation_names_it(target, vendor):
    result = plan_of(appliance(), activation(vendor), gpu_model("m", target))
    assert "ModelActivation/m" in module(result, vendor).requested_by


def test_a_disabled_model_or_instance_requires_nothing():
    result = plan_of(appliance(), cpu_model("m", enabled=False), instance("i", "openclaw", enabled=False))
    assert result.modules.modules == ()
    assert status_of(result, "ModelActivation", "m")["phase"] == "Disabled"
    assert status_of(result, "AppInstance", "i")["phase"] == "Disabled"


def test_a_disabled_module_stays_disabled_when_an_instance_requires_it():
    result = plan_of(
        appliance(), activation("openclaw-operator", enabled=False), instance("openclaw-default", "openclaw")
    )
    assert module(result, "openclaw-operator").phase == "Disabled"
    assert kustomization_of(result, "openclaw-operator") is None
    status = status_of(result, "AppInstance", "openclaw-default")
    assert status["phase"] == "WaitingForModules"
    assert "openclaw-operator" in status["message"]


def test_dependencies_are_auto_enabled_and_report_who_needs_them():
    entry = next(e for e in CATALOGS.modules.entries if e.depends_on)
    result = plan_of(appliance(), activation(entry.name))
    for dependency in entry.depends_on:
        assert module(result, dependency).auto_enabled
        assert f"Module/{entry.name}" in module(result, dependency).requested_by


def test_a_kustomization_is_created_only_once_its_dependencies_are_ready():
    result = plan_of(appliance(), activation("model-catalog"))
    assert kustomization_of(result, "model-catalog") is None
    assert module(result, "model-catalog").phase == "WaitingForModules"
    assert kustomization_of(result, "litellm") is not None

    result = plan_of(
        appliance(), activation("model-catalog"), *ready_modules("litellm", *CATALOGS.modules.get("litellm").depends_on)
    )
    assert kustomization_of(result, "model-catalog").body["spec"]["suspend"] is False
    assert [d["name"] for d in kustomization_of(result, "model-catalog").body["spec"]["dependsOn"]] == [
        CATALOGS.modules.get("litellm").kustomization
    ]


def test_a_kustomization_is_suspended_not_deleted_while_a_dependency_is_unready():
    deps = CATALOGS.modules.get("litellm").depends_on
    result = plan_of(
        appliance(),
        activation("model-catalog"),
        *ready_modules(*deps),
        kustomization_for("litellm", "False", reason="HealthCheckFailed", message="timeout"),
        kustomization_for("model-catalog"),
    )
    assert kustomization_of(result, "model-catalog").body["spec"]["suspend"] is True
    outcome = module(result, "model-catalog")
    assert outcome.phase == "WaitingForModules"
    assert "suspended" in outcome.message


def test_a_suspended_kustomization_resumes_when_its_dependency_is_ready_again():
    deps = CATALOGS.modules.get("litellm").depends_on
    result = plan_of(
        appliance(),
        activation("model-catalog"),
        *ready_modules(*deps, "litellm"),
        kustomization_for("model-catalog", suspend=True),
    )
    assert kustomization_of(result, "model-catalog").body["spec"]["suspend"] is False
    assert module(result, "model-catalog").phase == "Reconciling"


def test_the_kustomization_of_a_module_whose_dependency_is_disabled_is_removed():
    result = plan_of(
        appliance(),
        activation("model-catalog"),
        activation("litellm", enabled=False),
        kustomization_for("model-catalog"),
    )
    assert kustomization_of(result, "model-catalog") is None
    assert module(result, "model-catalog").phase == "WaitingForModules"


def test_the_kustomization_is_removed_when_its_module_is_disabled():
    result = plan_of(appliance(), activation("basis", enabled=False), kustomization_for("basis"))
    assert kustomization_of(result, "basis") is None


def test_the_kustomization_is_removed_when_its_activation_is_gone():
    result = plan_of(appliance(), kustomization_for("basis"))
    assert kustomization_names(result) == set()


def test_a_module_waits_for_its_crds_after_its_kustomization_is_ready():
    deps = CATALOGS.modules.get("kubeai").depends_on
    result = plan_of(appliance(), activation("kubeai"), *ready_modules(*deps), kustomization_for("kubeai"))
    outcome = module(result, "kubeai")
    assert outcome.phase == "WaitingForCRD"
    assert "models.kubeai.org" in outcome.message


def test_a_module_is_ready_when_its_kustomization_is_ready_and_its_crds_are_served():
    deps = CATALOGS.modules.get("kubeai").depends_on
    result = plan_of(appliance(), activation("kubeai"), *ready_modules(*deps, "kubeai"))
    assert module(result, "kubeai").phase == "Ready"
    status = status_of(result, "ModuleActivation", "kubeai")
    assert status["phase"] == "Ready"
    assert status["kustomization"] == CATALOGS.modules.get("kubeai").kustomization
    assert status["conditions"][0]["status"] == "True"


def test_a_failed_kustomization_makes_its_module_degraded_with_the_flux_message():
    result = plan_of(
        appliance(),
        activation("basis"),
        kustomization_for("basis", "False", reason="BuildFailed", message="kustomization.yaml not found"),
    )
    outcome = module(result, "basis")
    assert outcome.phase == "Degraded"
    assert "BuildFailed" in outcome.message and "kustomization.yaml not found" in outcome.message


def module_release(
    kustomization: str,
    name: str,
    ready: str,
    *,
    reason: str,
    message: str = "",
    generation: int = 1,
    observed_generation: int | None = None,
) -> dict:
    """A HelmRelease a module's Kustomization applied, labelled by kustomize-controller, with helm-controller's status."""
    seen = generation if observed_generation is None else observed_generation
    return as_stored(
        {
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {
                "name": name,
                "namespace": "flux-system",
                "labels": {
                    "kustomize.toolkit.fluxcd.io/name": kustomization,
                    "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
                },
            },
            "spec": {"interval": "30m0s", "chartRef": {"kind": "OCIRepository", "name": name}},
            "status": flux_status(ready, reason=reason, message=message, observed_generation=seen),
        },
        generation=generation,
    )


SOURCE_UNREACHABLE = (
    "OCIRepository 'flux-system/envoy-gateway' is not ready: failed to determine artifact digest: no such host"
)


def test_a_module_whose_release_fails_on_its_source_is_degraded_and_names_the_release():
    basis = CATALOGS.modules.get("basis").kustomization
    progressing = kustomization_for("basis", "Unknown", reason="Progressing", message="Running health checks")
    release = module_release(basis, "envoy-gateway", "False", reason="SourceNotReady", message=SOURCE_UNREACHABLE)
    outcome = module(plan_of(appliance(), activation("basis"), progressing, release), "basis")
    assert (outcome.phase, outcome.reason) == ("Degraded", "HelmReleaseFailed")
    assert f"HelmRelease flux-system/envoy-gateway failed (SourceNotReady): {SOURCE_UNREACHABLE}" in outcome.message


def test_a_module_whose_kustomization_is_applied_but_whose_release_failed_is_degraded_and_its_dependents_wait():
    basis = CATALOGS.modules.get("basis").kustomization
    release = module_release(basis, "envoy-gateway", "False", reason="SourceNotReady", message=SOURCE_UNREACHABLE)
    result = plan_of(appliance(), activation("basis"), activation("dashboard"), kustomization_for("basis"), release)
    outcome = module(result, "basis")
    assert (outcome.phase, outcome.reason) == ("Degraded", "HelmReleaseFailed")
    assert outcome.message.startswith(
        f"Kustomization {basis} is applied, but HelmRelease flux-system/envoy-gateway failed (SourceNotReady)"
    )
    assert module(result, "dashboard").phase == "WaitingForModules"


def test_a_failed_kustomization_also_names_its_failed_releases():
    basis = CATALOGS.modules.get("basis").kustomization
    failed = kustomization_for("basis", "False", reason="HealthCheckFailed", message="timeout waiting for CRDs")
    release = module_release(basis, "envoy-gateway", "False", reason="SourceNotReady", message=SOURCE_UNREACHABLE)
    outcome = module(plan_of(appliance(), activation("basis"), failed, release), "basis")
    assert outcome.reason == "KustomizationFailed"
    assert (
        "HealthCheckFailed" in outcome.message
        and "HelmRelease flux-system/envoy-gateway failed (SourceNotReady)" in outcome.message
    )


def test_a_release_of_another_kustomization_or_still_progressing_does_not_degrade_a_module():
    progressing = kustomization_for("basis", "Unknown", reason="Progressing", message="Running health checks")
    elsewhere = module_release(
        "some-other-kustomization", "envoy-gateway", "False", reason="SourceNotReady", message=SOURCE_UNREACHABLE
    )
    installing = module_release(
        CATALOGS.modules.get("basis").kustomization,
        "gateway",
        "Unknown",
        reason="Progressing",
        message="Fulfilling prerequisites",
    )
    outcome = module(plan_of(appliance(), activation("basis"), progressing, elsewhere, installing), "basis")
    assert outcome.phase == "Reconciling"


def test_a_release_failure_of_an_older_generation_does_not_degrade_a_module():
    progressing = kustomization_for("basis", "Unknown", reason="Progressing", message="Running health checks")
    stale = module_release(
        CATALOGS.modules.get("basis").kustomization,
        "envoy-gateway",
        "False",
        reason="SourceNotReady",
        generation=2,
        observed_generation=1,
    )
    assert module(plan_of(appliance(), activation("basis"), progressing, stale), "basis").phase == "Reconciling"


def test_a_progressing_kustomization_is_reconciling_not_degraded():
    result = plan_of(
        appliance(),
        activation("basis"),
        kustomization_for("basis", "Unknown", reason="Progressing", message="Reconciliation in progress"),
    )
    assert module(result, "basis").phase == "Reconciling"


def test_an_invalid_activation_keeps_its_kustomization_as_last_applied():
    observed = kustomization_for(
        "basis",
        labels={
            "app.kubernetes.io/managed-by": "magicstick",
            "appliance.magicstick.dev/module": "basis",
            "appliance.magicstick.dev/activation": "basis",
        },
        spec={
            "interval": "10m0s",
            "path": "./custom/path",
            "prune": True,
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
        },
    )
    broken = runtime("ModuleActivation", "basis", {"module": "basis", "enabled": "sometimes"})
    result = plan_of(appliance(), broken, observed)
    kept = kustomization_of(result, "basis")
    assert kept.body["spec"]["path"] == "./custom/path"
    status = status_of(result, "ModuleActivation", "basis")
    assert status["phase"] == "Failed"
    assert status["reason"] == "InvalidSpec"
    assert "spec.enabled" in status["message"]


def test_an_activation_of_an_unknown_module_fails_with_the_field_named():
    result = plan_of(appliance(), activation("mystery", "no-such-module"))
    status = status_of(result, "ModuleActivation", "mystery")
    assert status["phase"] == "Failed"
    assert status["reason"] == "UnknownModule"
    assert status["message"].startswith("spec.module: 'no-such-module'")


def test_an_unknown_appliance_module_key_is_reported_in_the_appliance_status():
    result = plan_of(appliance({"no-such-module": True}))
    assert status_of(result, "Appliance", "local")["modules"]["no-such-module"]["phase"] == "Failed"


def test_a_second_activation_of_the_same_module_is_rejected():
    result = plan_of(appliance(), activation("litellm"), activation("another-litellm", "litellm"))
    assert status_of(result, "ModuleActivation", "another-litellm")["reason"] == "DuplicateActivation"
    assert module(result, "litellm").activation == "litellm"


def test_required_crds_are_read_from_the_snapshot():
    deps = CATALOGS.modules.get("kubeai").depends_on
    with_crd = plan_of(
        appliance(), activation("kubeai"), *ready_modules(*deps), kustomization_for("kubeai"), crd("models.kubeai.org")
    )
    assert module(with_crd, "kubeai").phase == "Ready"


def test_an_invalid_appliance_spec_keeps_its_valid_source_for_every_kustomization():
    source = {"kind": "GitRepository", "name": "magicstick-public", "namespace": "flux-system"}
    broken = appliance(source=source)
    broken["spec"]["profile"] = "everything"
    result = plan_of(broken, activation("basis"))
    assert dict(kustomization_of(result, "basis").body["spec"]["sourceRef"]) == source
    status = status_of(result, "Appliance", "local")
    assert status["phase"] == "Degraded"
    assert "spec.profile" in status["conditions"][0]["message"]


def test_without_flux_served_no_kustomization_is_declared_and_modules_wait_for_its_crd():
    result = plan_of(appliance(), activation("basis"), flux=False)
    assert kustomization_of(result, "basis") is None
    outcome = module(result, "basis")
    assert outcome.phase == "WaitingForCRD"
    assert "kustomizations.kustomize.toolkit.fluxcd.io" in outcome.message


# Readiness of the current generation only (invariant 11)


def test_a_kustomization_ready_for_an_older_generation_is_reconciling_and_its_dependents_wait():
    deps = CATALOGS.modules.get("litellm").depends_on
    result = plan_of(
        appliance(),
        activation("model-catalog"),
        *ready_modules(*deps),
        kustomization_for("litellm", generation=2, observed_generation=1),
        kustomization_for("model-catalog"),
    )
    litellm = module(result, "litellm")
    assert (litellm.phase, litellm.reason) == ("Reconciling", "Reconciling")
    assert "generation 2" in litellm.message
    dependent = module(result, "model-catalog")
    assert (dependent.phase, dependent.reason) == ("WaitingForModules", "DependencyNotReady")
    assert kustomization_of(result, "model-catalog").body["spec"]["suspend"] is True
    assert status_of(result, "ModuleActivation", "model-catalog")["conditions"][0]["status"] == "False"


def test_a_failure_reported_for_an_older_generation_is_reconciling_not_degraded():
    stale_failure = kustomization_for(
        "basis", "False", reason="BuildFailed", message="old error", generation=3, observed_generation=2
    )
    assert module(plan_of(appliance(), activation("basis"), stale_failure), "basis").phase == "Reconciling"


def test_a_kustomization_the_server_just_created_is_reconciling():
    created = kustomization_for("basis", None)
    assert created["status"] == {"observedGeneration": -1}
    assert module(plan_of(appliance(), activation("basis"), created), "basis").phase == "Reconciling"
