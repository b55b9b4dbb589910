"""The model catalog the program publishes: which models LiteLLM routes, and what it reports."""

from __future__ import annotations

import json

import pytest
import yaml

from planning.frozen import thaw
from planning.models.catalog import ModelCatalog
from planning.models.catalog_format import (
    LITELLM_VALUES_KEY,
    MODEL_CATALOG_CONFIG_MAP,
    MODEL_CATALOG_KEY,
    Route,
    SecretKey,
    catalog_data,
)
from planning.plan import Plan
from tests.planning.builders import NS, appliance, plan_of, runtime, status_of
from tests.planning.hardware.nodes import node
from tests.planning.models.direct_world import freetoken_model, plan_with, runtime_of, runtime_pod, stored
from tests.planning.models.world import local_model, observed_model, platform, pod


def catalog(result: Plan) -> ModelCatalog:
    assert result.model_catalog is not None
    return result.model_catalog


def ids(result: Plan) -> list[str]:
    return [r.id for r in catalog(result).routes]


def data(result: Plan) -> dict[str, str]:
    config_map = catalog(result).config_map
    assert config_map is not None
    return thaw(config_map.body)["data"]


def model_list(result: Plan) -> list[dict]:
    return json.loads(data(result)[LITELLM_VALUES_KEY])["proxy_config"]["model_list"]


def published(result: Plan) -> dict:
    """The catalog `result` declares, as the next run observes it."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": MODEL_CATALOG_CONFIG_MAP, "namespace": NS},
        "data": data(result),
    }


def external(name: str, *, namespace: str = "ai", key: bool = True) -> dict:
    spec = {"model": f"openai/{name}", "apiBase": "https://api.example.com/v1", "modelType": "chat"}
    if key:
        spec["apiKeySecretRef"] = {"name": f"{name}-key", "key": "api-key"}
    return runtime("ModelActivation", name, {"type": "external", "targetNamespace": namespace, "external": spec})


def appliance_reason(result: Plan) -> str:
    (ready,) = [c for c in status_of(result, "Appliance", "local")["conditions"] if c["type"] == "Ready"]
    return ready["reason"]


def git_models(**keys: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ai-external-models", "namespace": NS},
        "data": keys,
    }


GIT_ENTRY = """
- id: example-chat
  model: openai/example-chat
  apiBase: https://api.example.com/v1
  apiKeySecretRef: {name: example-api-key, key: api-key}
