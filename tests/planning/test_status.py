"""Appliance/local.status and the status of runtime objects follow the status contract."""

from __future__ import annotations

from tests.planning.builders import (
    LATER,
    NOW,
    activation,
    appliance,
    cpu_model,
    instance,
    plan_of,
    ready_modules,
    runtime,
    status_of,
)


def test_the_appliance_status_holds_modules_observed_generation_phase_and_ready_condition():
    result = plan_of(appliance({"basis": True}, generation=7))
    status = status_of(result, "Appliance", "local")
    assert status["observedGeneration"] == 7
    assert status["phase"] == "Reconciling"
    assert status["modules"]["basis"]["kustomization"]
    ready, reconciling = status["conditions"]
    assert ready["type"] == "Ready" and ready["status"] == "False"
    assert (reconciling["type"], reconciling["reason"]) == ("Reconciling", "WaitingForModules")
    assert ready["reason"] == "WaitingForModules"
    assert "basis" in ready["message"]


def test_the_appliance_is_ready_when_every_enabled_module_is_ready():
    result = plan_of(appliance(), activation("basis"), activation("dashboard", enabled=False), *ready_modules("basis"))
    status = status_of(result, "Appliance", "local")
    assert status["phase"] == "Ready"
    assert status["conditions"][0]["status"] == "True"
    assert status["modules"]["dashboard"]["phase"] == "Disabled"


def test_auto_enabled_modules_say_so_in_the_appliance_status():
    result = plan_of(appliance(), instance("openclaw-default", "openclaw"))
    modules = status_of(result, "Appliance", "local")["modules"]
    assert modules["openclaw-operator"]["autoEnabled"] is True
    assert modules["openclaw-operator"]["requestedBy"] == ["AppInstance/openclaw-default"]


def test_the_appliance_is_degraded_when_a_module_fails():
    from tests.planning.builders import kustomization_for

    result = plan_of(
        appliance(), activation("basis"), kustomization_for("basis", "False", reason="BuildFailed", message="x")
    )
    status = status_of(result, "Appliance", "local")
    assert status["phase"] == "Degraded"
    assert status["conditions"][0]["reason"] == "ModulesDegraded"


def test_a_condition_keeps_its_transition_time_while_its_status_holds():
    first = plan_of(appliance({"basis": True}), now=NOW)
    previous = status_of(first, "Appliance", "local")
    again = plan_of(appliance({"basis": True}, status=dict(previous)), now=LATER)
    assert status_of(again, "Appliance", "local")["conditions"] == previous["conditions"]


def test_a_condition_moves_its_transition_time_when_its_status_flips():
    first = status_of(plan_of(appliance(), activation("basis")), "Appliance", "local")
    flipped = plan_of(appliance(status=dict(first)), activation("basis"), *ready_modules("basis"), now=LATER)
    condition = status_of(flipped, "Appliance", "local")["conditions"][0]
    assert condition["status"] == "True"
    assert condition["lastTransitionTime"] == "2026-01-02T00:00:00Z"


def test_every_activation_status_carries_its_observed_generation():
    result = plan_of(appliance(), activation("basis", generation=4))
    assert status_of(result, "ModuleActivation", "basis")["observedGeneration"] == 4


def test_an_invalid_model_reports_the_field_and_the_rule():
    broken = runtime(
        "ModelActivation", "bad", {"type": "local", "local": {"preset": "qwen2505bcpu", "memoryRequiredMi": 8}}
    )
    status = status_of(plan_of(appliance(), broken), "ModelActivation", "bad")
    assert status["phase"] == "Failed"
    assert status["reason"] == "InvalidSpec"
    assert "spec.local.memoryRequiredMi" in status["message"]


def test_an_instance_of_an_unknown_application_fails_and_requires_nothing():
    unknown = runtime("AppInstance", "x", {"application": "no-such-app"})
    result = plan_of(appliance(), unknown)
    status = status_of(result, "AppInstance", "x")
    assert status["phase"] == "Failed"
    assert "spec.application" in status["message"]
    assert result.modules.modules == ()


def test_a_model_waits_for_its_modules_then_its_kubeai_model_is_created():
    waiting = status_of(plan_of(appliance(), cpu_model("m")), "ModelActivation", "m")
    assert waiting["phase"] == "WaitingForModules"
    assert "kubeai" in waiting["message"]
    from tests.planning.builders import CATALOGS

    everything = set()
    for name in ("kubeai", "litellm", "model-catalog"):
        everything |= {name, *CATALOGS.modules.get(name).depends_on}
    ready = status_of(plan_of(appliance(), cpu_model("m"), *ready_modules(*sorted(everything))), "ModelActivation", "m")
    assert ready["phase"] == "WaitingForPod"
    assert ready["modelRef"] == "ai/m"


def test_no_status_is_planned_for_an_appliance_that_does_not_exist():
    result = plan_of(activation("basis"))
    assert all(s.kind != "Appliance" for s in result.statuses)


def _cpu_model_with(cpu_resources: dict) -> dict:
    obj = runtime(
        "ModelActivation",
        "m",
        {"type": "local", "local": {"preset": "qwen2505bcpu", "engine": "VLLM", "cpuResources": cpu_resources}},
    )
    return obj


def test_a_cpu_limit_below_the_inherited_engine_request_is_rejected_with_the_field_named():
    status = status_of(plan_of(appliance(), _cpu_model_with({"limitMillicores": 1500})), "ModelActivation", "m")
    assert status["phase"] == "Failed"
    assert status["message"].startswith("spec.local.cpuResources.limitMillicores")
    assert "inherited" in status["message"]


def test_a_cpu_limit_of_zero_means_no_quota_and_is_accepted():
    status = status_of(
        plan_of(appliance(), _cpu_model_with({"requestMillicores": 4000, "limitMillicores": 0})), "ModelActivation", "m"
    )
    assert status["phase"] == "WaitingForModules"


def test_an_explicit_request_above_an_inherited_positive_limit_is_rejected():
    import pytest

    from api.models import CpuResources
    from api.validation import SpecError
    from planning.requirements import check_cpu_resources
    from tests.planning.builders import CATALOGS

    vllm = CATALOGS.engines.get("VLLM")
    capped = vllm.model_copy(update={"cpu_defaults": vllm.cpu_defaults.model_copy(update={"limit_millicores": 3000})})
    with pytest.raises(SpecError, match="requestMillicores 4000 exceeds the inherited VLLM limit of 3000"):
        check_cpu_resources(CpuResources(request_millicores=4000), capped)
    check_cpu_resources(CpuResources(request_millicores=2500), capped)
