"""KubeAI's own controller judges the Models the program renders.

The controller (scripts/toolchain/build.sh, KubeAI v0.22.1) runs as a process against an API
server of this module's own, in namespace `ai`, as the ServiceAccount and with the system.yaml
that `helm template` of the vendored chart renders from the program's release values
(tests/peers/kubeai_controller.py). Every Model the program declares in its renders of the demo
and of each model example (tests/peers/kubeai_chart.py) is created as the program's engine
would create it, and the Pod KubeAI builds for it is compared with what the program intends:
the image its release values give the Model's engine under the image name of its resource
profile, the Model's own arguments and variables, the profile's requests and limits times the
profile's count, its node selector, tolerations, affinity and runtimeClass. No kubelet runs
here: a test writes a Pod's status as the kubelet would, and KubeAI's own status of the Model
(`status.replicas`) is what the program's reader then reads.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

import httpx
import pytest

from planning.readiness import Readiness, kubeai_model_readiness
from planning.snapshot import KubeAIModel, Snapshot
from providers.kinds import KUBEAI_MODEL, POD
from providers.kube import KubeClient
from tests.live.world import write_status_as
from tests.peers.kubeai_chart import RELEASE_NAMESPACE, ReleaseRender
from tests.peers.kubeai_controller import OPENAI_PORT, KubeAIController
from tests.support.watching import follow_log_until, watch_collection_until, watch_until

JsonObject = dict[str, Any]
ENGINE = "magicstick"
KUBELET = "kubelet"
WAIT_SECONDS = 60.0
SERVER_CONTAINER = "server"
MODEL_LABEL = "model"
ADMISSION_TOLERATIONS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
CPU_VLLM_MODEL = "qwen2505bcpu"
CPU_OLLAMA_MODEL = "qwen2505bollama"
"""The demo's CPU models (examples/demo/snapshot.yaml)."""
DEFAULT_IMAGE = "default"
FALLBACK_IMAGE_NAMES = frozenset({DEFAULT_IMAGE, "cpu"})
"""Image names that may fall back to the engine's `default` image, as KubeAI does for a name its
configuration lacks: Ollama's default image is its CPU build. An accelerator image name with no
image of its own would run the default (CUDA) build on another vendor's GPU: a finding."""
_SUFFIXES = {
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "m": Decimal("0.001"),
}


def quantity(value: object) -> Decimal:
    """A Kubernetes quantity as a number (the API server rewrites `2000m` as `2`)."""
    text = str(value)
    for suffix, factor in _SUFFIXES.items():
        if text.endswith(suffix):
            return Decimal(text.removesuffix(suffix)) * factor
    return Decimal(text)


def _quantities(resources: Mapping[str, Any] | None, times: int = 1) -> dict[str, Decimal]:
    return {name: quantity(value) * times for name, value in (resources or {}).items()}


@pytest.fixture
def clean_models(kubeai_admin: KubeClient) -> Iterator[None]:
    """Every Model and its Pods gone after the test."""
    yield
    for model in kubeai_admin.list(KUBEAI_MODEL, namespace=RELEASE_NAMESPACE):
        kubeai_admin.delete(KUBEAI_MODEL, model["metadata"]["name"], RELEASE_NAMESPACE)
    _wait_for_no_pods(kubeai_admin)


def _wait_for_no_pods(client: KubeClient) -> None:
    watch_collection_until(client, POD, RELEASE_NAMESPACE, lambda pods: True if not pods else None, WAIT_SECONDS)


def _wait_for_pods(client: KubeClient, name: str, controller: KubeAIController, *, count: int = 1) -> list[JsonObject]:
    """Once KubeAI has made at least `count` Pods of Model `name`, those Pods."""
    return watch_collection_until(
        client,
        POD,
        RELEASE_NAMESPACE,
        lambda pods: pods if len(pods) >= count else None,
        WAIT_SECONDS,
        label_selector=f"{MODEL_LABEL}={name}",
        explain=controller.log_tail,
    )


def _wait_for_replicas(client: KubeClient, name: str, field: str, controller: KubeAIController) -> None:
    watch_until(
        client,
        KUBEAI_MODEL,
        RELEASE_NAMESPACE,
        name,
        lambda model: model.get("status", {}).get("replicas", {}).get(field) == 1,
        WAIT_SECONDS,
        explain=controller.log_tail,
    )


def _as_the_program_reads(client: KubeClient, name: str) -> KubeAIModel:
    """The live Model through the snapshot parser the program's reader uses."""
    found = Snapshot.from_objects([client.get(KUBEAI_MODEL, name, RELEASE_NAMESPACE)]).model(RELEASE_NAMESPACE, name)
    assert found is not None
    return found


