"""FreeToken and the realtime vLLM-Omni runtime: direct Deployments, their rules and lifecycle (issue #12)."""

from __future__ import annotations

import hashlib

import pytest

from planning.frozen import thaw
from planning.models.direct import CONFIG_HASH_ANNOTATION, RESTART_NONCE_ANNOTATION, RUNTIME_LABEL
from planning.models.plan import EXTERNAL_MODELS_KEY
from planning.snapshot import HealthObservation
from tests.planning.builders import CATALOGS, status_of
from tests.planning.hardware.nodes import node
from tests.planning.models.direct_world import (
    FREETOKEN_IMAGE,
    freetoken_model,
    object_of,
    plan_with,
    realtime_model,
    runtime_of,
    runtime_pod,
    stored,
)
from tests.planning.models.world import catalog_publishing, gpu_node, host_operation, platform

GPU = "nvidia.com/gpu"


def status(result, name):
    return status_of(result, "ModelActivation", name)


def gpu_world(count: str = "1"):
    return [*platform("gpu"), gpu_node(GPU, count)]


def container(runtime):
    return object_of(runtime, "Deployment")["spec"]["template"]["spec"]["containers"][0]


def generated_entries(result):
    listing = result.models.external_models
    if listing is None:
        return []
    import json

    return json.loads(thaw(listing.body)["data"][EXTERNAL_MODELS_KEY])


# FreeToken ---------------------------------------------------------------------------------


def test_freetoken_with_the_shipped_placeholder_image_fails_naming_the_catalog_field_and_declares_nothing():
    result = plan_with(*gpu_world(), freetoken_model(), catalogs=CATALOGS)
    assert (status(result, "ft")["phase"], status(result, "ft")["reason"]) == ("Failed", "RuntimeImageNotSet")
    message = status(result, "ft")["message"]
    assert message.startswith(
        "runtimes.yaml freetoken.image: 'registry.example.com/magicstick/freetoken:CHANGEME' is a placeholder; "
        "set freetoken.image to a FreeToken server image"
    )
    assert "in runtimes.yaml of the directory magicstick:catalogDir names" in message
    assert runtime_of(result, "ft") is None


def test_the_freetoken_status_says_what_render_and_the_run_log_warn():
    result = plan_with(*gpu_world(), freetoken_model(), catalogs=CATALOGS)
    warnings = [image.describe() for image in result.unset_images]
    assert f"RuntimeImageNotSet: {status(result, 'ft')['message']}" in warnings


