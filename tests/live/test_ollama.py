"""Ollama in model Pods, reached through the real apiserver's pod proxy.

The apiserver has no kubelet: a test creates the Pod object and writes its status (Running,
Ready, podIP) as the kubelet would, and the Ollama double listens where that podIP points.
The pod proxy refuses loopback and link-local pod IPs ("address not allowed"), so the
double listens on another address of this host, which the apiserver dials like a Pod's.
"""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from providers.kube import (
    ConnectionFailure,
    Forbidden,
    KubeAccess,
    KubeClient,
    KubeConnectionError,
    KubeError,
    ResourceKind,
    ServerError,
    open_client,
)
from providers.ollama import (
    MIB,
    OLLAMA_PORT,
    AliasResult,
    AliasState,
    MemorySample,
    OllamaAliasProvider,
    OllamaUnavailable,
    PodFailure,
    alias_problem,
    alias_state,
    copy_model,
    ensure_alias,
    list_tags,
    memory_sample,
    memory_usage,
    normalise_name,
    observe_alias,
    proxy_path,
)
from providers.outcomes import Persistence, ProblemReason, problem_from
from tests.live.ollama_double import OllamaDouble
from tests.live.world import LOADER
from tests.providers.engine import LEGACY_ACCESS, configured, kubeconfig_config

POD = ResourceKind(group="", version="v1", kind="Pod", plural="pods", namespaced=True)
SERVICE_ACCOUNT = ResourceKind(group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True)
KUBELET = "test-kubelet"
SOURCE = "qwen2.5:0.5b"
ALIAS = "qwen2505bcpu"
NOW = datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=UTC)


def ready_pod(client: KubeClient, namespace: str, name: str, *, ip: str, port: int) -> str:
    """Create a model Pod declaring `port` and report it Running and Ready at `ip`, as the kubelet would."""
    client.apply(
        SERVICE_ACCOUNT,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}},
        field_manager=LOADER,
    )
    container = {"name": "server", "image": "ollama/ollama", "ports": [{"name": "http", "containerPort": port}]}
    client.apply(
        POD,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/name": "model"}},
            "spec": {"automountServiceAccountToken": False, "containers": [container]},
        },
        field_manager=LOADER,
    )
    status = {
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    client.apply(
        POD,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "status": status},
        field_manager=KUBELET,
        subresource="status",
    )
    return name


def pod_for(client: KubeClient, namespace: str, double: OllamaDouble, name: str = "model-qwen-0") -> str:
    return ready_pod(client, namespace, name, ip=double.host, port=double.port)


# --- paths and names ---------------------------------------------------------------------------


def test_the_proxy_path_names_the_namespace_the_pod_its_port_and_the_ollama_path():
    assert (
        proxy_path("ai", "model-qwen-0", "api/tags") == "/api/v1/namespaces/ai/pods/model-qwen-0:11434/proxy/api/tags"
    )


def test_the_proxy_path_defaults_to_ollamas_port_and_takes_another():
    assert OLLAMA_PORT == 11434
    assert proxy_path("ai", "p", "/api/ps", port=8000) == "/api/v1/namespaces/ai/pods/p:8000/proxy/api/ps"


def test_without_a_port_the_proxy_path_leaves_the_choice_to_the_pods_declared_port():
    assert proxy_path("ai", "p", "api/copy", port=None) == "/api/v1/namespaces/ai/pods/p/proxy/api/copy"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("qwen2.5:0.5b", "qwen2.5:0.5b"),
        ("mymodel", "mymodel:latest"),
        ("library/mymodel", "library/mymodel:latest"),
        ("registry.example.com:5000/team/model", "registry.example.com:5000/team/model:latest"),
        ("hf.co/team/model:Q4_K_M", "hf.co/team/model:Q4_K_M"),
    ],
)
def test_a_name_without_a_tag_means_the_latest_tag(name, expected):
    assert normalise_name(name) == expected


@pytest.mark.parametrize(
    ("tags", "state"),
    [
        ({"qwen2505bcpu:latest", "qwen2.5:0.5b"}, AliasState.ALIASED),
        ({"qwen2505bcpu:latest"}, AliasState.ALIASED),
        ({"qwen2.5:0.5b"}, AliasState.SOURCE_PRESENT),
        (set(), AliasState.WAITING_FOR_SOURCE),
        ({"other:latest"}, AliasState.WAITING_FOR_SOURCE),
    ],
)
def test_a_pods_alias_state_follows_from_its_tags(tags, state):
    assert alias_state(frozenset(tags), source=SOURCE, alias=ALIAS) is state


