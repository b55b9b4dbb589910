"""Exclusive -> time-slicing (4 slots) -> exclusive on one NVIDIA node with two KubeAI models
and one realtime runtime: at every step, what is declared and what is reported."""

from __future__ import annotations

from planning.hardware.nvidia_sharing import DEVICE_PLUGIN_CONFIG_LABEL
from planning.hardware.sharing import DRAINED_ANNOTATION
from planning.plan import Plan
from tests.planning.builders import LATER, status_of
from tests.planning.hardware.sharing_world import gpu_activation, nvidia_host, plan_world, pods_running, settle, sharing
from tests.planning.models.direct_world import realtime_model
from tests.planning.models.world import local_model, platform

MODELS = ("alpha", "beta")


def _start(mode: dict | None) -> list[dict]:
    return [
        *platform("gpu"),
        *nvidia_host(),
        gpu_activation("gpu", mode),
        *(local_model(name, computeTarget="nvidia-gpu") for name in MODELS),
        realtime_model("omni"),
    ]


def _with_sharing(world: list[dict], mode: dict | None) -> list[dict]:
    return [
        gpu_activation("gpu", mode) if o["kind"] == "ModuleActivation" and o["metadata"]["name"] == "gpu" else o
        for o in world
    ]


def _models(result: Plan) -> dict[str, dict]:
    return {o.name: o.body for o in result.objects if o.kind == "Model"}


def _deployment(result: Plan) -> dict:
    runtime = next(o.runtime for o in result.models.outcomes if o.activation == "omni")
    return next(o.body for o in runtime.objects if o.kind == "Deployment")


def _node_patches(result: Plan) -> list[dict]:
    return [
        o.body["metadata"]["labels"]
        for o in result.objects
        if o.patch and DEVICE_PLUGIN_CONFIG_LABEL in o.body["metadata"]["labels"]
    ]


def _sharing_status(result: Plan) -> dict:
    return status_of(result, "Appliance", "local")["hardwareOperators"]["gpu"]["sharing"]


def _step(world: list[dict]) -> tuple[Plan, list[dict]]:
    result = plan_world(world)
    return result, settle(result, world)


def test_a_node_goes_from_exclusive_to_four_time_sliced_slots_and_back_without_losing_a_model():
    world = _start(sharing("exclusive"))
    for _ in range(3):
        result, world = _step(world)
    assert _sharing_status(result)["observedPhase"] == "Active"
    assert _sharing_status(result)["appliedMode"] == "exclusive"
    assert set(_models(result)) == set(MODELS)
    assert pods_running(world) == ["alpha-0", "beta-0", "omni-0"]
    assert status_of(result, "ModelActivation", "alpha")["gpuSharing"] == {"mode": "exclusive", "node": "gpu-1"}

    # Time-slicing asked for: NVIDIA runtimes drain first; the node keeps its exclusive plugin.
    world = _with_sharing(world, sharing("time-slicing", 4))
    result, world = _step(world)
    assert _sharing_status(result)["observedPhase"] == "Draining"
    assert _node_patches(result) == []
    assert all(
        m["spec"]["replicas"] == 0 and DRAINED_ANNOTATION in m["metadata"]["annotations"]
        for m in _models(result).values()
    )
    assert _deployment(result)["spec"]["replicas"] == 0
    for name in (*MODELS, "omni"):
        assert status_of(result, "ModelActivation", name)["reason"] == "GpuSharingTransition"
    assert pods_running(world) == []

    # Drained: the profile label is set; models wait for the advertised slots.
    result, world = _step(world)
    assert _sharing_status(result)["observedPhase"] == "Applying"
    assert _node_patches(result) == [{DEVICE_PLUGIN_CONFIG_LABEL: "magicstick-time-slicing-4"}]
    assert all(m["spec"]["replicas"] == 0 for m in _models(result).values())
    assert pods_running(world) == []

    # The device plugin advertises 4 slots: the models are admitted again, within the slot limit.
    result, world = _step(world)
    shared = _sharing_status(result)
    assert (shared["observedPhase"], shared["slotLimit"], shared["physicalGpus"]) == ("Active", 4, 1)
    assert shared["admittedModels"] == ["alpha", "beta", "omni"]
    assert all(
        "replicas" not in m["spec"] and DRAINED_ANNOTATION not in m["metadata"]["annotations"]
        for m in _models(result).values()
    )
    assert status_of(result, "ModelActivation", "beta")["gpuSharing"] == {
        "mode": "time-slicing",
        "node": "gpu-1",
        "slots": 4,
    }
    devices = status_of(result, "Appliance", "local")["hardwareOperators"]["gpu"]
    assert devices["deviceCount"] == 1
    result, world = _step(world)
    assert pods_running(world) == ["alpha-0", "beta-0", "omni-0"]

    # Back to exclusive: drain again, then the label goes and the node advertises one GPU.
    world = _with_sharing(world, sharing("exclusive"))
    result, world = _step(world)
    assert _sharing_status(result)["observedPhase"] == "Draining"
    assert _node_patches(result) == [{DEVICE_PLUGIN_CONFIG_LABEL: "magicstick-time-slicing-4"}]
    result, world = _step(world)
    assert _sharing_status(result)["observedPhase"] == "Applying"
    assert _node_patches(result) == []
    result, world = _step(world)
    assert _sharing_status(result)["observedPhase"] == "Active"
    assert set(_models(result)) == set(MODELS)
    result, world = _step(world)
    assert pods_running(world) == ["alpha-0", "beta-0", "omni-0"]
    node = next(o for o in world if o["kind"] == "Node")
    assert DEVICE_PLUGIN_CONFIG_LABEL not in node["metadata"]["labels"]
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "1"


def test_a_restart_in_the_middle_of_a_transition_resumes_where_the_cluster_stands():
    world = _start(sharing("exclusive"))
    for _ in range(3):
        _, world = _step(world)
    world = _with_sharing(world, sharing("time-slicing", 4))
    for _ in range(2):
        _, world = _step(world)
    # The label is on the node, the slots not advertised yet: a fresh program sees Applying.
    node = next(o for o in world if o["kind"] == "Node")
    node["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    first, again = plan_world(world), plan_world(world, now=LATER)
    assert _sharing_status(first)["observedPhase"] == "Applying"
    assert first.objects == again.objects
    assert _node_patches(again) == [{DEVICE_PLUGIN_CONFIG_LABEL: "magicstick-time-slicing-4"}]


def test_a_converged_shared_node_plans_the_same_objects_and_statuses_later():
    world = _start(sharing("time-slicing", 4))
    for _ in range(5):
        _, world = _step(world)
    first, later = plan_world(world), plan_world(world, now=LATER)
    assert _sharing_status(first)["observedPhase"] == "Active"
    assert first.objects == later.objects
    assert first.statuses == later.statuses
