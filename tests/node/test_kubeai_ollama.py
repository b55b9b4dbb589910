"""A model served for real on the real node: the program's KubeAI Model, KubeAI's own controller
running as a Pod, and the Pod KubeAI starts running the real Ollama with the tiny model from the
node's model cache.

The Model is the program's own render of examples/models/ollama-offline.yaml (an Ollama model
named by `pvc://magicstick-model-cache-ollama?model=tiny`), with the CPU profile the program
wrote into KubeAI's configuration (tests/peers/kubeai_chart.py). A chat completion goes where the
model catalog points applications, KubeAI's OpenAI-compatible endpoint, and the tiny model
answers it. The program's own Ollama code then reads the engine through the API server's pod
proxy, as every run does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from planning.models.kubeai import model_name
from planning.models.model_cache import OLLAMA_CLAIM
from planning.readiness import Readiness, kubeai_model_readiness
from planning.snapshot import Snapshot
from providers.kinds import DEPLOYMENT, KUBEAI_MODEL, POD
from providers.ollama import ensure_alias, memory_sample
from tests.cluster.apiserver import ClusterInfo, install_crds
from tests.images import LocalImage
from tests.live.world import ensure_namespace
from tests.node.kubeai_release import (
    chart_objects,
    declare_model_cache,
    install,
    remove_model_cache,
    seed_model_cache,
)
from tests.node.node import RealNode
from tests.node.rollout import deployment_ready, pod_states, wait_for
from tests.peers import helm
from tests.peers.kubeai_chart import RELEASE, RELEASE_NAMESPACE, ReleaseRender, render_release
from tests.support.vendored import VENDORED_CRDS
from tests.support.watching import watch_collection_until, watch_until_gone

JsonObject = dict[str, Any]
EXAMPLE: Final = "ollama-offline"
EXAMPLE_ACTIVATION: Final = "tiny-offline"
"""The ModelActivation of examples/models/ollama-offline.yaml."""
CACHED_MODEL: Final = "tiny"
KUBEAI_PORT: Final = 8000
MODEL_PORT: Final = 8000
READY_SECONDS: Final = 240
ANSWER_SECONDS: Final = 240.0
ENGINE: Final = "magicstick"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> ReleaseRender:
    return render_release(tmp_path_factory.mktemp("kubeai-release"), template=helm.template)


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The appliance's Ollama cache folder with the tiny model, made by the real Ollama."""
    return seed_model_cache(tmp_path_factory.mktemp("model-cache"), CACHED_MODEL)


@pytest.fixture(scope="module")
def kubeai_on_node(
    real_node: RealNode,
    node_cluster: ClusterInfo,
    release: ReleaseRender,
    model_cache: Path,
    kubeai_image: LocalImage,
    ollama_image: LocalImage,
) -> Iterator[JsonObject]:
    """KubeAI installed in `ai` and rolled out; the model cache's volume and claim; its Deployment."""
    admin = real_node.admin
    install_crds(node_cluster, [VENDORED_CRDS / "kubeai" / "kubeai.org_models.yaml"])
    ensure_namespace(admin, RELEASE_NAMESPACE)
    declared = declare_model_cache(admin, node=real_node.name)
    objects = chart_objects(release, kubeai=kubeai_image, ollama=ollama_image)
    install(admin, objects)
    deployment = wait_for(real_node, DEPLOYMENT, RELEASE_NAMESPACE, RELEASE, deployment_ready, READY_SECONDS)
    try:
        yield deployment
    finally:
        for model in admin.list(KUBEAI_MODEL, namespace=RELEASE_NAMESPACE):
            admin.delete(KUBEAI_MODEL, model["metadata"]["name"], RELEASE_NAMESPACE)
        admin.delete(DEPLOYMENT, RELEASE, RELEASE_NAMESPACE)
        remove_model_cache(admin, declared, seconds=READY_SECONDS)


def _program_model(release: ReleaseRender) -> JsonObject:
    (model,) = [m for m in release.models()[EXAMPLE] if m["metadata"]["name"] == model_name(EXAMPLE_ACTIVATION)]
    return {key: model[key] for key in ("apiVersion", "kind", "metadata", "spec")}


def _kubeai_address(node: RealNode) -> str:
    (pod,) = [
        p
        for p in node.admin.list(POD, namespace=RELEASE_NAMESPACE)
        if p["metadata"].get("labels", {}).get("app.kubernetes.io/name") == RELEASE
    ]
    return f"http://{pod['status']['podIP']}:{KUBEAI_PORT}"


def _ready_model(node: RealNode, name: str) -> JsonObject:
    return wait_for(
        node,
        KUBEAI_MODEL,
        RELEASE_NAMESPACE,
        name,
        lambda m: (m.get("status") or {}).get("replicas", {}).get("ready", 0) >= 1,
        READY_SECONDS,
    )


def _chat(node: RealNode, model: str) -> tuple[JsonObject, float]:
    """A chat completion sent to KubeAI's endpoint; its answer and the seconds it took."""
    started = time.monotonic()
    with httpx.Client(base_url=_kubeai_address(node), timeout=ANSWER_SECONDS) as client:
        response = client.post(
            "/openai/v1/chat/completions",
            json={"model": model, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8},
        )
    assert response.status_code == 200, f"{response.status_code} {response.text}\n{pod_states(node, RELEASE_NAMESPACE)}"
    return response.json(), time.monotonic() - started


