"""The Ollama probes of one observation are bounded: a dead model Pod costs every run little.

Issue #11, point 5. Each Ready Pod of an Ollama Model is asked its tags and loaded models
through the real API server's pod proxy: one attempt per run, a short timeout, several Pods at
once, and a budget for the whole run. The doubles play Ollama; an unresponsive one accepts the
connection and answers nothing until the test ends. Nothing here is timed: the test injects
small limits and asserts what was asked and what was reported.
"""

from __future__ import annotations

import socket
from collections import Counter
from typing import Any, Final

from planning.plan import plan
from planning.snapshot import OllamaObservation, OllamaProbe, Snapshot
from providers.kinds import KUBEAI_MODEL, POD
from providers.kube import KubeAccess, KubeClient
from providers.live_reader import observe_ollama
from providers.ollama import (
    MIB,
    PROBE_ATTEMPTS,
    PROBE_BUDGET_SECONDS,
    PROBE_PARALLELISM,
    PROBE_TIMEOUT_SECONDS,
    ProbeLimits,
)
from tests.live.ollama_double import OllamaDouble
from tests.live.world import LOADER, SERVICE_ACCOUNT
from tests.planning.builders import CATALOGS, NOW, status_of, with_flux
from tests.planning.models.world import catalog_publishing, local_model, observed_model, platform
from tests.planning.models.world import pod as observed_pod

KUBELET: Final = "test-kubelet"
SOURCE: Final = "qwen2.5:0.5b"
LOADED: Final = ({"name": SOURCE, "model": SOURCE, "size": 512 * MIB, "size_vram": 0},)
NEVER: Final = 600.0
"""A bound no test reaches: the run ends through the other limit first."""


def ollama_model(client: KubeClient, namespace: str, name: str = "qwen") -> str:
    """A KubeAI Model of engine OLlama; returns its UID."""
    body = {
        "apiVersion": "kubeai.org/v1",
        "kind": "Model",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "url": f"ollama://{SOURCE}",
            "engine": "OLlama",
            "features": ["TextGeneration"],
            "resourceProfile": "cpu:1",
        },
    }
    return str(client.apply(KUBEAI_MODEL, body, field_manager=LOADER)["metadata"]["uid"])


def model_pod(client: KubeClient, namespace: str, name: str, *, model_uid: str, double: OllamaDouble) -> str:
    """A Pod the Model controls, declaring the double's port, reported Running and Ready at its address."""
    client.apply(
        SERVICE_ACCOUNT,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}},
        field_manager=LOADER,
    )
    owner = {"apiVersion": "kubeai.org/v1", "kind": "Model", "name": "qwen", "uid": model_uid, "controller": True}
    container = {"name": "server", "image": "ollama/ollama", "ports": [{"name": "http", "containerPort": double.port}]}
    metadata = {"name": name, "namespace": namespace, "labels": {"model": "qwen"}, "ownerReferences": [owner]}
    spec = {"automountServiceAccountToken": False, "containers": [container]}
    client.apply(POD, {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}, field_manager=LOADER)
    status = {
        "phase": "Running",
        "podIP": double.host,
        "podIPs": [{"ip": double.host}],
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "status": status}
    client.apply(POD, pod, field_manager=KUBELET, subresource="status")
    return name


def pods_of(client: KubeClient, namespace: str, doubles: dict[str, OllamaDouble]) -> list[dict[str, Any]]:
    """The Model and one Ready Pod per double, as the reader LISTs them."""
    uid = ollama_model(client, namespace)
    for name, double in doubles.items():
        model_pod(client, namespace, name, model_uid=uid, double=double)
    return [*client.list(KUBEAI_MODEL, namespace=namespace), *client.list(POD, namespace=namespace)]


def observe(access: KubeAccess, objects: list[dict[str, Any]], limits: ProbeLimits) -> dict[str, OllamaObservation]:
    """What one observation reports per Pod; `port=None`: each Pod's declared port (each double has its own)."""
    return {seen.pod: seen for seen in observe_ollama(access, objects, limits=limits, port=None)}


def test_the_production_limits_are_one_short_attempt_per_pod_and_a_budget_per_run():
    assert (PROBE_TIMEOUT_SECONDS, PROBE_ATTEMPTS, PROBE_BUDGET_SECONDS, PROBE_PARALLELISM) == (3.0, 1, 15.0, 8)
    bounded = ProbeLimits().access(KubeAccess(kubeconfig="/nowhere", timeout_seconds=10.0))
    assert (bounded.timeout_seconds, bounded.retry.attempts, bounded.kubeconfig) == (3.0, 1, "/nowhere")


def test_every_ready_pod_is_asked_its_tags_and_its_loaded_models_once_per_run(
    namespace, admin, admin_access, start_ollama
):
    doubles = {f"qwen-{i}": start_ollama(tags=[SOURCE], loaded=LOADED) for i in range(3)}
    objects = pods_of(admin, namespace, doubles)

    seen = observe(admin_access, objects, ProbeLimits(timeout_seconds=NEVER, budget_seconds=NEVER))

    assert {pod: (s.probe, s.tags, s.total_mi) for pod, s in seen.items()} == {
        pod: (OllamaProbe.ANSWERED, frozenset({SOURCE}), 512) for pod in doubles
    }
    assert all(d.calls == Counter({"GET /api/tags": 1, "GET /api/ps": 1}) for d in doubles.values())