# --- tags and the alias, through the pod proxy -------------------------------------------------


def test_tags_are_read_through_the_pod_proxy_as_ollama_prints_them(namespace, admin: KubeClient, start_ollama):
    double = start_ollama(tags=[SOURCE, "mymodel"])
    pod = pod_for(admin, namespace, double)
    assert list_tags(admin, namespace, pod, port=double.port) == {"qwen2.5:0.5b", "mymodel:latest"}
    assert double.calls["GET /api/tags"] == 1


def test_a_copy_adds_the_destination_and_ollamas_empty_answer_is_accepted(namespace, admin: KubeClient, start_ollama):
    double = start_ollama(tags=[SOURCE])
    pod = pod_for(admin, namespace, double)
    assert copy_model(admin, namespace, pod, SOURCE, "qwen2505bcpu:latest", port=double.port) is None
    assert double.tags == {SOURCE, "qwen2505bcpu:latest"}


def test_the_alias_is_copied_once_and_a_second_pass_copies_nothing(namespace, admin: KubeClient, start_ollama):
    double = start_ollama(tags=[SOURCE])
    pod = pod_for(admin, namespace, double)

    first = ensure_alias(admin, namespace, [pod], SOURCE, ALIAS, port=double.port)
    second = ensure_alias(admin, namespace, [pod], SOURCE, ALIAS, port=double.port)

    assert (first.aliased, first.copied, first.waiting) == ((pod,), (pod,), ())
    assert (second.aliased, second.copied, second.waiting) == ((pod,), (), ())
    assert double.copies == 1
    assert "qwen2505bcpu:latest" in double.tags


def test_a_pod_without_the_source_tag_waits_and_nothing_is_copied(namespace, admin: KubeClient, start_ollama):
    double = start_ollama(tags=["other:latest"])
    pod = pod_for(admin, namespace, double)

    result = ensure_alias(admin, namespace, [pod], SOURCE, ALIAS, port=double.port)

    assert (result.aliased, result.copied, result.waiting) == ((), (), (pod,))
    assert not result.complete([pod])
    assert double.copies == 0


def test_every_pod_gets_the_alias_from_its_own_ollama(namespace, admin: KubeClient, start_ollama):
    doubles = {
        "model-qwen-0": start_ollama(tags=[SOURCE]),
        "model-qwen-1": start_ollama(tags=[SOURCE, "qwen2505bcpu:latest"]),
        "model-qwen-2": start_ollama(tags=[SOURCE]),
    }
    pods = [pod_for(admin, namespace, double, name) for name, double in doubles.items()]

    result = ensure_alias(admin, namespace, pods, SOURCE, ALIAS, port=None)

    assert result.aliased == ("model-qwen-0", "model-qwen-1", "model-qwen-2")
    assert result.copied == ("model-qwen-0", "model-qwen-2")
    assert result.complete(pods)
    assert {name: double.copies for name, double in doubles.items()} == {
        "model-qwen-0": 1,
        "model-qwen-1": 0,
        "model-qwen-2": 1,
    }
    assert all("qwen2505bcpu:latest" in double.tags for double in doubles.values())


def test_a_pod_still_downloading_waits_while_the_others_get_the_alias(namespace, admin: KubeClient, start_ollama):
    ready = start_ollama(tags=[SOURCE])
    downloading = start_ollama()
    pods = [pod_for(admin, namespace, ready, "model-qwen-0"), pod_for(admin, namespace, downloading, "model-qwen-1")]

    result = ensure_alias(admin, namespace, pods, SOURCE, ALIAS, port=None)

    assert (result.aliased, result.waiting) == (("model-qwen-0",), ("model-qwen-1",))
    assert downloading.copies == 0