def _declare(client: KubeClient, model: Mapping[str, Any]) -> JsonObject:
    """The Model as the program's engine applies it: server-side apply, its field manager."""
    body = {key: model[key] for key in ("apiVersion", "kind", "metadata", "spec")}
    return client.apply(KUBEAI_MODEL, body, field_manager=ENGINE)


def _pods_of(client: KubeClient, name: str) -> list[JsonObject]:
    return [
        pod
        for pod in client.list(POD, namespace=RELEASE_NAMESPACE)
        if pod["metadata"].get("labels", {}).get(MODEL_LABEL) == name
    ]


def _server(pod: Mapping[str, Any]) -> JsonObject:
    (container,) = [c for c in pod["spec"]["containers"] if c["name"] == SERVER_CONTAINER]
    return dict(container)


def _scheduling_tolerations(tolerations: list[JsonObject] | None) -> list[JsonObject] | None:
    """The Pod's tolerations without the two the API server's DefaultTolerationSeconds admission
    adds to every Pod (not-ready and unreachable, NoExecute, 300 s): they are not KubeAI's."""
    kept = [t for t in tolerations or [] if t.get("key") not in ADMISSION_TOLERATIONS]
    return kept or None


def _intent_mismatches(model: Mapping[str, Any], pod: Mapping[str, Any], values: Mapping[str, Any]) -> list[str]:
    """How the Pod KubeAI built differs from what the program's Model and release values intend."""
    spec = model["spec"]
    profile_name, count = spec["resourceProfile"].split(":")
    profile = values["resourceProfiles"][profile_name]
    images = values["modelServers"][spec["engine"]]["images"]
    image_name = profile.get("imageName", DEFAULT_IMAGE)
    intended_image = spec.get("image") or images.get(image_name)
    if intended_image is None and image_name in FALLBACK_IMAGE_NAMES:
        intended_image = images[DEFAULT_IMAGE]
    server = _server(pod)
    found: list[str] = []

    def compare(what: str, intended: object, built: object) -> None:
        if intended != built:
            found.append(f"{what}: the program intends {intended!r}, KubeAI built {built!r}")

    compare("image", intended_image, server["image"])
    missing_args = [arg for arg in spec.get("args", []) if arg not in server.get("args", [])]
    compare("arguments missing", [], missing_args)
    environment = {e["name"]: e.get("value") for e in server.get("env", [])}
    compare("variables", dict(spec.get("env", {})), {k: environment.get(k) for k in spec.get("env", {})})
    resources = server.get("resources", {})
    compare("requests", _quantities(profile.get("requests"), int(count)), _quantities(resources.get("requests")))
    compare("limits", _quantities(profile.get("limits"), int(count)), _quantities(resources.get("limits")))
    pod_spec = pod["spec"]
    compare("node selector", profile.get("nodeSelector"), pod_spec.get("nodeSelector"))
    compare("tolerations", profile.get("tolerations"), _scheduling_tolerations(pod_spec.get("tolerations")))
    compare("affinity", profile.get("affinity"), pod_spec.get("affinity"))
    compare("runtimeClassName", profile.get("runtimeClassName"), pod_spec.get("runtimeClassName"))
    compare(
        "owner",
        [("Model", model["metadata"]["name"], True)],
        [(o["kind"], o["name"], o.get("controller", False)) for o in pod["metadata"].get("ownerReferences", [])],
    )
    return found


def _rounds(models: Mapping[str, list[JsonObject]]) -> list[dict[str, tuple[str, JsonObject]]]:
    """Every distinct Model of the renders, by name, in as few rounds as names allow (a name the
    renders declare with two different specs goes to a later round)."""
    rounds: list[dict[str, tuple[str, JsonObject]]] = []
    for label, declared in models.items():
        for model in declared:
            name = model["metadata"]["name"]
            if any(name in r and r[name][1]["spec"] == model["spec"] for r in rounds):
                continue
            free = next((r for r in rounds if name not in r), None)
            if free is None:
                free = {}
                rounds.append(free)
            free[name] = (label, model)
    return rounds


def test_kubeai_builds_every_models_pod_as_the_program_intends(
    release: ReleaseRender, kubeai_admin: KubeClient, kubeai_controller: KubeAIController, clean_models: None
):
    models = release.models()
    assert {"demo", "amd-gpu", "intel-gpu", "ollama-nvidia", "ollama-offline", "vllm-cpu"} <= set(models)
    mismatches: dict[str, list[str]] = {}
    judged: set[str] = set()
    for round_ in _rounds(models):
        for _, model in round_.values():
            _declare(kubeai_admin, model)
        for name, (label, model) in round_.items():
            wanted = max(1, int(model["spec"].get("minReplicas", 0)))
            pods = _wait_for_pods(kubeai_admin, name, kubeai_controller, count=wanted)
            for pod in pods:
                judged.add(f"{label}/{name}")
                if found := _intent_mismatches(model, pod, release.effective_values()):
                    mismatches[f"{label}: {pod['metadata']['name']}"] = found
        for name in round_:
            kubeai_admin.delete(KUBEAI_MODEL, name, RELEASE_NAMESPACE)
        _wait_for_no_pods(kubeai_admin)
    profiles = {model["spec"]["resourceProfile"].rsplit("-", 1)[0] for r in _rounds(models) for _, model in r.values()}
    assert {
        "magicstick-cpu-vllm",
        "magicstick-cpu-ollama",
        "magicstick-nvidia-gpu",
        "magicstick-amd-gpu",
        "magicstick-intel-gpu-xe",
    } <= profiles
    assert len(judged) >= 8, judged
    assert not mismatches, "\n".join(f"{pod}:\n  " + "\n  ".join(found) for pod, found in mismatches.items())