def test_an_unresponsive_pod_is_asked_once_and_reported_unreachable_while_the_others_answer(
    namespace, admin, admin_access, start_ollama
):
    doubles = {
        "qwen-0": start_ollama(tags=[SOURCE]),
        "qwen-1": start_ollama(unresponsive=True),
        "qwen-2": start_ollama(tags=[SOURCE]),
    }
    objects = pods_of(admin, namespace, doubles)

    seen = observe(admin_access, objects, ProbeLimits(timeout_seconds=1.0, budget_seconds=NEVER))

    assert doubles["qwen-1"].calls == Counter({"GET /api/tags": 1})
    assert seen["qwen-1"].probe is OllamaProbe.UNREACHABLE
    assert (
        seen["qwen-1"].error
        == "GET api/tags through the API server's pod proxy: timed out after 1 s (waiting for the answer)"
    )
    assert [(seen[p].probe, seen[p].tags) for p in ("qwen-0", "qwen-2")] == [
        (OllamaProbe.ANSWERED, frozenset({SOURCE}))
    ] * 2


def test_pods_still_unanswered_when_the_budget_runs_out_are_reported_not_observed_and_asked_nothing_more(
    namespace, admin, admin_access, start_ollama
):
    doubles = {"qwen-0": start_ollama(tags=[SOURCE], loaded=LOADED), "qwen-1": start_ollama(unresponsive=True)}
    objects = pods_of(admin, namespace, doubles)

    seen = observe(admin_access, objects, ProbeLimits(timeout_seconds=NEVER, budget_seconds=2.0))

    assert (seen["qwen-0"].probe, seen["qwen-0"].total_mi) == (OllamaProbe.ANSWERED, 512)
    assert seen["qwen-1"].probe is OllamaProbe.NOT_OBSERVED
    assert seen["qwen-1"].error == "not observed this run: the Ollama probes of one run have a budget of 2 s"
    assert doubles["qwen-1"].calls == Counter({"GET /api/tags": 1})


def test_no_more_pods_are_asked_at_once_than_the_parallelism_allows(namespace, admin, admin_access, start_ollama):
    doubles = {f"qwen-{i}": start_ollama(unresponsive=True) for i in range(3)}
    objects = pods_of(admin, namespace, doubles)

    seen = observe(admin_access, objects, ProbeLimits(timeout_seconds=NEVER, budget_seconds=1.0, parallelism=2))

    assert sum(sum(d.calls.values()) for d in doubles.values()) == 2
    assert {s.probe for s in seen.values()} == {OllamaProbe.NOT_OBSERVED}
    assert sorted(seen) == sorted(doubles)


def test_a_pod_whose_ollama_refuses_the_connection_is_reported_unreachable_with_the_servers_message(
    namespace, admin, admin_access, host_address
):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind((host_address, 0))
        port = int(closed.getsockname()[1])
        stand_in = OllamaDouble()
        stand_in.host, stand_in.port = host_address, port
        objects = pods_of(admin, namespace, {"qwen-0": stand_in})

        (seen,) = observe(admin_access, objects, ProbeLimits(timeout_seconds=NEVER, budget_seconds=NEVER)).values()

    assert seen.probe is OllamaProbe.UNREACHABLE
    assert seen.error.startswith("GET api/tags: 50")
    assert "error trying to reach service" in seen.error
    assert f"{host_address}:{port}" in seen.error


# --- the model's status (pure): what the probe reported ---------------------------------------

WIRING: Final = "planning passes Unreachable observations to model_lifecycle (planning/models/plan.py, lifecycle.py)"


def ollama_status(*observations: OllamaObservation) -> dict[str, Any]:
    objects = [
        *platform(),
        local_model("m", engine="OLlama"),
        observed_model("m", ready=2, all_=2, engine="OLlama"),
        observed_pod("m-0", "m"),
        observed_pod("m-1", "m"),
        catalog_publishing("m"),
    ]
    result = plan(snapshot=Snapshot.from_objects(with_flux(objects), ollama=observations), catalogs=CATALOGS, now=NOW)
    return status_of(result, "ModelActivation", "m")


ALIASED: Final = frozenset({"m:latest"})


def test_a_model_whose_pod_does_not_answer_is_degraded_naming_the_pod_and_the_cause():
    dead = OllamaObservation(
        namespace="ai",
        pod="m-1",
        error="GET api/tags through the API server's pod proxy: timed out after 3 s (waiting for the answer)",
        probe=OllamaProbe.UNREACHABLE,
    )
    status = ollama_status(OllamaObservation(namespace="ai", pod="m-0", tags=ALIASED), dead)

    assert (status["phase"], status["reason"]) == ("Degraded", "OllamaUnreachable")
    assert status["message"].startswith(
        "Ollama does not answer on m-1: GET api/tags through the API server's pod proxy: timed out after 3 s"
    )


def test_a_model_whose_pods_all_answer_is_not_degraded():
    status = ollama_status(
        OllamaObservation(namespace="ai", pod="m-0", tags=ALIASED),
        OllamaObservation(namespace="ai", pod="m-1", tags=ALIASED),
    )
    assert status["phase"] == "Ready"