def test_observing_the_alias_reports_where_it_stands_and_copies_nothing(namespace, admin: KubeClient, start_ollama):
    doubles = {"model-qwen-0": start_ollama(tags=[SOURCE]), "model-qwen-1": start_ollama(tags=["qwen2505bcpu"])}
    pods = [pod_for(admin, namespace, double, name) for name, double in doubles.items()]

    result = observe_alias(admin, namespace, pods, SOURCE, ALIAS, port=None)

    assert (result.aliased, result.copied, result.waiting) == (("model-qwen-1",), (), ())
    assert sum(double.copies for double in doubles.values()) == 0


def test_a_pod_the_apiserver_no_longer_knows_is_reported_gone(namespace, admin: KubeClient, start_ollama):
    double = start_ollama(tags=[SOURCE])
    pod = pod_for(admin, namespace, double)

    result = ensure_alias(admin, namespace, ["model-qwen-9", pod], SOURCE, ALIAS, port=double.port)

    assert (result.gone, result.aliased) == (("model-qwen-9",), (pod,))


# --- failures ----------------------------------------------------------------------------------


@pytest.fixture
def closed_port(host_address: str) -> Iterator[int]:
    """A port of this host's proxyable address where nothing listens: the pod proxy's dial is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind((host_address, 0))
        yield int(closed.getsockname()[1])


def test_a_pod_whose_ollama_cannot_be_reached_raises_ollama_unavailable_with_the_servers_message(
    namespace, admin_access: KubeAccess, host_address, closed_port
):
    slept: list[float] = []
    with open_client(admin_access, sleep=slept.append) as client:
        pod = ready_pod(client, namespace, "model-qwen-0", ip=host_address, port=closed_port)

        with pytest.raises(OllamaUnavailable) as raised:
            list_tags(client, namespace, pod, port=closed_port)

    assert isinstance(raised.value, ServerError)
    assert raised.value.code >= 500
    assert "error trying to reach service" in raised.value.message
    assert f"{host_address}:{closed_port}" in raised.value.message
    assert isinstance(raised.value.__cause__, ServerError)


def test_a_pod_that_cannot_be_reached_is_reported_failed_while_the_other_pods_get_the_alias(
    namespace, admin: KubeClient, host_address, closed_port, start_ollama
):
    double = start_ollama(tags=[SOURCE])
    dead = ready_pod(admin, namespace, "model-qwen-0", ip=host_address, port=closed_port)
    alive = pod_for(admin, namespace, double, "model-qwen-1")

    result = ensure_alias(admin, namespace, [dead, alive], SOURCE, ALIAS, port=None)

    assert (result.aliased, result.copied) == ((alive,), (alive,))
    assert [failure.pod for failure in result.failed] == [dead]
    assert isinstance(result.failed[0].error, OllamaUnavailable)
    assert "error trying to reach service" in result.failed[0].detail


def test_the_apiserver_refuses_to_proxy_to_a_loopback_pod_ip(namespace, admin: KubeClient):
    pod = ready_pod(admin, namespace, "model-qwen-0", ip="127.0.0.1", port=OLLAMA_PORT)

    with pytest.raises(KubeError) as raised:
        list_tags(admin, namespace, pod)

    assert not isinstance(raised.value, OllamaUnavailable)
    assert (raised.value.code, raised.value.message) == (400, "address not allowed")


# --- memory ------------------------------------------------------------------------------------


def test_a_memory_sample_splits_the_loaded_models_into_ram_and_vram(namespace, admin: KubeClient, start_ollama):
    double = start_ollama(
        loaded=[
            {"name": SOURCE, "model": SOURCE, "size": 1500 * MIB, "size_vram": 1000 * MIB},
            {"name": "nomic-embed-text:latest", "model": "nomic-embed-text:latest", "size": 300 * MIB},
        ]
    )
    pod = pod_for(admin, namespace, double)

    sample = memory_sample(admin, namespace, pod, port=double.port)

    assert sample == MemorySample(pod=pod, size_bytes=1800 * MIB, vram_bytes=1000 * MIB)
    assert (sample.ram_mi, sample.vram_mi, sample.total_mi) == (800, 1000, 1800)
    assert double.calls["GET /api/ps"] == 1


def test_an_ollama_with_nothing_loaded_gives_no_sample(namespace, admin: KubeClient, start_ollama):
    double = start_ollama(tags=[SOURCE], loaded=[])
    pod = pod_for(admin, namespace, double)
    assert memory_sample(admin, namespace, pod, port=double.port) is None


def test_memory_usage_sums_every_sampled_replica_and_stamps_the_given_time():
    samples = [
        MemorySample(pod="model-qwen-0", size_bytes=1800 * MIB, vram_bytes=1000 * MIB),
        None,
        MemorySample(pod="model-qwen-2", size_bytes=1024 * MIB, vram_bytes=0),
    ]
    assert memory_usage(samples, NOW) == {
        "ramMi": 1824,
        "vramMi": 1000,
        "totalMi": 2824,
        "source": "ollama /api/ps",
        "sampledAt": "2026-03-04T05:06:07Z",
        "replicas": 2,
    }


@pytest.mark.parametrize("samples", [[], [None], [None, None]])
def test_memory_usage_is_none_without_any_sample_so_the_status_field_is_cleared(samples):
    assert memory_usage(samples, NOW) is None


def test_mebibytes_round_to_the_nearest_and_ram_and_vram_add_up_to_the_total():
    sample = MemorySample(pod="p", size_bytes=10 * MIB + 700 * 1024, vram_bytes=4 * MIB + 600 * 1024)
    assert (sample.total_mi, sample.vram_mi, sample.ram_mi) == (11, 5, 6)
    usage = memory_usage([sample], NOW)
    assert usage is not None
    assert usage["ramMi"] + usage["vramMi"] == usage["totalMi"]


# --- the dynamic provider ----------------------------------------------------------------------


def _inputs(**changes: Any) -> dict[str, Any]:
    """Provider inputs as the program declares them (numbers arrive as floats)."""
    return {
        "namespace": "ai",
        "pods": ["model-qwen-0"],
        "source": SOURCE,
        "alias": ALIAS,
        "port": 8000.0,
        **changes,
    }


def _configured(access: KubeAccess) -> OllamaAliasProvider:
    assert access.kubeconfig is not None
    return configured(OllamaAliasProvider(), kubeconfig_config(access.kubeconfig))


def test_check_normalises_pods_names_and_port():
    result = OllamaAliasProvider().check({}, _inputs(pods=["b", "a", "b"], alias="mymodel"))
    assert result.failures == []
    assert (result.inputs["pods"], result.inputs["alias"], result.inputs["source"], result.inputs["port"]) == (
        ["a", "b"],
        "mymodel:latest",
        "qwen2.5:0.5b",
        8000,
    )


def test_check_gives_ollamas_port_when_none_is_set():
    inputs = _inputs()
    del inputs["port"]
    assert OllamaAliasProvider().check({}, inputs).inputs["port"] == OLLAMA_PORT


@pytest.mark.parametrize(
    ("changes", "failing"),
    [
        ({"namespace": ""}, ["namespace"]),
        ({"source": None}, ["source"]),
        ({"alias": 3}, ["alias"]),
        ({"pods": "model-qwen-0"}, ["pods"]),
        ({"pods": ["model-qwen-0", ""]}, ["pods"]),
        ({"port": 0}, ["port"]),
        ({"port": 8000.5}, ["port"]),
        ({"port": "8000"}, ["port"]),
    ],
)
def test_check_names_each_invalid_property(changes, failing):
    result = OllamaAliasProvider().check({}, _inputs(**changes))
    assert [failure.property for failure in result.failures] == failing


def _converged() -> dict[str, Any]:
    checked = OllamaAliasProvider().check({}, _inputs()).inputs
    return {**checked, "aliased": ["model-qwen-0"], "waiting": [], "problem": {}}


@pytest.mark.parametrize(
    ("changes", "replaces"),
    [
        ({"pods": ["model-qwen-0", "model-qwen-1"]}, []),
        ({"source": "qwen2.5:1.5b"}, []),
        ({"alias": "other"}, []),
        ({"namespace": "elsewhere"}, ["namespace"]),
    ],
)
def test_a_changed_input_updates_the_alias_and_only_a_new_namespace_replaces_it(changes, replaces):
    provider = OllamaAliasProvider()
    news = provider.check({}, _inputs(**changes)).inputs
    diff = provider.diff("ai/qwen2505bcpu:latest", _converged(), news)
    assert (diff.changes, diff.replaces) == (True, replaces)


def test_a_converged_alias_shows_no_change():
    provider = OllamaAliasProvider()
    news = provider.check({}, _inputs()).inputs
    assert provider.diff("ai/qwen2505bcpu:latest", _converged(), news).changes is False


def test_alias_state_written_before_the_problem_output_existed_is_updated_once():
    provider = OllamaAliasProvider()
    news = provider.check({}, _inputs()).inputs
    older = {key: value for key, value in _converged().items() if key != "problem"}
    diff = provider.diff("ai/qwen2505bcpu:latest", older, news)
    assert (diff.changes, diff.replaces) == (True, [])


def test_an_alias_missing_on_some_pod_is_tried_again_on_the_next_run():
    provider = OllamaAliasProvider()
    news = provider.check({}, _inputs()).inputs
    olds = {**_converged(), "aliased": [], "waiting": ["model-qwen-0"]}
    assert provider.diff("ai/qwen2505bcpu:latest", olds, news).changes is True


def test_the_provider_waits_for_the_source_then_creates_the_alias_once_reads_it_and_deletes_nothing(
    namespace, admin: KubeClient, admin_access, start_ollama
):
    provider = _configured(admin_access)
    double = start_ollama()
    pod = pod_for(admin, namespace, double)
    inputs = provider.check({}, _inputs(namespace=namespace, pods=[pod], port=float(double.port))).inputs

    created = provider.create(inputs)
    assert created.id == f"{namespace}/qwen2505bcpu:latest"
    assert (created.outs["aliased"], created.outs["waiting"]) == ([], [pod])
    assert provider.diff(created.id, created.outs, inputs).changes is True

    double.tags.add(SOURCE)
    updated = provider.update(created.id, created.outs, inputs).outs
    assert (updated["aliased"], updated["waiting"]) == ([pod], [])
    assert {key: updated[key] for key in inputs} == inputs
    assert provider.diff(created.id, updated, inputs).changes is False

    read = provider.read(created.id, updated)
    assert (read.id, read.outs["aliased"], read.outs["waiting"]) == (created.id, [pod], [])
    assert double.copies == 1

    calls = sum(double.calls.values())
    provider.delete(created.id, read.outs)
    assert sum(double.calls.values()) == calls
    assert "qwen2505bcpu:latest" in double.tags


def test_reading_after_the_alias_vanished_shows_a_change_to_apply(
    namespace, admin: KubeClient, admin_access, start_ollama
):
    provider = _configured(admin_access)
    double = start_ollama(tags=[SOURCE])
    pod = pod_for(admin, namespace, double)
    inputs = provider.check({}, _inputs(namespace=namespace, pods=[pod], port=float(double.port))).inputs
    created = provider.create(inputs)

    double.tags.discard("qwen2505bcpu:latest")
    read = provider.read(created.id, created.outs)

    assert (read.outs["aliased"], read.outs["waiting"]) == ([], [])
    assert provider.diff(created.id, read.outs, inputs).changes is True
    assert double.copies == 1


def test_a_configured_provider_reads_and_deletes_an_alias_whose_state_names_a_kubeconfig_absent_here(
    namespace, admin: KubeClient, admin_access, start_ollama
):
    provider = _configured(admin_access)
    double = start_ollama(tags=[SOURCE, "qwen2505bcpu:latest"])
    pod = pod_for(admin, namespace, double)
    inputs = provider.check({}, _inputs(namespace=namespace, pods=[pod], port=float(double.port))).inputs
    old_state = {**inputs, **LEGACY_ACCESS, "aliased": [pod], "waiting": []}

    read = provider.read(f"{namespace}/qwen2505bcpu:latest", old_state)
    provider.delete(read.id, old_state)

    assert {key: value for key, value in read.outs.items() if key != "problem"} == {
        **inputs,
        "aliased": [pod],
        "waiting": [],
    }
    assert problem_from(read.outs["problem"]) is None
    assert dict(double.calls) == {"GET /api/tags": 1}


# --- one Pod that fails never fails the alias (issue #11, points 3 and 5) -----------------------

_PROXY = "/api/v1/namespaces/ai/pods/model-qwen-0:8000/proxy/api/tags"


def _failed(error: KubeError) -> AliasResult:
    return AliasResult(aliased=(), copied=(), waiting=(), gone=(), failed=(PodFailure("model-qwen-0", error),))


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            OllamaUnavailable(
                method="GET",
                path=_PROXY,
                code=503,
                reason="ServiceUnavailable",
                message="error trying to reach service",
            ),
            ProblemReason.OLLAMA_UNREACHABLE,
        ),
        (
            KubeConnectionError(
                method="GET",
                path=_PROXY,
                url="https://127.0.0.1:6443",
                failure=ConnectionFailure.TIMEOUT,
                cause="timed out after 3 s (waiting for the answer)",
            ),
            ProblemReason.OLLAMA_UNREACHABLE,
        ),
        (
            KubeConnectionError(
                method="GET",
                path=_PROXY,
                url="https://127.0.0.1:6443",
                failure=ConnectionFailure.REFUSED,
                cause="connection refused",
            ),
            ProblemReason.CLUSTER_UNREACHABLE,
        ),
        (
            Forbidden(
                method="GET", path=_PROXY, code=403, reason="Forbidden", message='pods "model-qwen-0" is forbidden'
            ),
            ProblemReason.OLLAMA_ALIAS_REFUSED,
        ),
        (
            KubeError(method="GET", path=_PROXY, code=400, reason="BadRequest", message="address not allowed"),
            ProblemReason.OLLAMA_ALIAS_REFUSED,
        ),
    ],
    ids=["5xx", "timeout", "api-server-refused", "forbidden", "address-not-allowed"],
)
def test_a_failed_pod_becomes_a_temporary_problem_with_a_typed_reason(error, reason):
    problem = alias_problem(_failed(error))
    assert problem is not None
    assert (problem.reason, problem.persistence) == (reason, Persistence.TEMPORARY)
    assert problem.message.startswith("Pod model-qwen-0: GET api/tags")


def test_a_timeout_names_the_pod_proxy_not_the_api_servers_address():
    error = KubeConnectionError(
        method="GET",
        path=_PROXY,
        url="https://127.0.0.1:6443",
        failure=ConnectionFailure.TIMEOUT,
        cause="timed out after 3 s (waiting for the answer)",
    )
    assert alias_problem(_failed(error)).message == (
        "Pod model-qwen-0: GET api/tags through the API server's pod proxy: timed out after 3 s (waiting for the answer)"
    )


def test_no_failed_pod_means_no_problem():
    assert alias_problem(AliasResult(aliased=("p",), copied=(), waiting=(), gone=())) is None


def test_a_stored_problem_is_tried_again_on_the_next_run_even_when_every_pod_is_aliased():
    provider = OllamaAliasProvider()
    news = provider.check({}, _inputs()).inputs
    problem = {"reason": "OllamaUnreachable", "message": "Pod model-qwen-0: ...", "persistence": "Temporary"}
    assert provider.diff("ai/qwen2505bcpu:latest", {**_converged(), "problem": problem}, news).changes is True
    assert provider.diff("ai/qwen2505bcpu:latest", {**_converged(), "problem": {}}, news).changes is False


def test_an_unreachable_pod_never_fails_the_alias_resource_and_the_next_run_completes_it(
    namespace, admin: KubeClient, admin_access, host_address, start_ollama
):
    provider = _configured(admin_access)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind((host_address, 0))
        port = int(closed.getsockname()[1])
        pod = ready_pod(admin, namespace, "model-qwen-0", ip=host_address, port=port)
        inputs = provider.check({}, _inputs(namespace=namespace, pods=[pod], port=float(port))).inputs

        created = provider.create(inputs)

    problem = problem_from(created.outs["problem"])
    assert problem is not None and problem.reason is ProblemReason.OLLAMA_UNREACHABLE
    assert problem.message.startswith(f"Pod {pod}: GET api/tags: 50")
    assert f"{host_address}:{port}" in problem.message
    assert created.outs["aliased"] == []
    assert provider.diff(created.id, created.outs, inputs).changes is True

    double = start_ollama(tags=[SOURCE], port=port)
    updated = provider.update(created.id, created.outs, inputs).outs

    assert (problem_from(updated["problem"]), updated["aliased"]) == (None, [pod])
    assert provider.diff(created.id, updated, inputs).changes is False
    assert double.calls == Counter({"GET /api/tags": 1, "POST /api/copy": 1})