def test_freetoken_is_a_deployment_and_service_with_whole_nvidia_gpus_and_equal_ram_request_and_limit():
    result = plan_with(*gpu_world("2"), freetoken_model(freetoken={"gpuCount": 2, "systemMemoryMi": 49152}))
    runtime = runtime_of(result, "ft")
    assert [o.kind for o in runtime.objects] == ["Service", "Deployment"]
    spec = container(runtime)
    assert spec["image"] == FREETOKEN_IMAGE
    assert spec["resources"]["limits"][GPU] == "2"
    assert spec["resources"]["requests"]["memory"] == spec["resources"]["limits"]["memory"] == "49152Mi"
    pod = object_of(runtime, "Deployment")["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["automountServiceAccountToken"] is False
    assert status(result, "ft")["memoryRequiredMi"] == 49152


def test_freetoken_flags_come_from_the_catalog_for_model_context_concurrency_strategy_and_advanced_values():
    activation = freetoken_model(
        contextWindow=32768, maxNumSeqs=4, freetoken={"memoryStrategy": "auto", "advanced": {"numPages": 1568}}
    )
    args = container(runtime_of(plan_with(*gpu_world(), activation), "ft"))["args"]
    joined = " ".join(args)
    assert "--model example/moe-35b" in joined
    assert "--max-seq-len-override 32768" in joined
    assert "--max-running-requests 4" in joined
    assert "--moe-backend offload --moe-cache-auto" in joined
    assert "--num-pages 1568" in joined


@pytest.mark.parametrize(
    ("freetoken", "field"),
    [
        ({"memoryStrategy": "fastest"}, "spec.local.freetoken.memoryStrategy"),
        ({"advanced": {"rmRf": "/"}}, "spec.local.freetoken.advanced.rmRf"),
        ({"advanced": {"numPages": {"nested": 1}}}, "spec.local.freetoken.advanced.numPages"),
    ],
)
def test_freetoken_settings_the_catalog_does_not_offer_fail_naming_the_field(freetoken, field):
    result = plan_with(*gpu_world(), freetoken_model(freetoken=freetoken))
    assert status(result, "ft")["phase"] == "Failed"
    assert status(result, "ft")["message"].startswith(field)
    assert runtime_of(result, "ft") is None


def test_freetoken_restart_nonce_and_cpu_policy_reach_the_pod_template():
    activation = freetoken_model(
        cpuResources={"requestMillicores": 3000, "limitMillicores": 6000}, freetoken={"restartNonce": "r2"}
    )
    runtime = runtime_of(plan_with(*gpu_world(), activation), "ft")
    template = object_of(runtime, "Deployment")["spec"]["template"]
    assert template["metadata"]["annotations"][RESTART_NONCE_ANNOTATION] == "r2"
    resources = template["spec"]["containers"][0]["resources"]
    assert (resources["requests"]["cpu"], resources["limits"]["cpu"]) == ("3000m", "6000m")


@pytest.mark.parametrize(
    ("freetoken", "nodes", "phase", "reason"),
    [
        ({"gpuDevice": "gpu-9"}, [gpu_node(GPU)], "Pending", "GpuDeviceNotFound"),
        ({"gpuDevice": "gpu-1", "gpuCount": 2}, [gpu_node(GPU)], "WaitingForGPU", "WaitingForGPU"),
        ({"gpuCount": 4}, [gpu_node(GPU, "2")], "WaitingForGPU", "WaitingForGPU"),
    ],
)
def test_freetoken_waits_when_no_node_has_the_devices_it_asks_for(freetoken, nodes, phase, reason):
    result = plan_with(*platform("gpu"), *nodes, freetoken_model(freetoken=freetoken))
    assert (status(result, "ft")["phase"], status(result, "ft")["reason"]) == (phase, reason)
    assert runtime_of(result, "ft") is None


def test_freetoken_gpu_device_pins_the_runtime_to_that_node():
    runtime = runtime_of(plan_with(*gpu_world(), freetoken_model(freetoken={"gpuDevice": "gpu-1"})), "ft")
    terms = object_of(runtime, "Deployment")["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    fields = terms["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"]
    assert fields == [{"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}]


def test_freetoken_needs_no_kubeai_module():
    result = plan_with(*gpu_world(), freetoken_model())
    assert "kubeai" not in status(result, "ft")["requiredModules"]


def test_freetoken_has_no_kv_cache_type_in_its_status():
    assert "requestedKvCacheType" not in status(plan_with(*gpu_world(), freetoken_model()), "ft")


# Lifecycle (both runtimes) -----------------------------------------------------------------


def test_a_direct_runtime_waits_for_the_rollout_of_its_current_generation():
    first = runtime_of(plan_with(*gpu_world(), freetoken_model()), "ft")
    result = plan_with(
        *gpu_world(), freetoken_model(), *stored(first, generation=2, observed_generation=1), runtime_pod(first)
    )
    assert (status(result, "ft")["phase"], status(result, "ft")["reason"]) == ("Starting", "WaitingForRollout")
    assert "generation 2" in status(result, "ft")["message"]


def test_a_direct_runtime_whose_deployment_has_no_pod_waits_for_a_pod():
    first = runtime_of(plan_with(*gpu_world(), freetoken_model()), "ft")
    result = plan_with(*gpu_world(), freetoken_model(), *stored(first, available=0))
    assert status(result, "ft")["reason"] == "WaitingForPod"


def test_a_deployment_that_is_not_the_planned_spec_is_not_ready_even_if_its_rollout_is():
    old = runtime_of(plan_with(*gpu_world(), freetoken_model(contextWindow=4096)), "ft")
    result = plan_with(*gpu_world(), freetoken_model(contextWindow=8192), *stored(old), runtime_pod(old))
    assert status(result, "ft")["reason"] == "WaitingForRollout"
    assert not generated_entries(result)


def test_a_rolled_out_freetoken_is_published_then_ready_once_the_catalog_lists_it():
    first = runtime_of(plan_with(*gpu_world(), freetoken_model()), "ft")
    rolled_out = [*gpu_world(), freetoken_model(), *stored(first), runtime_pod(first)]
    waiting = plan_with(*rolled_out)
    assert status(waiting, "ft")["reason"] == "WaitingForModelCatalog"
    assert generated_entries(waiting) == [
        {
            "id": "ft",
            "model": "openai/example/moe-35b",
            "modelType": "chat",
            "apiBase": "http://ft.ai.svc.cluster.local:8090/v1",
        }
    ]
    ready = plan_with(*rolled_out, catalog_publishing("ft"))
    assert status(ready, "ft")["phase"] == "Ready"


def test_a_rollout_past_its_progress_deadline_is_degraded_and_not_published():
    first = runtime_of(plan_with(*gpu_world(), freetoken_model()), "ft")
    objects = stored(first, available=0)
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    deployment["status"]["conditions"] = [
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "too slow"}
    ]
    result = plan_with(*gpu_world(), freetoken_model(), *objects)
    assert (status(result, "ft")["phase"], status(result, "ft")["reason"]) == ("Degraded", "RolloutFailed")
    assert not generated_entries(result)


def test_an_invalid_edit_keeps_the_running_direct_runtime_as_observed_and_its_catalog_entry():
    first = runtime_of(plan_with(*gpu_world(), freetoken_model()), "ft")
    published = plan_with(*gpu_world(), freetoken_model(), *stored(first), runtime_pod(first), catalog_publishing("ft"))
    listing = thaw(published.models.external_models.body)
    broken = freetoken_model(freetoken={"memoryStrategy": "fastest"})
    result = plan_with(*gpu_world(), broken, *stored(first), runtime_pod(first), catalog_publishing("ft"), listing)
    assert status(result, "ft")["phase"] == "Failed"
    kept = runtime_of(result, "ft")
    assert (
        object_of(kept, "Deployment")["spec"]["template"]
        == next(o for o in stored(first) if o["kind"] == "Deployment")["spec"]["template"]
    )
    assert "deployment.kubernetes.io/revision" not in object_of(kept, "Deployment")["metadata"]["annotations"]
    assert [e["id"] for e in generated_entries(result)] == ["ft"]


def test_a_clear_model_cache_operation_defers_a_new_runtime_and_keeps_a_running_one():
    new = plan_with(*gpu_world(), freetoken_model(), host_operation("clear"))
    assert status(new, "ft")["reason"] == "DeferredByHostOperation"
    assert runtime_of(new, "ft") is None
    first = runtime_of(plan_with(*gpu_world(), freetoken_model()), "ft")
    running = plan_with(*gpu_world(), freetoken_model(contextWindow=1024), host_operation("clear"), *stored(first))
    assert status(running, "ft")["reason"] == "DeferredByHostOperation"
    assert (
        object_of(runtime_of(running, "ft"), "Deployment")["spec"]["template"]
        == next(o for o in stored(first) if o["kind"] == "Deployment")["spec"]["template"]
    )


# Realtime ------------------------------------------------------------------------------------


def test_realtime_declares_its_stage_config_map_service_and_recreate_deployment_on_the_named_node():
    runtime = runtime_of(plan_with(*gpu_world(), realtime_model()), "omni")
    assert [o.kind for o in runtime.objects] == ["ConfigMap", "Service", "Deployment"]
    deployment = object_of(runtime, "Deployment")
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert deployment["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchFields"][0]["values"] == ["gpu-1"]
    assert term["matchExpressions"] == [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]
    assert pod["runtimeClassName"] == "nvidia"
    assert {"name": "MODEL_ID", "value": "Qwen/Qwen2.5-Omni-7B"} in pod["containers"][0]["env"]
    assert pod["containers"][0]["resources"]["limits"][GPU] == "1"
    assert all(o.body["metadata"]["labels"][RUNTIME_LABEL] == "realtime" for o in runtime.objects)


def test_the_stage_config_map_holds_the_version_bound_bootstrap_whose_hash_is_in_the_pod_template():
    runtime = runtime_of(plan_with(*gpu_world(), realtime_model(contextWindow=8192)), "omni")
    bootstrap = object_of(runtime, "ConfigMap")["data"]["bootstrap.sh"]
    assert CATALOGS.runtimes.realtime.version in bootstrap
    assert "--max-model-len 8192" in bootstrap
    annotation = object_of(runtime, "Deployment")["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_ANNOTATION]
    assert annotation == hashlib.sha256(bootstrap.encode()).hexdigest()[:16]


def test_a_changed_setting_changes_the_bootstrap_hash_so_the_runtime_restarts():
    def config_hash(**settings):
        runtime = runtime_of(plan_with(*gpu_world(), realtime_model(**settings)), "omni")
        return object_of(runtime, "Deployment")["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_ANNOTATION]

    assert config_hash(maxNumSeqs=2) != config_hash(maxNumSeqs=4)


def test_thinker_cpu_offloading_is_an_overlay_for_catalog_images_only():
    def bootstrap(**realtime):
        runtime = runtime_of(plan_with(*gpu_world(), realtime_model(realtime=realtime)), "omni")
        return object_of(runtime, "ConfigMap")["data"]["bootstrap.sh"]

    assert "cpu_offload_gb: 4" in bootstrap(thinkerCpuOffloadGiB=4)
    assert "cpu_offload_gb" not in bootstrap(thinkerCpuOffloadGiB=4, runtimeImage="registry.example.com/omni:custom")


def test_a_cpu_realtime_profile_requests_no_gpu_and_no_runtime_class_and_needs_an_explicit_image():
    cpu = [*platform(), node("cpu-1")]
    without = plan_with(*cpu, realtime_model(profile="omni-cpu", node="cpu-1", target="cpu"))
    assert (status(without, "omni")["phase"], status(without, "omni")["reason"]) == ("Failed", "RuntimeImageNotSet")
    assert status(without, "omni")["message"].startswith("spec.local.realtime.runtimeImage")
    image = "registry.example.com/vllm-omni-cpu:0.12.0"
    result = plan_with(
        *cpu, realtime_model(profile="omni-cpu", node="cpu-1", target="cpu", realtime={"runtimeImage": image})
    )
    pod = object_of(runtime_of(result, "omni"), "Deployment")["spec"]["template"]["spec"]
    assert "runtimeClassName" not in pod
    assert set(pod["containers"][0]["resources"]["limits"]) == {"memory"}
    assert pod["containers"][0]["image"] == image
    assert status(result, "omni")["requiredModules"] == ["litellm", "model-catalog"]


def test_a_realtime_runtime_image_that_is_a_placeholder_fails_as_a_missing_one_does():
    placeholder = "registry.example.com/vllm-omni:CHANGEME"
    result = plan_with(*gpu_world(), realtime_model(realtime={"runtimeImage": placeholder}))
    assert (status(result, "omni")["phase"], status(result, "omni")["reason"]) == ("Failed", "RuntimeImageNotSet")
    assert status(result, "omni")["message"].startswith(
        f"spec.local.realtime.runtimeImage: '{placeholder}' is a placeholder; "
    )
    assert runtime_of(result, "omni") is None


def test_a_realtime_profile_without_a_catalog_image_names_both_places_an_image_can_be_set():
    cpu = [*platform(), node("cpu-1")]
    without = plan_with(*cpu, realtime_model(profile="omni-cpu", node="cpu-1", target="cpu"))
    message = status(without, "omni")["message"]
    assert message.startswith(
        "spec.local.realtime.runtimeImage: is required while runtimes.yaml realtime.profiles[omni-cpu].image "
        "is unset (no image is set); "
    )
    assert "magicstick:catalogDir" in message


@pytest.mark.parametrize(
    ("activation", "field"),
    [
        (realtime_model(profile="omni-tpu"), "spec.local.realtime.profile"),
        (realtime_model(profile="omni-rocm"), "spec.local.computeTarget"),
        (realtime_model(realtime={"gpuCount": 3}), "spec.local.realtime.gpuCount"),
        (realtime_model(kvCacheType="fp8"), "spec.local.kvCacheType"),
        (realtime_model(replicas=2), "spec.local.replicas"),
    ],
)
def test_realtime_settings_outside_the_catalog_or_the_contract_fail_naming_the_field(activation, field):
    result = plan_with(*gpu_world("2"), activation)
    assert status(result, "omni")["phase"] == "Failed"
    assert status(result, "omni")["message"].startswith(field)


@pytest.mark.parametrize(
    ("activation", "nodes", "reason"),
    [
        (realtime_model(node="elsewhere"), [gpu_node(GPU)], "GpuNodeNotFound"),
        (realtime_model(realtime={"gpuCount": 2}), [gpu_node(GPU, "1")], "WaitingForGPU"),
        (realtime_model(realtime={"systemMemoryMi": 131072}), [gpu_node(GPU)], "InsufficientMemory"),
    ],
)
def test_realtime_waits_while_its_node_cannot_take_it(activation, nodes, reason):
    result = plan_with(*platform("gpu"), *nodes, activation)
    assert status(result, "omni")["reason"] == reason
    assert status(result, "omni")["phase"] != "Failed"
    assert runtime_of(result, "omni") is None


def test_realtime_is_ready_only_after_upstream_health_and_the_catalog():
    first = runtime_of(plan_with(*gpu_world(), realtime_model()), "omni")
    rolled_out = [*gpu_world(), realtime_model(), *stored(first), runtime_pod(first, name="omni-pod")]
    unasked = plan_with(*rolled_out)
    assert status(unasked, "omni")["reason"] == "WaitingForRuntimeHealth"
    assert not generated_entries(unasked)
    sick = plan_with(
        *rolled_out, health=(HealthObservation("ai", "omni-pod", healthy=False, error="503 Service Unavailable"),)
    )
    assert "503 Service Unavailable" in status(sick, "omni")["message"]
    healthy = (HealthObservation("ai", "omni-pod", healthy=True),)
    assert status(plan_with(*rolled_out, health=healthy), "omni")["reason"] == "WaitingForModelCatalog"
    assert status(plan_with(*rolled_out, catalog_publishing("omni"), health=healthy), "omni")["phase"] == "Ready"


@pytest.mark.parametrize(
    "edit", [{"url": "hf://Qwen/Qwen3-Omni-30B-A3B-Instruct"}, {"realtime": {"profile": "omni-cuda-two"}}]
)
def test_source_and_profile_are_fixed_once_the_runtime_exists_and_the_running_one_is_kept(edit):
    first = runtime_of(plan_with(*gpu_world(), realtime_model()), "omni")
    if "realtime" in edit:
        catalogs = _with_second_cuda_profile()
        result = plan_with(*gpu_world(), realtime_model(profile="omni-cuda-two"), *stored(first), catalogs=catalogs)
    else:
        result = plan_with(*gpu_world(), realtime_model(**edit), *stored(first))
    assert (status(result, "omni")["phase"], status(result, "omni")["reason"]) == ("Failed", "ImmutableField")
    kept = runtime_of(result, "omni")
    assert object_of(kept, "ConfigMap")["data"] == object_of(first, "ConfigMap")["data"]
    assert (
        object_of(kept, "Deployment")["spec"]["template"]["spec"]["containers"]
        == object_of(first, "Deployment")["spec"]["template"]["spec"]["containers"]
    )


def test_realtime_needs_the_gpu_provider_litellm_and_the_model_catalog_but_not_kubeai():
    assert status(plan_with(*gpu_world(), realtime_model()), "omni")["requiredModules"] == [
        "gpu",
        "litellm",
        "model-catalog",
    ]


def _with_second_cuda_profile():
    from tests.planning.models.direct_world import WITH_FREETOKEN_IMAGE

    realtime = WITH_FREETOKEN_IMAGE.runtimes.realtime
    second = realtime.get("omni-cuda").model_copy(update={"name": "omni-cuda-two"})
    runtimes = WITH_FREETOKEN_IMAGE.runtimes.model_copy(
        update={"realtime": realtime.model_copy(update={"profiles": (*realtime.profiles, second)})}
    )
    return WITH_FREETOKEN_IMAGE.model_copy(update={"runtimes": runtimes})
