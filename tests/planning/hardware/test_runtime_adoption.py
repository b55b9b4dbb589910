"""runtimeReady: KubeAI's effective image configuration and the Pods it rolled out, against the
validated runtime images; never a test's state."""

from __future__ import annotations

import json

import pytest
import yaml

from planning.hardware.runtime_adoption import AdoptionReason, runtime_adoption
from planning.hardware.validation import runtime_images_values
from planning.snapshot import Snapshot
from tests.planning.builders import activation, as_stored, flux_status, ready_modules, status_of
from tests.planning.hardware.test_validation import halo, history_map

VALIDATED = "registry.example.com/magicstick/ollama-rocm-validation@sha256:" + "4f" * 32
RELEASE_VLLM = "registry.example.com/vllm/vllm-rocm:CHANGEME"
RELEASE_OLLAMA = "registry.example.com/ollama/ollama:CHANGEME-rocm"


def kubeai_release(*, ready: str = "True", generation: int = 2, observed: int = 2) -> dict:
    obj = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "kubeai", "namespace": "flux-system"},
        "spec": {"releaseName": "kubeai", "targetNamespace": "ai"},
    }
    stored = as_stored(obj, generation=generation)
    stored["status"] = flux_status(
        ready, reason="UpgradeSucceeded", message="Helm upgrade succeeded", observed_generation=observed
    )
    return stored


def kubeai_config(*, ollama: str = VALIDATED, vllm: str | None = RELEASE_VLLM) -> dict:
    servers = {"OLlama": {"images": {"default": "ollama/ollama:latest", "amd-gpu": ollama}}, "VLLM": {"images": {}}}
    if vllm is not None:
        servers["VLLM"]["images"] = {"default": "vllm/vllm-openai:v0.8.3", "amd-gpu": vllm}
    system = {
        "resourceProfiles": {"magicstick-amd-gpu": {"imageName": "amd-gpu"}, "cpu": {"imageName": "cpu"}},
        "modelServers": servers,
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kubeai-config", "namespace": "ai"},
        "data": {"system.yaml": yaml.safe_dump(system)},
    }


def runtime_images(ollama: str = VALIDATED) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "magicstick-gpu-runtime-images", "namespace": "flux-system"},
        "data": {"values.json": json.dumps(runtime_images_values({"OLlama": ollama}))},
    }


def amd_model(name: str = "qwen-rocm", *, profile: str = "magicstick-amd-gpu:1") -> dict:
    return {
        "apiVersion": "kubeai.org/v1",
        "kind": "Model",
        "metadata": {"name": name, "namespace": "ai", "uid": f"uid-{name}"},
        "spec": {"engine": "OLlama", "resourceProfile": profile, "url": "ollama://qwen2.5:0.5b"},
    }


def model_pod(model: str = "qwen-rocm", *, image: str = VALIDATED, phase: str = "Running") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"model-{model}-0",
            "namespace": "ai",
            "labels": {"model": model},
            "ownerReferences": [
                {
                    "apiVersion": "kubeai.org/v1",
                    "kind": "Model",
                    "name": model,
                    "uid": f"uid-{model}",
                    "controller": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "server", "image": image}]},
        "status": {"phase": phase},
    }


def adopted_world() -> list[dict]:
    return [activation("kubeai"), *ready_modules("kubeai"), kubeai_release(), kubeai_config(), runtime_images()]


def compatibility(*objects: dict) -> dict:
    return status_of(halo(history_map(), *objects, request=""), "Appliance", "local")["hardwareOperators"]["amd-gpu"][
        "compatibility"
    ]


def test_kubeai_running_the_validated_image_everywhere_is_runtime_ready() -> None:
    status = compatibility(*adopted_world(), amd_model(), model_pod())
    assert status["runtimeReady"] is True
    assert status["runtimeReason"] == AdoptionReason.ADOPTED
    assert status["effectiveImages"] == {"OLlama": VALIDATED, "VLLM": RELEASE_VLLM}


@pytest.mark.parametrize(
    ("replace", "reason", "named"),
    [
        (
            {"ConfigMap/kubeai-config": kubeai_config(ollama="registry.example.com/ollama/ollama:0.9-rocm")},
            AdoptionReason.IMAGE_NOT_CONFIGURED,
            VALIDATED,
        ),
        ({"ConfigMap/kubeai-config": kubeai_config(vllm=None)}, AdoptionReason.IMAGE_NOT_CONFIGURED, "VLLM"),
        ({"ConfigMap/kubeai-config": None}, AdoptionReason.CONFIGURATION_MISSING, "ai/kubeai-config"),
        ({"HelmRelease/kubeai": None}, AdoptionReason.RELEASE_NOT_READY, "flux-system/kubeai"),
        ({"HelmRelease/kubeai": kubeai_release(observed=1)}, AdoptionReason.RELEASE_NOT_READY, "generation 2"),
        ({"HelmRelease/kubeai": kubeai_release(ready="False")}, AdoptionReason.RELEASE_NOT_READY, "flux-system/kubeai"),
    ],
    ids=[
        "other-image-configured",
        "engine-without-amd-image",
        "no-configuration",
        "no-release",
        "release-of-older-generation",
        "release-not-ready",
    ],
)
def test_a_ready_kubeai_module_is_not_enough_for_runtime_ready(
    replace: dict, reason: AdoptionReason, named: str
) -> None:
    world = {f"{o['kind']}/{o['metadata']['name']}": o for o in adopted_world()}
    world.update(replace)
    status = compatibility(*(o for o in world.values() if o is not None))
    assert status["runtimeReady"] is False
    assert status["runtimeReason"] == reason
    assert named in status["runtimeMessage"]


def test_a_model_pod_still_on_the_previous_image_keeps_runtime_not_ready_until_it_rolls() -> None:
    old = "registry.example.com/ollama/ollama:0.9-rocm"
    status = compatibility(*adopted_world(), amd_model(), model_pod(image=old))
    assert (status["runtimeReady"], status["runtimeReason"]) == (False, AdoptionReason.POD_ON_OTHER_IMAGE)
    assert "ai/model-qwen-rocm-0" in status["runtimeMessage"] and old in status["runtimeMessage"]
    ended = compatibility(*adopted_world(), amd_model(), model_pod(image=old, phase="Failed"))
    assert ended["runtimeReady"] is True


def test_pods_of_models_on_other_profiles_do_not_count() -> None:
    cpu = amd_model("qwen-cpu", profile="cpu:1")
    status = compatibility(*adopted_world(), cpu, model_pod("qwen-cpu", image="substratusai/vllm:cpu"))
    assert status["runtimeReady"] is True


def test_before_any_validation_a_release_image_counts() -> None:
    world = [activation("kubeai"), *ready_modules("kubeai"), kubeai_release(), kubeai_config(ollama=RELEASE_OLLAMA)]
    assert compatibility(*world)["runtimeReady"] is True


def test_a_malformed_kubeai_configuration_is_named_not_raised() -> None:
    broken = kubeai_config()
    broken["data"]["system.yaml"] = "modelServers: [unclosed"
    snapshot = Snapshot.from_objects([*adopted_world()[:-2], broken])
    found = runtime_adoption(snapshot, kubeai_phase="Ready", validated={}, engines=("OLlama",))
    assert (found.ready, found.reason) == (False, AdoptionReason.CONFIGURATION_MALFORMED)
