"""The offloading store entry and accelerator CPU clones, as the real program declares them.

The engine is played by Pulumi's mocks (tests/program/test_problems_reach_status.py): a dynamic
resource's outputs are its inputs plus the `problem` its provider returned.
"""

from __future__ import annotations

import json

from planning.frozen import thaw
from planning.models.kubeai import ENGINE_PROFILES
from planning.models.offloading import OFFLOADING_CONFIG_MAP, OFFLOADING_NAMESPACE
from providers.outcomes import ProblemReason, problem_output
from tests.planning.models.world import gpu_node, local_model, platform
from tests.program import test_problems_reach_status as reach
from tests.program.test_problems_reach_status import DYNAMIC, RUNTIME_PROFILE, status_write, written

run_failing = reach.run_failing
"""The offline run of the real program with failing providers, shared with the problem tests."""

OFFLOADING_PROFILE = f"{DYNAMIC}OffloadingProfile"
MODEL = "kubernetes:kubeai.org/v1:Model"
OFFLOADING_FULL = problem_output(ProblemReason.PROFILE_STORE_FULL, "cannot add resource profile: the limit is 16")


def offloading_world(*extra: dict) -> list[dict]:
    spec = {"computeTarget": "nvidia-gpu", "cpuOffloading": True, "memoryRequiredMi": 24576, "cpuOffloadMi": 8192}
    return [*platform("gpu"), gpu_node("nvidia.com/gpu"), local_model("m", **spec), *extra]


def store_holding(profile: dict) -> dict:
    document = {"resourceProfiles": {profile["profileName"]: profile["profile"]}}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": OFFLOADING_CONFIG_MAP, "namespace": OFFLOADING_NAMESPACE},
        "data": {"values.json": json.dumps(document)},
    }


def test_the_offloading_store_entry_is_a_dynamic_resource_holding_the_cloned_profile(run_failing):
    run = run_failing(offloading_world(), {})
    (entry,) = run.of_type(OFFLOADING_PROFILE)
    assert entry.name.startswith("offloading-profile/magicstick-offload-")
    assert (entry.inputs["namespace"], entry.inputs["configMap"], entry.inputs["key"]) == (
        OFFLOADING_NAMESPACE,
        OFFLOADING_CONFIG_MAP,
        "values.json",
    )
    profile = entry.inputs["profile"]
    engine = thaw(ENGINE_PROFILES["magicstick-nvidia-gpu"])
    assert profile["requests"]["memory"] == profile["limits"]["memory"] == "24576Mi"
    assert profile["limits"]["nvidia.com/gpu"] == engine["limits"]["nvidia.com/gpu"]
    assert profile["tolerations"] == engine["tolerations"]


def test_no_model_is_declared_until_the_store_holds_the_offloading_profile(run_failing):
    first = run_failing(offloading_world(), {})
    assert not first.of_type(MODEL)
    (entry,) = first.of_type(OFFLOADING_PROFILE)
    second = run_failing(offloading_world(store_holding(dict(entry.inputs))), {})
    (model,) = second.of_type(MODEL)
    assert model.inputs["spec"]["resourceProfile"] == f"{entry.inputs['profileName']}:1"
    (again,) = second.of_type(OFFLOADING_PROFILE)
    assert again.urn in model.dependencies


def test_a_problem_of_the_offloading_store_entry_reaches_the_model_status_in_the_same_run(run_failing):
    run = run_failing(offloading_world(), {OFFLOADING_PROFILE: OFFLOADING_FULL})
    (entry,) = run.of_type(OFFLOADING_PROFILE)
    write = status_write(run, "ModelActivation", "m")
    assert write.inputs["problems"] == {entry.name: OFFLOADING_FULL}
    assert entry.urn in write.dependencies
    status = written(write)
    assert (status["phase"], status["reason"], status["message"]) == (
        "Degraded",
        "ProfileStoreFull",
        OFFLOADING_FULL["message"],
    )


def test_a_gpu_model_runs_on_a_runtime_profile_entry_with_its_cpu_policy(run_failing):
    cpu = {"requestMillicores": 3000, "limitMillicores": 6000}
    run = run_failing(
        [*platform("gpu"), gpu_node("nvidia.com/gpu"), local_model("m", computeTarget="nvidia-gpu", cpuResources=cpu)],
        {},
    )
    (entry,) = run.of_type(RUNTIME_PROFILE)
    (model,) = run.of_type(MODEL)
    assert entry.inputs["profile"]["requests"]["cpu"] == "3000m"
    assert entry.inputs["profile"]["limits"]["cpu"] == "6000m"
    assert model.inputs["spec"]["resourceProfile"] == f"{entry.inputs['profileName']}:1"
    assert entry.urn in model.dependencies
