"""GPU sharing as the real program declares it: the NVIDIA profile label is a NodePatch (whose
deletion gives the label back), a drained KubeAI Model keeps its resource, and the AMD shared
claim and admission adapter are plain resources beside the DeviceConfig.

The engine is played by Pulumi's mocks (tests/program/test_problems_reach_status.py).
"""

from __future__ import annotations

from planning.hardware.amd_sharing import ADAPTER, SERVED_APIS, SHARED_CLAIM
from planning.hardware.nvidia_sharing import DEVICE_PLUGIN_CONFIG_LABEL
from providers.snapshot_file import SERVED_APIS_ANNOTATION
from tests.planning.hardware.sharing_world import amd_host, gpu_activation, nvidia_host, plan_world, settle, sharing
from tests.planning.models.world import local_model, platform
from tests.program import test_problems_reach_status as reach

run_failing = reach.run_failing

NODE_PATCH = "kubernetes:core/v1:NodePatch"
MODEL = "kubernetes:kubeai.org/v1:Model"


def _settled(world: list[dict], steps: int, served: tuple[str, ...] = ()) -> list[dict]:
    for _ in range(steps):
        world = settle(plan_world(world, served_apis=served), world)
    return world


def test_a_time_slicing_profile_is_a_node_patch_of_that_one_label(run_failing):
    world = _settled([*platform("gpu"), *nvidia_host(), gpu_activation("gpu", sharing("time-slicing", 4))], 1)
    run = run_failing(world, {})
    (patch,) = [r for r in run.of_type(NODE_PATCH) if DEVICE_PLUGIN_CONFIG_LABEL in r.inputs["metadata"]["labels"]]
    assert patch.name == "node-gpu-1-nvidia-device-plugin-config"
    assert patch.inputs["metadata"]["labels"] == {DEVICE_PLUGIN_CONFIG_LABEL: "magicstick-time-slicing-4"}


def test_a_drained_model_stays_declared_at_zero_replicas(run_failing):
    world = _settled(
        [
            *platform("gpu"),
            *nvidia_host(),
            gpu_activation("gpu", None),
            local_model("alpha", computeTarget="nvidia-gpu"),
        ],
        3,
    )
    world = [gpu_activation("gpu", sharing("time-slicing", 4)) if o["kind"] == "ModuleActivation" else o for o in world]
    run = run_failing(world, {})
    (model,) = run.of_type(MODEL)
    assert (model.inputs["spec"]["replicas"], model.inputs["spec"]["autoscalingDisabled"]) == (0, True)


def test_the_shared_claim_and_the_admission_adapter_are_declared_beside_the_device_config(run_failing):
    world = _settled(
        [*platform("amd-gpu"), *amd_host(), gpu_activation("amd-gpu", sharing("dra-shared", 2))], 2, SERVED_APIS
    )
    listed = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {SERVED_APIS_ANNOTATION: '["' + '","'.join(SERVED_APIS) + '"]'}},
        "items": world,
    }
    run = run_failing([listed], {})
    (claim,) = run.of_type("kubernetes:resource.k8s.io/v1:ResourceClaim")
    (policy,) = run.of_type("kubernetes:admissionregistration.k8s.io/v1beta1:MutatingAdmissionPolicy")
    (binding,) = run.of_type("kubernetes:admissionregistration.k8s.io/v1beta1:MutatingAdmissionPolicyBinding")
    assert claim.inputs["metadata"]["name"] == SHARED_CLAIM
    assert policy.inputs["metadata"]["name"] == binding.inputs["metadata"]["name"] == ADAPTER
    (device_config,) = run.of_type("kubernetes:amd.com/v1alpha1:DeviceConfig")
    assert device_config.inputs["spec"]["draDriver"] == {"enable": True}
