"""The GPU sharing examples in examples/gpu-sharing/ are valid ModuleActivations and do what
their comments say on a node of that UID."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from api.crdgen import CRD_DIRECTORY, load_committed_crds
from api.validation import parse_spec
from planning.hardware.amd_sharing import SERVED_APIS
from tests.planning.builders import status_of
from tests.planning.hardware.sharing_world import amd_host, nvidia_host, plan_world
from tests.planning.models.world import platform
from tests.support.cel_rules import CelValidator
from tests.support.crd_schema import CrdSchemaRegistry

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "gpu-sharing"
WORLDS = {
    "nvidia-time-slicing.yaml": lambda: [*platform("gpu"), *nvidia_host()],
    "amd-dra-shared.yaml": lambda: [*platform("amd-gpu"), *amd_host()],
}
EXPECTED = {"nvidia-time-slicing.yaml": ("gpu", "Applying", 4), "amd-dra-shared.yaml": ("amd-gpu", "Applying", 2)}


def load(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / name).read_text())


def test_every_example_has_a_world_and_an_expectation():
    assert {p.name for p in EXAMPLES.glob("*.yaml")} == set(WORLDS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(WORLDS))
def test_the_example_parses_and_passes_the_crd_schema_and_its_cel_rules(name):
    obj = load(name)
    parse_spec(obj["kind"], obj["spec"])
    assert CrdSchemaRegistry(CRD_DIRECTORY).errors(obj) == []
    assert CelValidator(load_committed_crds()).violations(obj) == []


@pytest.mark.parametrize("name", sorted(WORLDS))
def test_on_the_node_it_names_the_example_starts_its_transition(name):
    obj = load(name)
    sharing = json.loads(obj["spec"]["parameters"]["gpuSharing"])
    sharing["nodeUID"] = "uid-gpu-1"
    obj["spec"]["parameters"]["gpuSharing"] = json.dumps(sharing)
    module, phase, slots = EXPECTED[name]
    result = plan_world([*WORLDS[name](), obj], served_apis=SERVED_APIS)
    reported = status_of(result, "Appliance", "local")["hardwareOperators"][module]["sharing"]
    assert (reported["observedPhase"], reported["slots"], reported["node"]) == (phase, slots, "gpu-1")
