"""GPU sharing decisions, step by step, and admission at the slot limit (planning.hardware.sharing)."""

from __future__ import annotations

import pytest

from api.modules import NvidiaGpuSharing
from planning.hardware.sharing import (
    Allocation,
    SharingInputs,
    SharingPhase,
    VendorRuntime,
    admitted_in_order,
    decide_vendor_sharing,
)
from planning.snapshot import ObjectMeta, Pod
from tests.planning.builders import status_of
from tests.planning.hardware.sharing_world import gpu_activation, nvidia_host, plan_world, settle, sharing
from tests.planning.models.direct_world import freetoken_model
from tests.planning.models.world import local_model, platform

RUNNING = VendorRuntime(
    "alpha", pods=(Pod(meta=ObjectMeta(name="alpha-0", namespace="ai"), phase="Running"),), drained=False
)
STOPPED = VendorRuntime("alpha", pods=(), drained=True)
SHARED_4 = NvidiaGpuSharing.model_validate(
    {"mode": "time-slicing", "nodeName": "gpu-1", "nodeUID": "uid-gpu-1", "slots": 4}
)
EXCLUSIVE = NvidiaGpuSharing.model_validate({"mode": "exclusive", "nodeName": "gpu-1", "nodeUID": "uid-gpu-1"})


def inputs(**overrides) -> SharingInputs:
    values = dict(
        module="gpu",
        vendor="NVIDIA",
        config=SHARED_4,
        node="gpu-1",
        node_uid="uid-gpu-1",
        node_found=True,
        applied=Allocation(),
        confirmed=True,
        physical_gpus=1,
        runtimes=(),
        candidates=("alpha",),
        slots_per_gpu=True,
    )
    return SharingInputs(**(values | overrides))


@pytest.mark.parametrize(
    ("case", "overrides", "phase", "declared"),
    [
        ("no gpuSharing and nothing applied", dict(config=None), SharingPhase.DEFAULT, Allocation()),
        ("a runtime still runs", dict(runtimes=(RUNNING,)), SharingPhase.DRAINING, Allocation()),
        ("everything drained", dict(runtimes=(STOPPED,)), SharingPhase.APPLYING, Allocation("time-slicing", 4)),
        (
            "profile set, slots not advertised",
            dict(applied=Allocation("time-slicing", 4), confirmed=False),
            SharingPhase.APPLYING,
            Allocation("time-slicing", 4),
        ),
        (
            "profile set and advertised",
            dict(applied=Allocation("time-slicing", 4)),
            SharingPhase.ACTIVE,
            Allocation("time-slicing", 4),
        ),
        (
            "another slot count needs a drain",
            dict(applied=Allocation("time-slicing", 2), runtimes=(RUNNING,)),
            SharingPhase.DRAINING,
            Allocation("time-slicing", 2),
        ),
        (
            "back to exclusive while running",
            dict(config=EXCLUSIVE, applied=Allocation("time-slicing", 4), runtimes=(RUNNING,)),
            SharingPhase.DRAINING,
            Allocation("time-slicing", 4),
        ),
        (
            "gpuSharing removed while shared",
            dict(config=None, applied=Allocation("time-slicing", 4)),
            SharingPhase.APPLYING,
            Allocation(),
        ),
        (
            "the node is not there",
            dict(node_found=False, applied=Allocation("time-slicing", 2)),
            SharingPhase.NODE_NOT_FOUND,
            Allocation("time-slicing", 2),
        ),
        ("a label Magic Stick did not write", dict(applied=None), SharingPhase.CONFLICT, Allocation()),
        ("the cluster cannot share", dict(unsupported="no DRA"), SharingPhase.UNSUPPORTED, Allocation()),
        (
            "an invalid ModuleActivation keeps what runs",
            dict(config=None, config_invalid=True, applied=Allocation("time-slicing", 4)),
            SharingPhase.ACTIVE,
            Allocation("time-slicing", 4),
        ),
    ],
)
def test_each_transition_step_declares_what_the_cluster_can_take_now(case, overrides, phase, declared):
    decision = decide_vendor_sharing(inputs(**overrides))
    assert (decision.phase, decision.declared) == (phase, declared), case


def test_no_model_runs_while_a_transition_is_under_way():
    decision = decide_vendor_sharing(inputs(runtimes=(RUNNING,)))
    assert decision.holds and not decision.admits("alpha")
    assert "draining NVIDIA runtimes (alpha still running)" in decision.message


def test_the_slot_limit_counts_slots_of_every_physical_gpu_of_the_node():
    decision = decide_vendor_sharing(
        inputs(applied=Allocation("time-slicing", 4), physical_gpus=2, candidates=tuple("abcdefghij"))
    )
    assert decision.slot_limit == 8
    assert decision.admitted == tuple("abcdefgh") and decision.waiting == ("i", "j")


def test_running_models_keep_their_slots_before_new_ones_by_name():
    runtimes = (VendorRuntime("zeta", pods=(), drained=False), VendorRuntime("yota", pods=(), drained=True))
    assert admitted_in_order(("alpha", "beta", "yota", "zeta"), runtimes, 2) == (("alpha", "zeta"), ("beta", "yota"))


def _shared_world(models: tuple[str, ...], slots: int) -> list[dict]:
    world = [*platform("gpu"), *nvidia_host(), gpu_activation("gpu", sharing("time-slicing", slots))]
    world += [local_model(name, computeTarget="nvidia-gpu") for name in models]
    for _ in range(3):
        world = settle(plan_world(world), world)
    return world


def test_a_model_beyond_the_slot_limit_waits_naming_the_limit():
    result = plan_world(_shared_world(("alpha", "beta", "gamma"), 2))
    waiting = status_of(result, "ModelActivation", "gamma")
    assert (waiting["phase"], waiting["reason"]) == ("WaitingForGPU", "WaitingForGpuSlot")
    assert "slot limit 2" in waiting["message"] and "gpu-1" in waiting["message"]
    assert {o.name for o in result.objects if o.kind == "Model"} == {"alpha", "beta"}
    assert status_of(result, "Appliance", "local")["hardwareOperators"]["gpu"]["sharing"]["waitingModels"] == ["gamma"]


def test_inventory_counts_physical_gpus_never_slots():
    result = plan_world(_shared_world(("alpha",), 8))
    gpu = status_of(result, "Appliance", "local")["hardwareOperators"]["gpu"]
    assert gpu["deviceCount"] == 1 and len(gpu["devices"]) == 1
    assert gpu["sharing"]["physicalGpus"] == 1 and gpu["sharing"]["slotLimit"] == 8


def test_a_direct_runtime_asking_for_two_time_sliced_gpus_fails_naming_gpu_count():
    world = _shared_world(("alpha",), 4) + [freetoken_model("ft", freetoken={"gpuCount": 2})]
    failed = status_of(plan_world(world), "ModelActivation", "ft")
    assert (failed["phase"], failed["reason"]) == ("Failed", "InvalidSpec")
    assert failed["message"].startswith("spec.local.freetoken.gpuCount: the GPUs of this vendor are shared in slots")
