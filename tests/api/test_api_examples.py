"""The documented example objects are valid for both the types and the generated CRDs."""

from __future__ import annotations

import jsonschema
import pytest
from api_examples import EXAMPLES, example

from api.crdgen import build_crds
from api.validation import parse_spec


def object_id(obj: dict) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def schema_of(kind: str) -> dict:
    crd = next(crd for crd in build_crds() if crd["spec"]["names"]["kind"] == kind)
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize("obj", EXAMPLES, ids=object_id)
def test_documented_example_parses_and_round_trips(obj: dict) -> None:
    spec = parse_spec(obj["kind"], obj["spec"])
    assert parse_spec(obj["kind"], spec.to_wire()) == spec


@pytest.mark.parametrize("obj", EXAMPLES, ids=object_id)
def test_documented_example_validates_against_its_crd_schema(obj: dict) -> None:
    jsonschema.Draft4Validator(schema_of(obj["kind"])).validate(obj)


def test_the_cpu_example_reserves_its_ram_and_kv_cache() -> None:
    local = parse_spec("ModelActivation", example("ModelActivation", "qwen2505bcpu")["spec"]).local
    assert (local.compute_target, local.engine, local.memory_required_mi, local.kv_cache_memory_bytes) == (
        "cpu",
        "VLLM",
        4096,
        536870912,
    )


def test_the_ollama_example_uses_the_exact_engine_spelling_and_q8_0_cache() -> None:
    local = parse_spec("ModelActivation", example("ModelActivation", "qwen2505bollama")["spec"]).local
    assert (local.engine, local.requested_kv_cache_type()) == ("OLlama", "q8_0")


def test_the_external_example_references_its_key_in_a_secret() -> None:
    external = parse_spec("ModelActivation", example("ModelActivation", "example-gpt-4o-mini")["spec"]).external
    assert external.api_key_secret_ref is not None
    assert (external.api_key_secret_ref.name, external.api_key_secret_ref.key) == (
        "external-example-api-key",
        "api-key",
    )


def test_the_appliance_example_seeds_four_module_defaults_from_flux_system() -> None:
    spec = parse_spec("Appliance", example("Appliance", "local")["spec"])
    assert sorted(spec.modules) == ["basis", "dashboard", "litellm", "model-catalog"]
    assert spec.source is not None and spec.source.name == "flux-system"


def test_the_paperclip_example_keeps_its_agent_execution_values() -> None:
    spec = parse_spec("AppInstance", example("AppInstance", "paperclip-default")["spec"])
    assert spec.values["agentExecution"]["maxConcurrentAgents"] == 2
    assert spec.access.authentication == "sso"
