"""The objects of direct runtimes, as planned, pass a server-side dry run on the real API server:
its validation of Deployments, Services and ConfigMaps is the one that counts on a cluster."""

from __future__ import annotations

import pytest

from planning.frozen import thaw
from planning.settings import FIELD_MANAGER
from providers.kinds import CONFIG_MAP, DEPLOYMENT, SERVICE
from providers.kube import KubeClient
from tests.live.conftest import admin, admin_access  # noqa: F401 - fixtures used by name
from tests.planning.hardware.nodes import node
from tests.planning.models.direct_world import freetoken_model, plan_with, realtime_model, runtime_of
from tests.planning.models.world import gpu_node, platform

KINDS = {"ConfigMap": CONFIG_MAP, "Service": SERVICE, "Deployment": DEPLOYMENT}

SCENARIOS = {
    "realtime-cuda": (
        [*platform("gpu"), gpu_node("nvidia.com/gpu", "2")],
        realtime_model(contextWindow=8192, realtime={"gpuCount": 2, "thinkerCpuOffloadGiB": 4, "restartNonce": "r1"}),
    ),
    "realtime-cpu": (
        [*platform(), node("cpu-1")],
        realtime_model(
            profile="omni-cpu",
            node="cpu-1",
            target="cpu",
            realtime={"runtimeImage": "registry.example.com/vllm-omni-cpu:0.12.0"},
        ),
    ),
    "freetoken": (
        [*platform("gpu"), gpu_node("nvidia.com/gpu")],
        freetoken_model(
            contextWindow=32768, maxNumSeqs=2, freetoken={"gpuDevice": "gpu-1", "advanced": {"numPages": 1568}}
        ),
    ),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_object_of_a_planned_direct_runtime_passes_a_server_side_dry_run(scenario, namespace, admin: KubeClient):
    world, activation = SCENARIOS[scenario]
    activation["spec"]["targetNamespace"] = namespace
    name = activation["metadata"]["name"]
    runtime = runtime_of(plan_with(*world, activation), name)
    assert runtime is not None, f"{scenario}: nothing planned"
    for obj in runtime.objects:
        body = thaw(obj.body)
        answered = admin.apply(KINDS[obj.kind], body, field_manager=FIELD_MANAGER, dry_run=True)
        assert answered["metadata"]["name"] == obj.name
