"""The run summary: objects per phase, and the Failed or Degraded ones with their reason."""

from __future__ import annotations

from planning.frozen import freeze
from planning.objects import StatusUpdate
from planning.summary import summarize


def _status(kind: str, name: str, phase: str | None, reason: str = "", message: str = "") -> StatusUpdate:
    status = {"reason": reason, "message": message} | ({"phase": phase} if phase else {})
    return StatusUpdate(
        api_version="appliance.magicstick.dev/v1alpha1",
        kind=kind,
        namespace="ai-system",
        name=name,
        status=freeze(status),
    )


def test_objects_are_counted_by_phase_in_phase_order():
    summary = summarize(
        [
            _status("ModuleActivation", "a", "Ready"),
            _status("ModelActivation", "b", "Failed", "InvalidSpec"),
            _status("ModuleActivation", "c", "Ready"),
        ]
    )
    assert summary.phases == (("Failed", 1), ("Ready", 2))
    assert summary.counts() == "1 Failed, 2 Ready"


def test_failed_and_degraded_objects_are_listed_with_their_reason_and_message_sorted_by_identity():
    summary = summarize(
        [
            _status("ModelActivation", "z", "Degraded", "PodFailed", "the pod crashed"),
            _status("AppInstance", "y", "Failed", "InvalidSpec", "spec.values: must be an object"),
            _status("ModelActivation", "w", "WaitingForModules", "WaitingForModules"),
        ]
    )
    assert [problem.describe() for problem in summary.problems] == [
        "AppInstance ai-system/y is Failed: InvalidSpec: spec.values: must be an object",
        "ModelActivation ai-system/z is Degraded: PodFailed: the pod crashed",
    ]
    assert summary.failed == 1


def test_a_status_without_a_phase_counts_as_unknown_and_an_empty_run_says_so():
    assert summarize([_status("Appliance", "local", None)]).counts() == "1 Unknown"
    assert summarize([]).counts() == "no objects"


def test_the_appliance_reason_and_message_come_from_its_ready_condition():
    conditions = (
        {"type": "Ready", "status": "False", "reason": "ModulesDegraded", "message": "Module basis is failing."},
    )
    appliance = StatusUpdate(
        api_version="appliance.magicstick.dev/v1alpha1",
        kind="Appliance",
        namespace="ai-system",
        name="local",
        status=freeze({"phase": "Degraded", "conditions": conditions}),
    )
    (problem,) = summarize([appliance]).problems
    assert problem.describe() == "Appliance ai-system/local is Degraded: ModulesDegraded: Module basis is failing."


def test_an_object_in_conflict_needs_attention_but_does_not_count_as_failed():
    summary = summarize(
        [_status("AppInstance", "late", "Conflict", "HostnameConflict", "held by AppInstance ai-system/early")]
    )
    assert [p.describe() for p in summary.problems] == [
        "AppInstance ai-system/late is Conflict: HostnameConflict: held by AppInstance ai-system/early"
    ]
    assert summary.failed == 0