def _model_pods(node: RealNode, name: str) -> list[JsonObject]:
    return [
        p
        for p in node.admin.list(POD, namespace=RELEASE_NAMESPACE)
        if p["metadata"].get("labels", {}).get("model") == name
    ]


def wait_for_new_ready_pod(node: RealNode, model: str, *, replaced: str) -> str:
    """The name of the model's Ready Pod that is not `replaced`, once KubeAI has made it."""

    def new_ready(pods: list[JsonObject]) -> str | None:
        for pod in pods:
            conditions = (pod.get("status") or {}).get("conditions") or []
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
            if pod["metadata"]["name"] != replaced and ready and not pod["metadata"].get("deletionTimestamp"):
                return str(pod["metadata"]["name"])
        return None

    return watch_collection_until(
        node.admin,
        POD,
        RELEASE_NAMESPACE,
        new_ready,
        READY_SECONDS,
        label_selector=f"model={model}",
        explain=lambda: pod_states(node, RELEASE_NAMESPACE),
    )


def _answered(answer: Mapping[str, Any], model: str) -> None:
    assert answer["object"] == "chat.completion"
    assert answer["model"] == model
    assert answer["choices"][0]["message"]["role"] == "assistant"
    assert answer["usage"]["completion_tokens"] > 0


def test_kubeai_serves_the_programs_ollama_model_from_the_node_cache_and_answers_a_chat_completion(
    real_node: RealNode, release: ReleaseRender, kubeai_on_node: JsonObject
) -> None:
    model = _program_model(release)
    name = model["metadata"]["name"]
    real_node.admin.apply(KUBEAI_MODEL, model, field_manager=ENGINE)

    ready = _ready_model(real_node, name)
    read = Snapshot.from_objects([ready]).model(RELEASE_NAMESPACE, name)
    assert read is not None and kubeai_model_readiness(read).readiness is Readiness.READY
    (pod,) = _model_pods(real_node, name)
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v]
    assert claims == [OLLAMA_CLAIM]

    answer, seconds = _chat(real_node, name)
    _answered(answer, name)
    print(f"chat completion through KubeAI, model Ready: {seconds:.2f} s")
    assert "pulling" not in real_node.log_tail(RELEASE_NAMESPACE, pod["metadata"]["name"], lines=400)

    alias = ensure_alias(
        real_node.admin, RELEASE_NAMESPACE, [pod["metadata"]["name"]], f"{CACHED_MODEL}:latest", name, port=MODEL_PORT
    )
    assert (alias.aliased, alias.copied, alias.failed) == ((pod["metadata"]["name"],), (), ())
    sample = memory_sample(real_node.admin, RELEASE_NAMESPACE, pod["metadata"]["name"], port=MODEL_PORT)
    assert sample is not None and sample.ram_mi > 0 and sample.vram_mi == 0

    # A new Pod of the model (a reschedule, a drain, a reboot) reads the same cache: no pull.
    real_node.admin.delete(POD, pod["metadata"]["name"], RELEASE_NAMESPACE)
    second = wait_for_new_ready_pod(real_node, name, replaced=pod["metadata"]["name"])
    answer, seconds = _chat(real_node, name)
    _answered(answer, name)
    print(f"chat completion through KubeAI from a new Pod of the model: {seconds:.2f} s")
    assert "pulling" not in real_node.log_tail(RELEASE_NAMESPACE, second, lines=400)
    # Its CPU request goes with it: the node has two cores for the next model.
    real_node.admin.delete(KUBEAI_MODEL, name, RELEASE_NAMESPACE)
    watch_until_gone(real_node.admin, POD, RELEASE_NAMESPACE, second, READY_SECONDS)


def test_a_model_at_zero_replicas_starts_on_the_first_request_and_loads_from_the_cache(
    real_node: RealNode, release: ReleaseRender, kubeai_on_node: JsonObject
) -> None:
    model = _program_model(release)
    name = f"{model['metadata']['name']}-zero"
    at_zero = {**model, "metadata": {**model["metadata"], "name": name}, "spec": {**model["spec"], "minReplicas": 0}}
    real_node.admin.apply(KUBEAI_MODEL, at_zero, field_manager=ENGINE)
    # KubeAI sets spec.replicas to minReplicas when it first reconciles the Model, in the pass that
    # would create its Pods.
    wait_for(real_node, KUBEAI_MODEL, RELEASE_NAMESPACE, name, lambda m: m["spec"].get("replicas") == 0, READY_SECONDS)
    assert _model_pods(real_node, name) == []

    answer, seconds = _chat(real_node, name)

    _answered(answer, name)
    print(f"chat completion through KubeAI from zero replicas (scale up, Pod start, model load): {seconds:.2f} s")
    (pod,) = _model_pods(real_node, name)
    assert "pulling" not in real_node.log_tail(RELEASE_NAMESPACE, pod["metadata"]["name"], lines=400)
