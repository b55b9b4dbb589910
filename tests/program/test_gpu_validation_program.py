"""GPU validation as the real program declares it: the history store is one dynamic resource,
each validation run (or device diagnostic) another, and their problems never reach a status.

The engine is played by Pulumi's mocks (tests/program/test_problems_reach_status.py).
"""

from __future__ import annotations

from providers.outcomes import ProblemReason, problem_output
from tests.planning.builders import appliance
from tests.planning.hardware.strix_halo import amd_installed, consented, halo_feature, halo_node
from tests.planning.hardware.test_validation import diagnostic
from tests.program import test_problems_reach_status as reach
from tests.program.test_problems_reach_status import DYNAMIC, status_write, written

run_failing = reach.run_failing

RUN = f"{DYNAMIC}GpuValidationRun"
HISTORY = f"{DYNAMIC}GpuValidationHistory"


def world(**parameters: str) -> list[dict]:
    activation = consented(**parameters)
    return [appliance(), activation, *amd_installed(), halo_node(), halo_feature()]


def test_the_history_store_is_one_dynamic_resource_and_each_run_another_that_depends_on_it(run_failing):
    run = run_failing(world(validationRequest="run-1"), {})
    (history,) = run.of_type(HISTORY)
    (validation,) = run.of_type(RUN)
    assert history.name == "gpu-validation-history/ai-system"
    assert history.inputs["namespace"] == "ai-system" and history.inputs["bound"] > 0
    assert validation.name == "gpu-validation/run-1"
    assert history.urn in validation.dependencies
    assert validation.inputs["runId"] == "run-1"
    assert validation.inputs["host"]["node"] == "halo"
    assert validation.inputs["hostCurrent"] is True
    assert [e["engine"] for e in validation.inputs["engines"]] == ["OLlama", "VLLM"]
    assert validation.parent == run.of_type("magicstick:index:Appliance")[0].urn


def test_a_device_diagnostic_is_a_validation_run_of_its_own(run_failing):
    objects = world()
    objects[1]["metadata"]["annotations"] = diagnostic("d1")
    run = run_failing(objects, {})
    (validation,) = run.of_type(RUN)
    assert (validation.name, validation.inputs["device"]) == ("device-validation/device-d1", "1002:1586")


def test_without_a_request_only_the_history_store_is_declared(run_failing):
    run = run_failing(world(), {})
    assert len(run.of_type(HISTORY)) == 1
    assert run.of_type(RUN) == []


def test_a_failed_validation_never_degrades_the_appliance_or_the_amd_activation(run_failing):
    refused = problem_output(ProblemReason.VALIDATION_JOB_REFUSED, "403 Forbidden: cannot create jobs")
    unwritable = problem_output(ProblemReason.VALIDATION_HISTORY_UNAVAILABLE, "409 Conflict")
    run = run_failing(world(validationRequest="run-1"), {RUN: refused, HISTORY: unwritable})
    for kind, name in (("Appliance", "local"), ("ModuleActivation", "amd-gpu")):
        write = status_write(run, kind, name)
        assert not write.inputs.get("problems")
        assert written(write)["phase"] != "Degraded"
