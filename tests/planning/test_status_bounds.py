"""Every status stays small enough for etcd, however many objects the cluster holds.

Kubernetes refuses an object over about 1.5 MiB. At 5,000 ModelActivations and 200
AppInstances, Appliance/local.status stays within 256 KiB and the status of every runtime
object within 32 KiB (sizes measured as the JSON the status writer sends). A bounded list is
its count, then the first names in a fixed order; it depends on the world only, so a
converged run still writes nothing (invariants 2 and 4).
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from planning.frozen import thaw
from planning.plan import Plan
from tests.planning.builders import LATER, NOW, activation, appliance, kustomization_for, plan_of, status_of
from tests.planning.hardware.nodes import node, node_feature
from tests.planning.large import large_cluster

APPLIANCE_BUDGET = 256 * 1024
"""Issue #11: Appliance/local.status at 5,000 activations and 200 instances."""
RUNTIME_BUDGET = 32 * 1024
"""Issue #11: the status of each ModuleActivation (and every other runtime object)."""


def size(status) -> int:
    return len(json.dumps(thaw(status)))


@cache
def large(long_names: bool = False) -> tuple[tuple[dict, ...], Plan]:
    """5,000 models (1,250 of them NVIDIA models waiting on a disabled gpu module), 200 instances."""
    objects = tuple(large_cluster(5000, 200, long_names=long_names))
    return objects, plan_of(*objects)


@pytest.mark.parametrize("long_names", [False, True], ids=["short-names", "253-character-names"])
def test_the_appliance_status_of_5000_models_and_200_instances_fits_in_256_kib(long_names):
    _, result = large(long_names)
    assert size(status_of_kind(result, "Appliance")[0]) <= APPLIANCE_BUDGET


@pytest.mark.parametrize("long_names", [False, True], ids=["short-names", "253-character-names"])
@pytest.mark.parametrize("kind", ["ModuleActivation", "ModelActivation", "AppInstance"])
def test_every_runtime_status_of_a_large_cluster_fits_in_32_kib(kind, long_names):
    _, result = large(long_names)
    statuses = status_of_kind(result, kind)
    assert statuses
    assert max(size(s) for s in statuses) <= RUNTIME_BUDGET


def status_of_kind(result: Plan, kind: str) -> list:
    return [u.status for u in result.statuses if u.kind == kind]


def test_requested_by_lists_the_first_requesters_by_name_and_counts_them_all():
    _, result = large()
    litellm = thaw(status_of_kind(result, "Appliance")[0]["modules"]["litellm"])
    everyone = sorted(result.modules.outcome("litellm").requested_by)
    assert len(everyone) == 5201  # every model and instance, and Module/model-catalog
    assert litellm["requestedByCount"] == 5201
    assert litellm["requestedBy"] == everyone[: len(litellm["requestedBy"])]
    assert 0 < len(litellm["requestedBy"]) < 5201


def test_the_model_summary_counts_every_activation_by_phase_and_lists_those_needing_attention_first():
    _, result = large()
    status = thaw(status_of_kind(result, "Appliance")[0])
    summary = status["modelsSummary"]
    assert summary["total"] == 5000
    assert sum(summary["phases"].values()) == 5000
    assert summary["listed"] == len(status["models"]) < 5000
    assert all(entry["phase"] != "Ready" for entry in status["models"].values())


def test_the_instance_summary_counts_every_instance_and_lists_a_bounded_number():
    _, result = large()
    status = thaw(status_of_kind(result, "Appliance")[0])
    summary = status["instancesSummary"]
    assert summary["total"] == 200
    listed = sum(len(names) for names in status["instances"].values())
    assert summary["listed"] == listed < 200


def test_a_disabled_module_names_a_bounded_number_of_the_models_waiting_on_it():
    _, result = large()
    message = status_of(result, "ModuleActivation", "gpu")["message"]
    assert message.endswith("and 1245 more.")


def test_a_bounded_status_is_the_same_whatever_order_the_objects_come_in():
    objects, result = large()
    again = plan_of(*reversed(objects))
    assert again.statuses == result.statuses


def test_a_bounded_status_written_back_plans_the_same_status_again():
    objects, result = large()
    written = {(u.kind, u.name): thaw(u.status) for u in result.statuses}
    world = []
    for obj in objects:
        key = (obj["kind"], obj["metadata"]["name"])
        world.append({**obj, "status": written[key]} if key in written else obj)
    assert plan_of(*world, now=LATER).statuses == result.statuses


def test_a_long_message_is_cut_saying_how_much_was_left_out():
    failing = kustomization_for(
        "litellm", "False", reason="BuildFailed", message="kustomize build failed: " + "x" * 5000
    )
    result = plan_of(appliance(), activation("litellm"), failing, now=NOW)
    status = status_of(result, "ModuleActivation", "litellm")
    assert len(status["message"]) <= 1024
    assert status["message"].endswith("more characters)")
    assert status["conditions"][0]["message"] == status["message"]
    assert len(status_of(result, "Appliance", "local")["modules"]["litellm"]["message"]) <= 1024


def test_the_hardware_status_of_hundreds_of_gpu_nodes_lists_a_few_and_counts_them_all():
    nodes = [node(f"gpu-{i:03d}", "nvidia") for i in range(300)]
    features = [node_feature(f"gpu-{i:03d}", *[("0300", "10de", f"{d:04x}") for d in range(8)]) for i in range(300)]
    status = status_of(plan_of(appliance(), *nodes, *features), "Appliance", "local")
    gpu = status["hardwareOperators"]["gpu"]
    assert (gpu["detectedNodeCount"], gpu["compatibleNodeCount"], gpu["deviceCount"]) == (300, 300, 2400)
    assert gpu["detectedNodes"] == [f"gpu-{i:03d}" for i in range(len(gpu["detectedNodes"]))]
    assert 0 < len(gpu["detectedNodes"]) < 300 and 0 < len(gpu["devices"]) < 2400
    assert "and 2" in gpu["message"] or len(gpu["message"]) < 300
    assert size(status) <= APPLIANCE_BUDGET
