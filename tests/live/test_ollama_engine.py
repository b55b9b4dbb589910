"""The real Ollama (its CPU engine, from the toolchain) serving the tiny model the tests write.

First the engine alone answers every API the appliance relies on; then the program's own Ollama
code (providers/ollama.py: the alias, the memory sample) talks to it through the real API
server's pod proxy, as it talks to a model Pod. The Pod object is written as the kubelet would
(Running, Ready, its podIP the address the engine listens on); tests/live/test_ollama.py keeps the
double for what a real engine cannot show on demand (a Pod still downloading, a hung engine).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from providers.kube import KubeClient
from providers.ollama import ensure_alias, list_tags, memory_sample, observe_alias
from tests.live.test_ollama import ready_pod
from tests.support.ollama_server import OllamaServer, serving_tiny_model

SOURCE = "tiny:latest"
ALIAS = "tinycpu"
PROMPT = "hello"


@pytest.fixture(scope="module")
def ollama_engine(tmp_path_factory: pytest.TempPathFactory, host_address: str) -> Iterator[OllamaServer]:
    """One `ollama serve` for the module, on an address the pod proxy dials, with the tiny model."""
    with serving_tiny_model(tmp_path_factory.mktemp("ollama"), name="tiny", host=host_address) as server:
        yield server


def _tags(client: httpx.Client) -> set[str]:
    response = client.get("/api/tags")
    response.raise_for_status()
    return {model["name"] for model in response.json()["models"]}


def test_the_created_model_is_listed_and_generates_text(ollama_engine: OllamaServer):
    with ollama_engine.client() as client:
        assert SOURCE in _tags(client)
        response = client.post(
            "/api/generate",
            json={"model": SOURCE, "prompt": PROMPT, "stream": False, "options": {"num_predict": 8, "seed": 1}},
        )
    response.raise_for_status()
    body = response.json()
    assert body["done"] is True
    assert body["eval_count"] > 0
    assert isinstance(body["response"], str)


def test_a_loaded_model_is_listed_by_ps_with_its_size(ollama_engine: OllamaServer):
    with ollama_engine.client() as client:
        client.post("/api/generate", json={"model": SOURCE, "prompt": PROMPT, "stream": False}).raise_for_status()
        response = client.get("/api/ps")
    response.raise_for_status()
    loaded = {model["name"]: model for model in response.json()["models"]}
    assert SOURCE in loaded
    assert loaded[SOURCE]["size"] > 0
    assert loaded[SOURCE]["size_vram"] == 0


def test_a_copy_lists_the_new_name_and_answers_under_it(ollama_engine: OllamaServer):
    with ollama_engine.client() as client:
        client.post("/api/copy", json={"source": SOURCE, "destination": "tinycopy"}).raise_for_status()
        assert "tinycopy:latest" in _tags(client)
        response = client.post(
            "/v1/chat/completions",
            json={"model": "tinycopy", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 8},
        )
    response.raise_for_status()
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "tinycopy"
    assert body["choices"][0]["message"]["role"] == "assistant"


def test_a_model_unknown_to_the_engine_is_refused_with_ollamas_not_found(ollama_engine: OllamaServer):
    with ollama_engine.client() as client:
        response = client.post("/api/generate", json={"model": "absent", "prompt": PROMPT, "stream": False})
    assert response.status_code == 404
    assert "not found" in response.json()["error"]


# --- the program's Ollama code, through the API server's pod proxy ------------------------------


@pytest.fixture
def engine_pod(namespace: str, admin: KubeClient, ollama_engine: OllamaServer) -> str:
    return ready_pod(admin, namespace, "model-tiny-0", ip=ollama_engine.host, port=ollama_engine.port)


def test_the_program_reads_the_engines_tags_through_the_pod_proxy(
    namespace: str, admin: KubeClient, ollama_engine: OllamaServer, engine_pod: str
):
    with ollama_engine.client() as client:
        expected = _tags(client)
    assert list_tags(admin, namespace, engine_pod, port=ollama_engine.port) == frozenset(expected)


def test_the_program_gives_the_engine_the_alias_once_and_the_alias_answers(
    namespace: str, admin: KubeClient, ollama_engine: OllamaServer, engine_pod: str
):
    alias = f"{ALIAS}-{namespace}"
    before = observe_alias(admin, namespace, [engine_pod], SOURCE, alias, port=ollama_engine.port)
    first = ensure_alias(admin, namespace, [engine_pod], SOURCE, alias, port=ollama_engine.port)
    second = ensure_alias(admin, namespace, [engine_pod], SOURCE, alias, port=ollama_engine.port)

    assert (before.aliased, before.copied) == ((), ())
    assert (first.aliased, first.copied, first.failed) == ((engine_pod,), (engine_pod,), ())
    assert (second.aliased, second.copied) == ((engine_pod,), ())
    with ollama_engine.client() as client:
        assert f"{alias}:latest" in _tags(client)
        answer = client.post("/api/generate", json={"model": alias, "prompt": PROMPT, "stream": False})
    answer.raise_for_status()
    assert answer.json()["done"] is True


def test_the_programs_memory_sample_is_what_the_engine_reports_loaded(
    namespace: str, admin: KubeClient, ollama_engine: OllamaServer, engine_pod: str
):
    with ollama_engine.client() as client:
        client.post("/api/generate", json={"model": SOURCE, "prompt": PROMPT, "stream": False}).raise_for_status()
        loaded = client.get("/api/ps").json()["models"]

    sample = memory_sample(admin, namespace, engine_pod, port=ollama_engine.port)

    assert sample is not None
    assert sample.size_bytes == sum(model["size"] for model in loaded)
    assert sample.vram_bytes == 0
    assert sample.total_mi == sample.ram_mi > 0