"""

# KubeAI models -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "routed"),
    [
        ((observed_model("m", ready=1, all_=1), pod("m-0", "m")), ["m"]),
        ((observed_model("m", ready=0, all_=1), pod("m-0", "m", ready=False)), []),
        ((observed_model("m", ready=0, all_=0),), []),
        ((), []),
    ],
    ids=["a ready replica", "no ready replica", "no pod", "no model yet"],
)
def test_a_kubeai_model_is_published_exactly_while_its_runtime_is_ready(cluster, routed):
    assert ids(plan_of(*platform(), local_model("m"), *cluster)) == routed


def test_a_published_model_whose_replica_stops_being_ready_is_withdrawn_in_the_same_run():
    first = plan_of(*platform(), local_model("m"), observed_model("m", ready=1, all_=1), pod("m-0", "m"))
    result = plan_of(
        *platform(),
        local_model("m"),
        observed_model("m", ready=0, all_=1),
        pod("m-0", "m", ready=False),
        published(first),
    )
    assert ids(result) == []
    assert json.loads(data(result)[MODEL_CATALOG_KEY]) == []
    assert status_of(result, "ModelActivation", "m")["phase"] == "Starting"


def test_an_ollama_model_without_its_alias_on_every_ready_pod_is_not_published():
    result = plan_of(
        *platform(),
        local_model("m", engine="OLlama"),
        observed_model("m", ready=1, all_=1, engine="OLlama"),
        pod("m-0", "m"),
    )
    assert status_of(result, "ModelActivation", "m")["reason"] == "WaitingForOllamaAlias"
    assert ids(result) == []


def test_a_kubeai_model_is_routed_keyless_to_kubeais_openai_endpoint_in_its_namespace():
    result = plan_of(*platform(), local_model("m"), observed_model("m", ready=1, all_=1), pod("m-0", "m"))
    assert model_list(result) == [
        {
            "model_name": "m",
            "litellm_params": {
                "model": "openai/m",
                "api_base": "http://kubeai.ai.svc.cluster.local/openai/v1",
                "api_key": "none",
            },
            "model_info": {"id": "m", "mode": "chat"},
        }
    ]


def test_an_embedding_model_is_routed_in_litellms_embedding_mode():
    spec = {
        "url": "hf://example/embed",
        "engine": "VLLM",
        "features": ["TextEmbedding"],
        "scaleDownDelaySeconds": 30,
        "targetRequests": 100,
    }
    result = plan_of(*platform(), local_model("m"), observed_model("m", ready=1, all_=1, spec=spec), pod("m-0", "m"))
    assert model_list(result)[0]["model_info"]["mode"] == "embedding"


def test_publishing_then_observing_the_catalog_makes_the_model_ready_and_changes_nothing_more():
    cluster = (*platform(), local_model("m"), observed_model("m", ready=1, all_=1), pod("m-0", "m"))
    first = plan_of(*cluster)
    assert status_of(first, "ModelActivation", "m")["reason"] == "WaitingForModelCatalog"
    second = plan_of(*cluster, published(first))
    assert status_of(second, "ModelActivation", "m")["phase"] == "Ready"
    assert data(second) == data(first)
    assert data(plan_of(*cluster, published(second))) == data(second)


@pytest.mark.parametrize(
    ("replicas", "routed"),
    [(1, ["m"]), (0, [])],
    ids=["its model still ready: kept", "its model no longer ready: withdrawn"],
)
def test_an_invalid_edit_keeps_the_route_of_a_model_that_still_serves(replicas, routed):
    running = (observed_model("m", ready=1, all_=1), pod("m-0", "m"))
    before = plan_of(*platform(), local_model("m"), *running)
    before = plan_of(*platform(), local_model("m"), *running, published(before))
    now = (observed_model("m", ready=replicas, all_=1), pod("m-0", "m", ready=bool(replicas)))
    result = plan_of(*platform(), local_model("m", preset="no-such-preset"), *now, published(before))
    assert status_of(result, "ModelActivation", "m")["phase"] == "Failed"
    assert ids(result) == routed


# Direct runtimes and external activations ------------------------------------------------------


def test_a_direct_runtime_is_published_while_it_serves_and_withdrawn_when_it_stops():
    world = (node("gpu-1", "nvidia", allocatable={"nvidia.com/gpu": "1"}), *platform("gpu"))
    planned = runtime_of(plan_with(*world, freetoken_model()), "ft")
    serving = plan_with(*world, freetoken_model(), *stored(planned), runtime_pod(planned))
    assert ids(serving) == ["ft"]
    assert model_list(serving)[0]["litellm_params"]["api_key"] == "none"
    stopped = plan_with(
        *world, freetoken_model(), *stored(planned, available=0), runtime_pod(planned, ready=False), published(serving)
    )
    assert ids(stopped) == []


def test_an_external_model_reaches_litellm_with_its_key_as_an_environment_reference_only():
    result = plan_of(*platform(), external("gpt"))
    (entry,) = model_list(result)
    env = json.loads(data(result)[LITELLM_VALUES_KEY])["extraEnvVars"]
    (variable,) = env
    assert entry["litellm_params"]["api_key"] == f"os.environ/{variable['name']}"
    assert variable["valueFrom"] == {"secretKeyRef": {"name": "gpt-key", "key": "api-key", "optional": True}}
    assert entry["litellm_params"]["api_base"] == "https://api.example.com/v1"


def test_an_external_model_whose_key_secret_is_outside_litellms_namespace_is_left_out_and_reported():
    result = plan_of(*platform(), external("far", namespace="elsewhere"), external("near"))
    assert ids(result) == ["near"]
    (problem,) = catalog(result).problems
    assert "ModelActivation ai-system/far" in problem.describe() and "apiKeySecretRef" in problem.describe()
    assert appliance_reason(result) == "CatalogInvalid"


# The Git-owned ai-external-models ----------------------------------------------------------------


def test_git_owned_external_models_are_published_beside_the_activations():
    result = plan_of(*platform(), external("gpt"), git_models(**{"models.yaml": GIT_ENTRY}))
    assert ids(result) == ["example-chat", "gpt"]
    assert catalog(result).problems == ()
    assert appliance_reason(result) != "CatalogInvalid"


@pytest.mark.parametrize(
    ("text", "entry", "field"),
    [
        ("- id: bad\n  apiBase: https://api.example.com/v1\n", "bad", "model"),
        ("- id: bad\n  model: openai/x\n  apiKey: CHANGEME\n", "bad", "(entry)"),
        (
            "- id: bad\n  model: openai/x\n  apiBase: http://api.example.com/v1\n  apiKeySecretRef: {name: k, key: k}\n",
            "bad",
            "(entry)",
        ),
        ("- id: Not_A_Label\n  model: openai/x\n", "Not_A_Label", "id"),
        ("- id: bad\n  model: openai/x\n  modelType: poetry\n", "bad", "modelType"),
        ("- model: openai/x\n", "#0", "id"),
        ("id: bad\n", "(document)", "(document)"),
        ("- id: [unclosed\n", "(document)", "(yaml)"),
    ],
    ids=[
        "no model",
        "a plain key",
        "a key over http",
        "an id that is no DNS label",
        "an unknown type",
        "no id",
        "not a list",
        "not yaml",
    ],
)
def test_an_invalid_git_owned_entry_is_skipped_and_reported_naming_its_key_entry_and_field(text, entry, field):
    result = plan_of(*platform(), local_model("m"), git_models(**{"a-good.yaml": GIT_ENTRY, "b-bad.yaml": text}))
    assert ids(result) == ["example-chat"]
    (problem,) = catalog(result).problems
    assert (problem.config_map.key, problem.entry, problem.field) == ("b-bad.yaml", entry, field)
    appliance_status = status_of(result, "Appliance", "local")
    (ready,) = [c for c in appliance_status["conditions"] if c["type"] == "Ready"]
    assert appliance_status["phase"] == "Degraded" and ready["reason"] == "CatalogInvalid"
    assert "ConfigMap ai-system/ai-external-models key b-bad.yaml" in ready["message"]
    assert "CHANGEME" not in ready["message"]


def test_a_git_owned_entry_never_replaces_a_model_an_activation_publishes():
    clash = "- id: gpt\n  model: openai/other\n"
    result = plan_of(*platform(), external("gpt"), git_models(**{"models.yaml": clash}))
    assert model_list(result)[0]["litellm_params"]["model"] == "openai/gpt"
    (problem,) = catalog(result).problems
    assert (problem.config_map.key, problem.entry, problem.field) == ("models.yaml", "gpt", "id")


def test_the_second_of_two_git_owned_entries_with_one_id_is_reported():
    result = plan_of(*platform(), local_model("m"), git_models(**{"a.yaml": GIT_ENTRY, "b.yaml": GIT_ENTRY}))
    assert ids(result) == ["example-chat"]
    (problem,) = catalog(result).problems
    assert problem.config_map.key == "b.yaml"


# The ConfigMap --------------------------------------------------------------------------------


def test_the_catalog_is_declared_and_its_sources_reported_only_while_the_model_catalog_module_is_requested():
    requested = plan_of(*platform(), local_model("m"))
    assert catalog(requested).config_map is not None
    assert json.loads(data(requested)[MODEL_CATALOG_KEY]) == []
    off = plan_of(appliance({"basis": True, "litellm": True}), git_models(**{"models.yaml": "not: [a list"}))
    assert catalog(off) == ModelCatalog(routes=(), problems=(), config_map=None)
    assert appliance_reason(off) != "CatalogInvalid"


def test_the_catalog_is_labelled_so_flux_reconciles_litellm_when_it_changes():
    labels = thaw(catalog(plan_of(*platform(), local_model("m"))).config_map.body)["metadata"]["labels"]
    assert labels["reconcile.fluxcd.io/watch"] == "Enabled"


def test_the_same_world_gives_the_same_catalog_bytes():
    world = (
        *platform(),
        external("b"),
        external("a"),
        local_model("m"),
        observed_model("m", ready=1, all_=1),
        pod("m-0", "m"),
        git_models(**{"models.yaml": GIT_ENTRY}),
    )
    assert data(plan_of(*world)) == data(plan_of(*reversed(world)))


ROUTES = (
    Route(
        id="chat",
        model="openai/chat",
        api_base="https://api.example.com/v1",
        api_key=SecretKey("chat-key", "api-key", "ai"),
    ),
    Route(
        id="local",
        model="openai/local",
        model_type="embedding",
        api_base="http://kubeai.ai.svc.cluster.local/openai/v1",
    ),
    Route(
        id="same-key",
        model="openai/other",
        api_base="https://api.example.com/v1",
        api_key=SecretKey("chat-key", "api-key", "ai"),
    ),
)


def test_the_catalog_format_round_trips_and_its_two_keys_list_the_same_models():
    from planning.models.catalog_format import listed_ids, listed_routes

    written = catalog_data(reversed(ROUTES))
    assert listed_ids(written) == {r.id for r in ROUTES}
    assert listed_routes(written) == {r.id: r for r in ROUTES}
    values = yaml.safe_load(written[LITELLM_VALUES_KEY])
    assert [e["model_name"] for e in values["proxy_config"]["model_list"]] == json.loads(written[MODEL_CATALOG_KEY])
    assert len(values["extraEnvVars"]) == 1


def test_the_shipped_ai_external_models_example_is_published_whole():
    from pathlib import Path

    example = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "examples" / "external-models" / "ai-external-models.yaml").read_text()
    )
    result = plan_of(*platform(), local_model("m"), example)
    assert catalog(result).problems == ()
    assert ids(result) == ["example-chat", "example-embedding", "example-lan-model"]
    modes = {e["model_name"]: e["model_info"]["mode"] for e in model_list(result)}
    assert modes["example-embedding"] == "embedding"
