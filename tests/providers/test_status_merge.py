"""What happened at apply time, merged into the status written in the same run (invariant 5).

Pure: `status_with_problems`, and the StatusProvider's check and diff. No test here opens a
connection.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from planning.objects import encode_status
from providers.outcomes import Persistence, Problem, ProblemReason, problem_output
from providers.status_writer import StatusProvider, StatusTarget, problems_of, status_with_problems

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
EARLIER = "2026-01-01T00:00:00Z"
FULL = Problem(ProblemReason.PROFILE_STORE_FULL, "cannot add resource profile 'magicstick-cpu-4': the limit is 64")
UNREACHABLE = Problem(ProblemReason.OLLAMA_UNREACHABLE, "503 ServiceUnavailable: no endpoints available")


def ready_condition(status: str, reason: str, message: str, since: str = EARLIER) -> dict:
    return {"type": "Ready", "status": status, "reason": reason, "message": message, "lastTransitionTime": since}


def planned(
    phase: str = "Ready", reason: str = "Ready", message: str = "Model qwen is ready.", ready: str = "True"
) -> dict:
    return {
        "phase": phase,
        "reason": reason,
        "message": message,
        "observedGeneration": 3,
        "modelRef": "qwen",
        "conditions": [ready_condition(ready, reason, message)],
    }


def test_without_problems_the_planned_status_is_written_unchanged():
    assert status_with_problems(planned(), (), previous={}, now=NOW) == planned()


def test_a_problem_makes_the_status_degraded_with_its_reason_and_the_servers_message():
    status = status_with_problems(planned(), (FULL,), previous={}, now=NOW)
    assert (status["phase"], status["reason"], status["message"]) == ("Degraded", "ProfileStoreFull", FULL.message)
    assert status["conditions"][0] == ready_condition(
        "False", "ProfileStoreFull", FULL.message, since="2026-01-02T03:04:05Z"
    ) | {"observedGeneration": 3}
    assert (status["observedGeneration"], status["modelRef"]) == (3, "qwen")


def test_a_temporary_problem_makes_the_object_reconcile_with_the_problems_reason_for_its_generation():
    status = status_with_problems(planned(), (FULL,), previous={}, now=NOW)
    assert [(c["type"], c["status"], c["reason"], c["observedGeneration"]) for c in status["conditions"]] == [
        ("Ready", "False", "ProfileStoreFull", 3),
        ("Reconciling", "True", "ProfileStoreFull", 3),
    ]


def test_a_permanent_problem_stalls_the_object_and_it_no_longer_reconciles():
    invalid = Problem(ProblemReason.STATUS_WRITE_INVALID, "422 Invalid: status.phase", Persistence.PERMANENT)
    reconciling = {
        "type": "Reconciling",
        "status": "True",
        "reason": "WaitingForPod",
        "message": "m",
        "lastTransitionTime": EARLIER,
    }
    waiting = planned(phase="WaitingForPod", reason="WaitingForPod", ready="False") | {
        "conditions": [ready_condition("False", "WaitingForPod", "m"), reconciling]
    }
    status = status_with_problems(waiting, (invalid,), previous={}, now=NOW)
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Ready", "False", "StatusWriteInvalid"),
        ("Stalled", "True", "StatusWriteInvalid"),
    ]


def test_a_failed_status_with_a_problem_stays_stalled_for_its_own_reason():
    failed = planned(phase="Failed", reason="InvalidSpec", message="spec.engine is not supported.", ready="False")
    status = status_with_problems(failed, (UNREACHABLE,), previous={}, now=NOW)
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [
        ("Ready", "InvalidSpec"),
        ("Stalled", "InvalidSpec"),
    ]


def test_a_reconciling_condition_the_plan_kept_keeps_its_transition_time_under_a_problem():
    reconciling = {
        "type": "Reconciling",
        "status": "True",
        "reason": "WaitingForPod",
        "message": "m",
        "lastTransitionTime": EARLIER,
    }
    waiting = planned(phase="WaitingForPod", reason="WaitingForPod", ready="False") | {
        "conditions": [ready_condition("False", "WaitingForPod", "m"), reconciling]
    }
    status = status_with_problems(waiting, (FULL,), previous={}, now=NOW)
    assert status["conditions"][1]["lastTransitionTime"] == EARLIER


def test_ready_keeps_its_transition_time_when_the_object_was_already_not_ready():
    previous = {
        "phase": "Degraded",
        "conditions": [ready_condition("False", "ProfileStoreFull", "older", since="2025-12-31T00:00:00Z")],
    }
    status = status_with_problems(planned(), (FULL,), previous=previous, now=NOW)
    assert status["conditions"][0]["lastTransitionTime"] == "2025-12-31T00:00:00Z"


def test_a_planned_ready_false_keeps_the_transition_time_the_plan_gave_it():
    status = status_with_problems(
        planned(phase="Pending", reason="WaitingForPods", ready="False"), (FULL,), previous={}, now=NOW
    )
    assert status["conditions"][0]["lastTransitionTime"] == EARLIER
    assert status["phase"] == "Degraded"


def test_a_failed_status_stays_failed_with_its_reason_and_names_the_problem_after_its_message():
    failed = planned(phase="Failed", reason="InvalidSpec", message="spec.engine is not supported.", ready="False")
    status = status_with_problems(failed, (UNREACHABLE,), previous={}, now=NOW)
    assert (status["phase"], status["reason"]) == ("Failed", "InvalidSpec")
    assert status["message"] == f"spec.engine is not supported. Also: OllamaUnreachable: {UNREACHABLE.message}"


def test_several_problems_give_the_first_reason_and_every_message():
    status = status_with_problems(planned(), (FULL, UNREACHABLE), previous={}, now=NOW)
    assert status["reason"] == "ProfileStoreFull"
    assert status["message"] == f"ProfileStoreFull: {FULL.message}; OllamaUnreachable: {UNREACHABLE.message}"


def test_a_status_without_reason_and_message_fields_gets_only_its_phase_and_ready_condition():
    appliance = {
        "phase": "Ready",
        "modules": {"basis": {"phase": "Ready"}},
        "conditions": [ready_condition("True", "Ready", "All ready.")],
    }
    status = status_with_problems(
        appliance, (Problem(ProblemReason.STALE_REMOVAL_FAILED, "403 Forbidden: no"),), previous={}, now=NOW
    )
    assert set(status) == {"phase", "modules", "conditions"}
    assert (status["phase"], status["conditions"][0]["reason"]) == ("Degraded", "StaleRemovalFailed")


def test_problems_are_read_in_the_order_of_their_resource_names_and_unset_ones_are_dropped():
    problems = {
        "runtime-profile/magicstick-cpu-4": FULL.output(),
        "ollama-alias/qwen": UNREACHABLE.output(),
        "pod-recovery/ai/qwen-0/1": None,
        "pod-recovery/ai/qwen-1/1": UNKNOWN,
        "pod-recovery/ai/qwen-2/1": Unknown(),
        "pod-recovery/ai/qwen-3/1": {},
    }
    assert problems_of(problems) == (UNREACHABLE, FULL)


def inputs(status: dict | None = None, **extra) -> dict:
    return {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModelActivation",
        "namespace": "ai",
        "name": "qwen",
        "status": status or planned(),
        **extra,
    }


def test_the_target_carries_the_problems_of_its_inputs():
    target = StatusTarget.from_inputs(inputs(problems={"runtime-profile/magicstick-cpu-4": FULL.output()}))
    assert target.problems == (FULL,)


def test_check_leaves_out_problems_that_are_all_unset():
    checked = StatusProvider().check({}, inputs(problems={"ollama-alias/qwen": None}))
    assert checked.failures == [] and "problems" not in checked.inputs


def test_check_keeps_a_problem_a_preview_does_not_know_yet_so_the_status_write_shows_a_change():
    news = (
        StatusProvider()
        .check({}, inputs(problems={"runtime-profile/magicstick-cpu-4": Unknown(), "ollama-alias/qwen": {}}))
        .inputs
    )
    assert list(news["problems"]) == ["runtime-profile/magicstick-cpu-4"]
    assert StatusProvider().diff("id", {**inputs(), "problem": {}}, news).changes is True


def test_check_refuses_problems_that_are_not_a_mapping():
    assert [f.property for f in StatusProvider().check({}, inputs(problems=["x"])).failures] == ["problems"]


def test_a_converged_run_without_problems_shows_no_change_even_against_state_of_an_earlier_version():
    provider = StatusProvider()
    news = provider.check({}, inputs(problems={})).inputs
    assert provider.diff("id", {**inputs(), "problem": {}}, news).changes is False
    assert provider.diff("id", inputs(), news).changes is False


def test_a_new_problem_or_a_cleared_one_changes_the_status_write():
    provider = StatusProvider()
    with_full = inputs(problems={"runtime-profile/magicstick-cpu-4": FULL.output()})
    assert provider.diff("id", {**inputs(), "problem": {}}, with_full).changes is True
    assert provider.diff("id", {**with_full, "problem": {}}, inputs()).changes is True


@pytest.mark.parametrize(
    ("persistence", "retried"),
    [(Persistence.TEMPORARY, True), (Persistence.PERMANENT, False)],
)
def test_a_refused_status_write_is_tried_again_on_the_next_run_only_when_temporary(persistence, retried):
    refused = problem_output(ProblemReason.STATUS_WRITE_REFUSED, "403 Forbidden: no", persistence)
    diff = StatusProvider().diff("id", {**inputs(), "problem": refused}, inputs())
    assert (diff.changes, diff.replaces) == (retried, [])


def test_other_conditions_keep_their_place_and_only_the_kstatus_ones_are_replaced():
    other = {"type": "ModelLoaded", "status": "True", "reason": "Loaded", "message": "", "lastTransitionTime": EARLIER}
    status = status_with_problems(
        {**planned(), "conditions": [other, *planned()["conditions"]]}, (FULL,), previous={}, now=NOW
    )
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("ModelLoaded", "True"),
        ("Ready", "False"),
        ("Reconciling", "True"),
    ]


@pytest.mark.parametrize("status", ["not json", "[1, 2]", 42])
def test_a_status_input_that_is_neither_a_mapping_nor_its_json_is_refused_naming_the_field(status):
    inputs = {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModelActivation",
        "namespace": "ai-system",
        "name": "m",
        "status": status,
    }
    (failure,) = StatusProvider().check({}, inputs).failures
    assert (failure.property, failure.reason) == ("status", "status must be a mapping, or the JSON text of one")


def test_the_json_text_of_a_status_checks_to_the_same_inputs_as_the_mapping():
    identity = {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModelActivation",
        "namespace": "ai-system",
        "name": "m",
    }
    status = {"phase": "Ready", "observedGeneration": 3, "conditions": [{"type": "Ready", "status": "True"}]}
    as_text = StatusProvider().check({}, identity | {"status": encode_status(status)}).inputs
    assert as_text == StatusProvider().check({}, identity | {"status": status}).inputs
