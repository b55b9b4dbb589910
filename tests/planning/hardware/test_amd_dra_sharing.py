"""AMD dra-shared: the device plugin gives way to one shared claim only after AMD models drain,
and every object declared for it passes the upstream schema. (The MutatingAdmissionPolicy is a
beta API the test server does not serve; the claim also passes the server's dry run in
tests/live/test_sharing_objects_dry_run.py.)"""

from __future__ import annotations

from planning.frozen import thaw
from planning.hardware.amd_sharing import ADAPTER, CLAIM_REFERENCE, SERVED_APIS, SHARED_CLAIM
from tests.planning.builders import status_of
from tests.planning.hardware.sharing_world import amd_host, gpu_activation, plan_world, settle, sharing
from tests.planning.models.direct_world import realtime_model
from tests.planning.models.world import local_model, platform
from tests.support.crd_schema import upstream_registry
from tests.support.native_schema import native_registry


def _slice(node: str = "gpu-1") -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu.amd.com"},
        "spec": {
            "driver": "gpu.amd.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": "gpu-0", "attributes": {"resource.kubernetes.io/pciBusID": {"string": "0000:c3:00.0"}}}
            ],
        },
    }


def _world(*extra: dict) -> list[dict]:
    return [
        *platform("amd-gpu"),
        *amd_host(),
        gpu_activation("amd-gpu", sharing("dra-shared", 2)),
        local_model("alpha", computeTarget="amd-gpu"),
        *extra,
    ]


def _kinds(result) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for obj in result.objects:
        found.setdefault(obj.kind, []).append(thaw(obj.body))
    return found


def _walk(world: list[dict], steps: int, served: tuple[str, ...] = SERVED_APIS) -> list[dict]:
    for _ in range(steps):
        world = settle(plan_world(world, served_apis=served), world)
    return world


def test_without_dra_and_admission_policies_served_the_device_plugin_stays():
    result = plan_world(_walk(_world(), 2, served=()))
    shared = status_of(result, "Appliance", "local")["hardwareOperators"]["amd-gpu"]["sharing"]
    assert shared["observedPhase"] == "Unsupported" and "resourceclaims.resource.k8s.io/v1" in shared["message"]
    assert "ResourceClaim" not in _kinds(result)


def test_the_shared_claim_replaces_the_device_plugin_only_after_amd_models_drain():
    world = [o for o in _world() if not (o["kind"] == "ModuleActivation" and o["metadata"]["name"] == "amd-gpu")]
    world.append(gpu_activation("amd-gpu", None))
    world = _walk(world, 3)
    world = [
        gpu_activation("amd-gpu", sharing("dra-shared", 2))
        if o["kind"] == "ModuleActivation" and o["metadata"]["name"] == "amd-gpu"
        else o
        for o in world
    ]

    draining = plan_world(world, served_apis=SERVED_APIS)
    kinds = _kinds(draining)
    assert (
        status_of(draining, "Appliance", "local")["hardwareOperators"]["amd-gpu"]["sharing"]["observedPhase"]
        == "Draining"
    )
    assert "ResourceClaim" not in kinds
    assert kinds["DeviceConfig"][0]["spec"]["devicePlugin"]["enableDevicePlugin"] is True
    assert kinds["Model"][0]["spec"]["replicas"] == 0
    world = settle(draining, world)

    applying = plan_world(world, served_apis=SERVED_APIS)
    kinds = _kinds(applying)
    assert kinds["DeviceConfig"][0]["spec"]["draDriver"]["enable"] is True
    assert kinds["DeviceConfig"][0]["spec"]["devicePlugin"]["enableDevicePlugin"] is False
    assert [c["metadata"]["name"] for c in kinds["ResourceClaim"]] == [SHARED_CLAIM]
    assert kinds["MutatingAdmissionPolicy"][0]["metadata"]["name"] == ADAPTER
    world = settle(applying, world) + [_slice()]

    active = plan_world(world, served_apis=SERVED_APIS)
    operator = status_of(active, "Appliance", "local")["hardwareOperators"]["amd-gpu"]
    assert operator["sharing"]["observedPhase"] == "Active" and operator["sharing"]["admittedModels"] == ["alpha"]
    policy = _kinds(active)["MutatingAdmissionPolicy"][0]
    assert policy["spec"]["matchConstraints"]["objectSelector"]["matchExpressions"][0]["values"] == ["alpha"]
    assert status_of(active, "ModelActivation", "alpha")["gpuSharing"] == {
        "mode": "dra-shared",
        "node": "gpu-1",
        "slots": 2,
        "claim": f"ai/{SHARED_CLAIM}",
    }


def test_the_claim_the_adapter_and_the_device_config_pass_the_upstream_schemas():
    world = _walk(_world(), 3) + [_slice()]
    kinds = _kinds(plan_world(world, served_apis=SERVED_APIS))
    native = native_registry()
    for obj in (*kinds["ResourceClaim"], *kinds["MutatingAdmissionPolicy"], *kinds["MutatingAdmissionPolicyBinding"]):
        assert native.errors(obj) == [], obj["kind"]
    assert upstream_registry().errors(kinds["DeviceConfig"][0]) == []


def _realtime(**realtime) -> dict:
    return realtime_model(
        "omni",
        profile="omni-rocm",
        target="amd-gpu",
        realtime={"runtimeImage": "registry.example.com/vllm-omni-rocm:1.0", **realtime},
    )


def test_a_realtime_runtime_binds_the_shared_claim_itself_and_requests_no_amd_gpu():
    world = _walk([*_world(), _realtime()], 3) + [_slice()]
    result = plan_world(world, served_apis=SERVED_APIS)
    runtime = next(o.runtime for o in result.models.outcomes if o.activation == "omni")
    pod = next(thaw(o.body) for o in runtime.objects if o.kind == "Deployment")["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": CLAIM_REFERENCE, "resourceClaimName": SHARED_CLAIM}]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": CLAIM_REFERENCE}]
    assert "amd.com/gpu" not in pod["containers"][0]["resources"].get("limits", {})
    assert status_of(result, "Appliance", "local")["hardwareOperators"]["amd-gpu"]["sharing"]["admittedModels"] == [
        "alpha",
        "omni",
    ]


def test_a_realtime_runtime_asking_for_two_shared_gpus_fails_naming_gpu_count():
    world = _walk([*_world(), _realtime(gpuCount=2)], 3) + [_slice()]
    failed = status_of(plan_world(world, served_apis=SERVED_APIS), "ModelActivation", "omni")
    assert (failed["phase"], failed["reason"]) == ("Failed", "InvalidSpec")
    assert failed["message"].startswith("spec.local.realtime.gpuCount: ")
