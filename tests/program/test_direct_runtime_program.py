"""Direct runtimes (realtime vLLM-Omni, FreeToken) as the real program declares them, and their
API failures reaching the activation's status in the same run while other models reconcile.

The engine is played by Pulumi's mocks (tests/program/test_problems_reach_status.py): a dynamic
resource's outputs are its inputs plus the `problem` its provider returned.
"""

from __future__ import annotations

import pytest

from providers.outcomes import Persistence, ProblemReason, problem_output
from tests.planning.models.world import gpu_node, local_model, platform
from tests.program import test_problems_reach_status as reach
from tests.program.test_problems_reach_status import DYNAMIC, status_write, written

run_failing = reach.run_failing

DIRECT_RUNTIME = f"{DYNAMIC}DirectRuntime"
KUBEAI_MODEL = "kubernetes:kubeai.org/v1:Model"


def realtime_world() -> list[dict]:
    realtime = local_model(
        "omni",
        url="hf://Qwen/Qwen2.5-Omni-7B",
        computeTarget="nvidia-gpu",
        realtime={"profile": "omni-cuda", "gpuNode": "gpu-1"},
    )
    del realtime["spec"]["local"]["preset"]
    return [
        *platform("gpu"),
        gpu_node("nvidia.com/gpu", "2"),
        realtime,
        local_model("other", computeTarget="nvidia-gpu"),
    ]


def test_a_realtime_activation_is_one_dynamic_resource_applying_its_config_map_service_and_deployment(run_failing):
    run = run_failing(realtime_world(), {})
    (runtime,) = run.of_type(DIRECT_RUNTIME)
    assert runtime.name == "realtime/ai/omni"
    assert runtime.inputs["runtime"] == "Realtime"
    assert [o["kind"] for o in runtime.inputs["objects"]] == ["ConfigMap", "Service", "Deployment"]
    assert not [r for r in run.registrations if r.type.startswith("kubernetes:apps/v1:Deployment")]


@pytest.mark.parametrize(
    ("reason", "persistence", "phase"),
    [
        (ProblemReason.REALTIME_PERMISSION_DENIED, Persistence.TEMPORARY, "Degraded"),
        (ProblemReason.REALTIME_API_REJECTED, Persistence.PERMANENT, "Degraded"),
        (ProblemReason.REALTIME_API_UNAVAILABLE, Persistence.TEMPORARY, "Starting"),
    ],
)
def test_an_api_failure_of_the_realtime_runtime_becomes_its_status_while_the_other_model_reconciles(
    run_failing, reason, persistence, phase
):
    problem = problem_output(reason, "ConfigMap ai/omni-stages: refused", persistence)
    run = run_failing(realtime_world(), {DIRECT_RUNTIME: problem})
    (runtime,) = run.of_type(DIRECT_RUNTIME)
    write = status_write(run, "ModelActivation", "omni")
    assert write.inputs["problems"] == {runtime.name: problem}
    assert runtime.urn in write.dependencies
    status = written(write)
    assert (status["phase"], status["reason"]) == (phase, str(reason))
    assert run.of_type(KUBEAI_MODEL), "the other activation's KubeAI Model is still declared"
    other = status_write(run, "ModelActivation", "other")
    assert not any(other.inputs.get("problems", {}).values())
    assert written(other)["reason"] == "WaitingForPod"