def test_kubeai_reports_a_ready_replica_only_once_the_kubelet_does_and_the_program_reads_it(
    release: ReleaseRender, kubeai_admin: KubeClient, kubeai_controller: KubeAIController, clean_models: None
):
    (model,) = [m for m in release.models()["demo"] if m["metadata"]["name"] == CPU_VLLM_MODEL]
    name = model["metadata"]["name"]
    _declare(kubeai_admin, model)
    (pod,) = _wait_for_pods(kubeai_admin, name, kubeai_controller)

    def replicas() -> Mapping[str, Any]:
        return dict(kubeai_admin.get(KUBEAI_MODEL, name, RELEASE_NAMESPACE).get("status", {}).get("replicas", {}))

    _wait_for_replicas(kubeai_admin, name, "all", kubeai_controller)
    pending = _as_the_program_reads(kubeai_admin, name)
    assert replicas().get("ready", 0) == 0
    assert kubeai_model_readiness(pending).readiness is Readiness.IN_PROGRESS

    write_status_as(
        kubeai_admin,
        pod,
        {
            "phase": "Running",
            "podIP": "10.244.0.17",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-04T00:00:00Z"}],
        },
        field_manager=KUBELET,
    )

    _wait_for_replicas(kubeai_admin, name, "ready", kubeai_controller)
    ready = _as_the_program_reads(kubeai_admin, name)
    assert (ready.replicas_all, ready.replicas_ready) == (1, 1)
    assert kubeai_model_readiness(ready).readiness is Readiness.READY


def test_a_model_at_zero_replicas_gets_its_first_pod_when_a_request_reaches_kubeais_endpoint(
    release: ReleaseRender, kubeai_admin: KubeClient, kubeai_controller: KubeAIController, clean_models: None
):
    (model,) = [m for m in release.models()["demo"] if m["metadata"]["name"] == CPU_OLLAMA_MODEL]
    name = model["metadata"]["name"]
    at_zero = {**model, "spec": {**model["spec"], "minReplicas": 0}}
    _declare(kubeai_admin, at_zero)
    # KubeAI sets spec.replicas to minReplicas when it first reconciles the Model, in the pass that
    # would create its Pods.
    watch_until(
        kubeai_admin, KUBEAI_MODEL, RELEASE_NAMESPACE, name, lambda m: m["spec"].get("replicas") == 0, WAIT_SECONDS
    )
    assert _pods_of(kubeai_admin, name) == []

    with httpx.Client(base_url=f"http://127.0.0.1:{OPENAI_PORT}", timeout=3.0) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post(
                "/openai/v1/chat/completions",
                json={"model": name, "messages": [{"role": "user", "content": "hello"}]},
            )

    (pod,) = _wait_for_pods(kubeai_admin, name, kubeai_controller)
    assert kubeai_admin.get(KUBEAI_MODEL, name, RELEASE_NAMESPACE)["spec"]["replicas"] == 1
    assert pod["metadata"]["labels"][MODEL_LABEL] == name


def test_kubeai_refuses_a_model_whose_resource_profile_its_configuration_lacks_and_says_why(
    release: ReleaseRender, kubeai_admin: KubeClient, kubeai_controller: KubeAIController, clean_models: None
):
    (model,) = [m for m in release.models()["demo"] if m["metadata"]["name"] == CPU_VLLM_MODEL]
    refused = {
        **model,
        "metadata": {**model["metadata"], "name": "unknownprofile"},
        "spec": {**model["spec"], "resourceProfile": "magicstick-absent:1"},
    }
    _declare(kubeai_admin, refused)

    follow_log_until(
        kubeai_controller.process.log,
        'resource profile not found: \\"magicstick-absent\\"',
        WAIT_SECONDS,
        explain=kubeai_controller.log_tail,
    )
    assert _pods_of(kubeai_admin, "unknownprofile") == []
    status = kubeai_admin.get(KUBEAI_MODEL, "unknownprofile", RELEASE_NAMESPACE).get("status", {})
    assert status.get("replicas", {}).get("all", 0) == 0
