"""Every status the plan writes carries the kstatus conditions: Ready (normal-true), and
Reconciling or Stalled (abnormal-true, present only while True), each with the generation it
was computed for, each keeping its lastTransitionTime while its status holds."""

from __future__ import annotations

from tests.planning.builders import (
    LATER,
    NOW,
    activation,
    appliance,
    cpu_model,
    instance,
    kustomization_for,
    plan_of,
    ready_modules,
    status_of,
)


def conditions_of(status: dict) -> dict[str, dict]:
    return {c["type"]: c for c in status["conditions"]}


def test_an_object_waiting_for_something_is_reconciling_with_the_reason_it_waits():
    status = status_of(plan_of(appliance({"basis": True})), "Appliance", "local")
    found = conditions_of(status)
    assert found["Ready"]["status"] == "False"
    assert (found["Reconciling"]["status"], found["Reconciling"]["reason"]) == ("True", "WaitingForModules")
    assert "Stalled" not in found


def test_an_object_only_its_user_can_unblock_is_stalled_and_not_reconciling():
    status = status_of(plan_of(appliance(), activation("nonsense")), "ModuleActivation", "nonsense")
    found = conditions_of(status)
    assert (found["Ready"]["status"], found["Stalled"]["status"], found["Stalled"]["reason"]) == (
        "False",
        "True",
        "UnknownModule",
    )
    assert "Reconciling" not in found


def test_an_invalid_appliance_is_stalled_although_its_phase_is_degraded():
    invalid = appliance()
    invalid["spec"]["profile"] = 7
    status = status_of(plan_of(invalid), "Appliance", "local")
    assert (status["phase"], conditions_of(status)["Stalled"]["reason"]) == ("Degraded", "InvalidSpec")


def test_a_ready_object_has_its_ready_condition_and_neither_reconciling_nor_stalled():
    status = status_of(plan_of(appliance(), activation("basis"), *ready_modules("basis")), "ModuleActivation", "basis")
    assert status["phase"] == "Ready"
    assert list(conditions_of(status)) == ["Ready"]


def test_a_disabled_object_neither_reconciles_nor_stalls():
    status = status_of(plan_of(appliance(), activation("dashboard", enabled=False)), "ModuleActivation", "dashboard")
    assert status["phase"] == "Disabled"
    assert list(conditions_of(status)) == ["Ready"]


def test_every_condition_of_every_kind_carries_the_generation_it_was_computed_for():
    result = plan_of(
        appliance({"basis": True}, generation=4),
        activation("basis", generation=5),
        cpu_model("qwen"),
        instance("openclaw-default", "openclaw", generation=6),
    )
    kinds = set()
    for update in result.statuses:
        generation = update.status["observedGeneration"]
        kinds.add(update.kind)
        assert [c.get("observedGeneration") for c in update.status["conditions"]] == [generation] * len(
            update.status["conditions"]
        )
        assert {"Reconciling", "Stalled"} & set(conditions_of(update.status)) or update.status["phase"] in (
            "Ready",
            "Disabled",
        )
    assert {"Appliance", "ModuleActivation", "ModelActivation", "AppInstance"} <= kinds


def test_reconciling_keeps_its_transition_time_while_the_reason_it_waits_for_changes():
    first = status_of(plan_of(appliance(), activation("basis"), now=NOW), "ModuleActivation", "basis")
    failing = kustomization_for("basis", "False", reason="BuildFailed", message="x")
    again = status_of(
        plan_of(appliance(), activation("basis", status=first), failing, now=LATER), "ModuleActivation", "basis"
    )
    assert (first["reason"], again["reason"]) == ("Reconciling", "KustomizationFailed")
    assert conditions_of(again)["Reconciling"]["reason"] == "KustomizationFailed"
    assert (
        conditions_of(again)["Reconciling"]["lastTransitionTime"]
        == conditions_of(first)["Reconciling"]["lastTransitionTime"]
    )


def test_a_converged_plan_plans_the_conditions_it_observed():
    first = status_of(plan_of(appliance(), activation("nonsense"), now=NOW), "ModuleActivation", "nonsense")
    again = status_of(
        plan_of(appliance(), activation("nonsense", status=first), now=LATER), "ModuleActivation", "nonsense"
    )
    assert again["conditions"] == first["conditions"]
