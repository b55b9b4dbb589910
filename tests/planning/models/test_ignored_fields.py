"""Accepted fields without effect for a KubeAI runtime are named in its status, never dropped silently."""

from __future__ import annotations

import pytest

from api.validation import parse_spec
from planning.models.ignored import ignored_fields_note
from tests.planning.builders import status_of
from tests.planning.models.direct_world import plan_with
from tests.planning.models.world import gpu_node, local_model, platform


def local(**fields):
    spec = {"preset": "qwen2505bcpu", "computeTarget": "cpu", "engine": "VLLM", **fields}
    return parse_spec("ModelActivation", {"type": "local", "targetNamespace": "ai", "local": spec}).local


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"computeTarget": "nvidia-gpu", "kvCacheMemoryBytes": 1024}, "kvCacheMemoryBytes"),
        ({"engine": "OLlama", "artifact": "q4-k-m", "kvCacheMemoryBytes": 1024}, "kvCacheMemoryBytes"),
        ({"computeTarget": "nvidia-gpu", "cpuOffloadMi": 1024}, "cpuOffloadMi"),
        ({"computeTarget": "nvidia-gpu", "cpuOffloading": False, "cpuOffloadMi": 1024}, "cpuOffloadMi"),
        ({"engine": "OLlama", "artifact": "q4-k-m", "ollamaGpuLayers": 20}, "ollamaGpuLayers"),
    ],
)
def test_an_accepted_field_without_effect_is_named_as_not_applied(fields, named):
    note = ignored_fields_note(local(**fields))
    assert f"spec.local.{named}" in note and "not applied" in note


def test_fields_that_apply_are_not_named():
    assert ignored_fields_note(local(kvCacheMemoryBytes=1024, memoryRequiredMi=4096)) == ""


def test_the_note_reaches_the_status_message_of_the_activation():
    result = plan_with(
        *platform("gpu"),
        gpu_node("nvidia.com/gpu"),
        local_model("m", computeTarget="nvidia-gpu", kvCacheMemoryBytes=1024),
    )
    assert (
        "spec.local.kvCacheMemoryBytes applies to vLLM on CPU only; not applied."
        in status_of(result, "ModelActivation", "m")["message"]
    )
