"""The worked model examples in examples/models/ are valid and do what their comments say."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from api.crdgen import CRD_DIRECTORY, load_committed_crds
from api.validation import parse_spec
from tests.planning.builders import status_of
from tests.planning.hardware.nodes import node
from tests.planning.models.direct_world import plan_with, runtime_of
from tests.planning.models.world import gpu_node, platform
from tests.support.cel_rules import CelValidator
from tests.support.crd_schema import CrdSchemaRegistry

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "models"
FILES = sorted(path.name for path in EXAMPLES.glob("*.yaml"))

WORLDS = {
    "vllm-cpu.yaml": lambda: [*platform()],
    "ollama-offline.yaml": lambda: [*platform()],
    "ollama-nvidia.yaml": lambda: [*platform("gpu"), gpu_node("nvidia.com/gpu")],
    "vllm-cpu-offloading.yaml": lambda: [*platform("gpu"), gpu_node("nvidia.com/gpu")],
    "freetoken.yaml": lambda: [*platform("gpu"), gpu_node("nvidia.com/gpu", "2")],
    "realtime-cuda.yaml": lambda: [*platform("gpu"), gpu_node("nvidia.com/gpu")],
    "realtime-cpu.yaml": lambda: [*platform(), node("cpu-1")],
}
"""The cluster each example is written for: its modules Ready, the nodes it names."""

EXPECTED = {
    "vllm-cpu.yaml": ("WaitingForPod", "model"),
    "ollama-offline.yaml": ("WaitingForPod", "model"),
    "ollama-nvidia.yaml": ("WaitingForPod", "model"),
    "vllm-cpu-offloading.yaml": ("WaitingForOffloadingProfile", None),
    "freetoken.yaml": ("WaitingForRollout", "runtime"),
    "realtime-cuda.yaml": ("WaitingForRollout", "runtime"),
    "realtime-cpu.yaml": ("WaitingForRollout", "runtime"),
}
"""What a first run in that cluster declares and says."""


def load(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / name).read_text())


def test_every_example_has_a_world_and_an_expectation():
    assert set(FILES) == set(WORLDS) == set(EXPECTED)


@pytest.mark.parametrize("name", FILES)
def test_the_example_parses_and_passes_the_crd_schema_and_its_cel_rules(name):
    obj = load(name)
    parse_spec(obj["kind"], obj["spec"])
    assert CrdSchemaRegistry(CRD_DIRECTORY).errors(obj) == []
    assert CelValidator(load_committed_crds()).violations(obj) == []


@pytest.mark.parametrize("name", FILES)
def test_a_first_run_of_the_example_declares_its_runtime(name):
    obj = load(name)
    activation = obj["metadata"]["name"]
    result = plan_with(*WORLDS[name](), obj)
    reason, declared = EXPECTED[name]
    assert status_of(result, "ModelActivation", activation)["reason"] == reason
    outcome = next(o for o in result.models.outcomes if o.activation == activation)
    assert (outcome.model is not None) == (declared == "model")
    assert (runtime_of(result, activation) is not None) == (declared == "runtime")


def test_the_offline_ollama_example_loads_its_model_from_the_cache_claim_and_aliases_it():
    obj = load("ollama-offline.yaml")
    result = plan_with(*WORLDS["ollama-offline.yaml"](), obj)
    outcome = next(o for o in result.models.outcomes if o.activation == "tiny-offline")
    assert outcome.model is not None
    spec = outcome.model.body["spec"]
    assert (spec["engine"], spec["url"]) == ("OLlama", "pvc://magicstick-model-cache-ollama?model=tiny")
