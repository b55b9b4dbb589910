"""Model URLs as KubeAI reads them, and the Ollama model each names (planning/models/model_url.py)."""

from __future__ import annotations

import pytest

from planning.models.model_url import ModelUrlError, ollama_model, parse_model_url
from tests.planning.builders import status_of
from tests.planning.models.direct_world import plan_with
from tests.planning.models.world import platform


@pytest.mark.parametrize(
    ("url", "model"),
    [
        ("ollama://qwen2.5:0.5b", "qwen2.5:0.5b"),
        ("ollama://tiny", "tiny:latest"),
        ("ollama://registry.example.com:5000/team/tiny?pull=false", "registry.example.com:5000/team/tiny:latest"),
        ("ollama://tiny:q8?pull=false&insecure=true", "tiny:q8"),
        ("pvc://magicstick-model-cache-ollama?model=tiny", "tiny:latest"),
        ("pvc://cache/ollama/models?model=qwen2.5:0.5b", "qwen2.5:0.5b"),
    ],
)
def test_the_ollama_model_of_a_url_is_what_the_pod_serves_before_kubeais_copy(url, model):
    assert ollama_model(url) == model


def test_kubeai_splits_a_url_into_scheme_reference_and_query():
    parsed = parse_model_url("pvc://cache/ollama?model=tiny&pull=false")
    assert (parsed.scheme, parsed.reference, parsed.name, parsed.query) == (
        "pvc",
        "cache/ollama",
        "cache",
        {"model": "tiny", "pull": "false"},
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("pvc://magicstick-model-cache-ollama", "pvc://CLAIM[/FOLDER]?model=NAME"),
        ("pvc://cache?pull=false", "names no model"),
        ("hf://Qwen/Qwen2.5-0.5B", "not 'hf://Qwen/Qwen2.5-0.5B'"),
        ("ollama://", "not a model URL KubeAI reads"),
        ("tiny", "not a model URL KubeAI reads"),
    ],
)
def test_a_url_that_names_no_ollama_model_is_refused_saying_why(url, says):
    with pytest.raises(ModelUrlError) as raised:
        ollama_model(url)
    assert says in str(raised.value)


def _offline(url: str) -> dict:
    return {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "ModelActivation",
        "metadata": {"name": "offline", "namespace": "ai-system"},
        "spec": {
            "type": "local",
            "enabled": True,
            "targetNamespace": "ai",
            "local": {"url": url, "computeTarget": "cpu", "engine": "OLlama", "memoryRequiredMi": 1024},
        },
    }


def test_an_ollama_activation_whose_cache_url_names_no_model_is_refused_naming_the_field():
    result = plan_with(*platform(), _offline("pvc://magicstick-model-cache-ollama"))
    status = status_of(result, "ModelActivation", "offline")
    assert status["phase"] == "Failed"
    assert "spec.local.url" in status["message"]
    assert "pvc://CLAIM[/FOLDER]?model=NAME" in status["message"]
    outcome = next(o for o in result.models.outcomes if o.activation == "offline")
    assert outcome.model is None


def test_an_ollama_activation_with_a_pull_false_url_is_declared_with_its_url_unchanged():
    result = plan_with(*platform(), _offline("ollama://tiny?pull=false"))
    outcome = next(o for o in result.models.outcomes if o.activation == "offline")
    assert outcome.model is not None
    assert outcome.model.body["spec"]["url"] == "ollama://tiny?pull=false"
