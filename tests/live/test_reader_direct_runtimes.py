"""Direct runtimes in the live reader: their objects, and the upstream health of realtime Pods.

FreeToken and the realtime vLLM-Omni runtime run as the program's own Deployment, Service and
(realtime) ConfigMap; every such object and Pod carries RUNTIME_LABEL. In each target namespace
the reader LISTs Deployments, Pods and ConfigMaps selected on that key, and asks each Ready
realtime Pod its `/health` through the real API server's pod proxy. The test plays the
Deployment controller (it writes the rollout status) and the kubelet (it writes the Pod's phase,
Ready condition and IP, the address of a health double on this host).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any, Final

import pytest

from api.meta import API_VERSION
from planning.models.direct import RUNTIME_LABEL
from planning.snapshot import HealthObservation
from providers.kinds import CONFIG_MAP, DEPLOYMENT, MODEL_ACTIVATION, POD
from providers.kube import KubeAccess, KubeClient, open_client
from providers.live_reader import (
    HealthTarget,
    distinct,
    namespace_reads,
    observe_health,
    read_live_objects,
    read_objects,
    read_snapshot,
    realtime_pods,
)
from providers.ollama import ProbeLimits
from providers.snapshot_capture import capture, snapshot_text
from providers.snapshot_file import HEALTH_ANNOTATION, parse_snapshot_text
from tests.live.health_double import HealthDouble, running_health
from tests.live.world import LOADER, ensure_namespace

KUBELET: Final = "test-kubelet"
DEPLOYMENT_CONTROLLER: Final = "deployment-controller"
NEVER: Final = 600.0
"""A bound no test reaches: the probe ends through the other limit first."""
UNBOUNDED: Final = ProbeLimits(timeout_seconds=NEVER, budget_seconds=NEVER)

StartHealth = Callable[..., HealthDouble]


@pytest.fixture
def start_health(host_address: str) -> Iterator[StartHealth]:
    """Start health doubles on this host's address; all are released and stopped when the test ends."""
    with ExitStack() as stack:

        def start(**state: Any) -> HealthDouble:
            return stack.enter_context(running_health(host_address, **state))

        yield start


@pytest.fixture
def target(own_crds: object, namespace: str, admin: KubeClient) -> str:
    """A target namespace: a ModelActivation in the test's namespace (the system namespace) names it."""
    name = f"t-{namespace}"[:63].rstrip("-")
    ensure_namespace(admin, name)
    spec = {
        "type": "local",
        "enabled": True,
        "targetNamespace": name,
        "local": {"preset": "qwen2505bcpu", "computeTarget": "cpu", "engine": "VLLM"},
    }
    body = {
        "apiVersion": API_VERSION,
        "kind": "ModelActivation",
        "metadata": {"name": "direct", "namespace": namespace},
        "spec": spec,
    }
    admin.apply(MODEL_ACTIVATION, body, field_manager=LOADER)
    return name


def labels(runtime: str | None, **more: str) -> dict[str, str]:
    return {**({RUNTIME_LABEL: runtime} if runtime else {}), **more}


def a_deployment(client: KubeClient, namespace: str, name: str, *, runtime: str | None, replicas: int = 1) -> None:
    """A Deployment, and the rollout status its controller would write for it."""
    selector = {"app": name}
    template = {
        "metadata": {"labels": {**selector, **labels(runtime)}},
        "spec": {"containers": [{"name": "server", "image": "registry.example.com/runtime:CHANGEME"}]},
    }
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(runtime)},
        "spec": {"replicas": replicas, "selector": {"matchLabels": selector}, "template": template},
    }
    generation = client.apply(DEPLOYMENT, body, field_manager=LOADER)["metadata"]["generation"]
    status = {
        "observedGeneration": generation,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
    }
    client.apply(
        DEPLOYMENT,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "status": status,
        },
        field_manager=DEPLOYMENT_CONTROLLER,
        subresource="status",
    )


def a_config_map(client: KubeClient, namespace: str, name: str, *, runtime: str | None) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(runtime)},
        "data": {"k": "v"},
    }
    client.apply(CONFIG_MAP, body, field_manager=LOADER)


def a_pod(
    client: KubeClient,
    namespace: str,
    name: str,
    *,
    pod_labels: dict[str, str],
    double: HealthDouble | None = None,
    port_name: str = "http",
    ready: bool = True,
) -> None:
    """A Pod, reported Running (and Ready, unless `ready` is False) at the double's address, declaring its port as `port_name`."""
    container: dict[str, Any] = {"name": "server", "image": "registry.example.com/runtime:CHANGEME"}
    if double is not None:
        container["ports"] = [{"name": port_name, "containerPort": double.port}]
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": pod_labels},
        "spec": {"automountServiceAccountToken": False, "containers": [container]},
    }
    client.apply(POD, body, field_manager=LOADER)
    address = double.host if double is not None else "10.96.0.10"
    status = {
        "phase": "Running",
        "podIP": address,
        "podIPs": [{"ip": address}],
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    client.apply(
        POD,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "status": status},
        field_manager=KUBELET,
        subresource="status",
    )


def realtime() -> dict[str, str]:
    return labels("realtime", **{"appliance.magicstick.dev/activation": "omni"})


def names_in(objects: list[dict[str, Any]], namespace: str) -> list[str]:
    return sorted(
        f"{o['kind']}/{o['metadata']['name']}" for o in objects if o["metadata"].get("namespace") == namespace
    )


# --- what is listed ----------------------------------------------------------------------------


def test_the_reader_lists_the_labelled_deployments_pods_and_config_maps_of_a_target_namespace_and_ignores_unlabelled_ones(
    namespace: str, target: str, admin: KubeClient
):
    a_deployment(admin, target, "omni", runtime="realtime")
    a_deployment(admin, target, "someone-elses", runtime=None)
    a_pod(admin, target, "omni-0", pod_labels=realtime())
    a_pod(admin, target, "someone-elses-0", pod_labels={"app": "other"})
    a_config_map(admin, target, "omni-stages", runtime="realtime")
    a_config_map(admin, target, "someone-elses", runtime=None)

    live = read_live_objects(admin, namespace)

    assert names_in(live.objects, target) == ["ConfigMap/omni-stages", "Deployment/omni", "Pod/omni-0"]


def test_a_runtime_deployment_reads_into_a_workload_with_its_rollout(
    namespace: str, target: str, admin: KubeClient, admin_access: KubeAccess
):
    a_deployment(admin, target, "tokens", runtime="freetoken", replicas=2)

    snapshot = read_snapshot(admin_access, system_namespace=namespace, probes=UNBOUNDED)

    (workload,) = [w for w in snapshot.workloads if w.meta.namespace == target]
    assert (workload.meta.name, workload.meta.labels[RUNTIME_LABEL]) == ("tokens", "freetoken")
    assert (
        workload.observed_generation,
        workload.replicas,
        workload.updated_replicas,
        workload.available_replicas,
    ) == (
        workload.meta.generation,
        2,
        2,
        2,
    )
    assert workload.desired_replicas == 2


def test_a_pod_with_both_the_kubeai_model_label_and_the_runtime_label_is_read_once(
    namespace: str, target: str, admin: KubeClient, admin_access: KubeAccess
):
    a_pod(admin, target, "both-0", pod_labels={"model": "qwen", **realtime()})

    assert names_in(read_live_objects(admin, namespace).objects, target) == ["Pod/both-0"]
    snapshot = read_snapshot(admin_access, system_namespace=namespace, probes=UNBOUNDED)
    assert [p.meta.name for p in snapshot.pods if p.meta.namespace == target] == ["both-0"]


def _requests_of_one_namespace(access: KubeAccess, namespace: str) -> int:
    with open_client(access) as client:
        read_objects(client, namespace_reads(namespace))
        return client.requests


def test_the_lists_of_a_target_namespace_do_not_grow_with_the_number_of_runtime_objects(
    target: str, admin: KubeClient, admin_access: KubeAccess
):
    a_deployment(admin, target, "omni-0", runtime="realtime")
    a_pod(admin, target, "omni-0-0", pod_labels=realtime())
    a_config_map(admin, target, "omni-0", runtime="realtime")
    with_one_of_each = _requests_of_one_namespace(admin_access, target)
    for index in range(1, 25):
        a_deployment(admin, target, f"omni-{index}", runtime="realtime")
        a_pod(admin, target, f"omni-{index}-0", pod_labels=realtime())
        a_config_map(admin, target, f"omni-{index}", runtime="realtime")

    assert _requests_of_one_namespace(admin_access, target) == with_one_of_each
    lists = len(namespace_reads(target))
    assert with_one_of_each - lists == len({(r.kind.group, r.kind.version) for r in namespace_reads(target)}), (
        "one discovery per API group"
    )


# --- the health of realtime Pods ---------------------------------------------------------------


def test_a_ready_realtime_pod_is_asked_its_health_once_through_the_pod_proxy(
    target: str, admin: KubeClient, admin_access: KubeAccess, start_health: StartHealth
):
    double = start_health()
    a_pod(admin, target, "omni-0", pod_labels=realtime(), double=double)

    seen = observe_health(admin_access, admin.list(POD, namespace=target), limits=UNBOUNDED)

    assert seen == (HealthObservation(namespace=target, pod="omni-0", healthy=True),)
    assert double.calls == Counter({"GET /health": 1})


def test_a_health_answer_in_plain_text_is_healthy(
    target: str, admin: KubeClient, admin_access: KubeAccess, start_health: StartHealth
):
    a_pod(admin, target, "omni-0", pod_labels=realtime(), double=start_health(body=b"OK"))

    (seen,) = observe_health(admin_access, admin.list(POD, namespace=target), limits=UNBOUNDED)

    assert seen.healthy is True


def test_a_health_answer_that_is_not_2xx_is_unhealthy_with_the_status(
    target: str, admin: KubeClient, admin_access: KubeAccess, start_health: StartHealth
):
    double = start_health(status=503, body=b"engine is not running")
    a_pod(admin, target, "omni-0", pod_labels=realtime(), double=double)

    (seen,) = observe_health(admin_access, admin.list(POD, namespace=target), limits=UNBOUNDED)

    assert (seen.pod, seen.healthy) == ("omni-0", False)
    assert seen.error == "GET health: 503 Service Unavailable: engine is not running"
    assert double.calls == Counter({"GET /health": 1}), "one attempt: a 5xx is not retried"


def test_a_realtime_pod_that_does_not_answer_in_time_is_unhealthy_with_the_cause(
    target: str, admin: KubeClient, admin_access: KubeAccess, start_health: StartHealth
):
    double = start_health(unresponsive=True)
    a_pod(admin, target, "omni-0", pod_labels=realtime(), double=double)

    (seen,) = observe_health(
        admin_access, admin.list(POD, namespace=target), limits=ProbeLimits(timeout_seconds=1.0, budget_seconds=NEVER)
    )

    assert (seen.healthy, seen.error) == (
        False,
        "GET health through the API server's pod proxy: timed out after 1 s (waiting for the answer)",
    )
    assert double.calls == Counter({"GET /health": 1})


def test_a_realtime_pod_still_unanswered_when_the_budget_runs_out_has_no_health_observation(
    target: str, admin: KubeClient, admin_access: KubeAccess, start_health: StartHealth
):
    answering, hung = start_health(), start_health(unresponsive=True)
    a_pod(admin, target, "omni-0", pod_labels=realtime(), double=answering)
    a_pod(admin, target, "omni-1", pod_labels=realtime(), double=hung)

    seen = observe_health(
        admin_access, admin.list(POD, namespace=target), limits=ProbeLimits(timeout_seconds=NEVER, budget_seconds=1.0)
    )

    assert seen == (HealthObservation(namespace=target, pod="omni-0", healthy=True),)


def test_no_more_realtime_pods_are_asked_at_once_than_the_parallelism_allows(
    target: str, admin: KubeClient, admin_access: KubeAccess, start_health: StartHealth
):
    doubles = [start_health(unresponsive=True) for _ in range(3)]
    for index, double in enumerate(doubles):
        a_pod(admin, target, f"omni-{index}", pod_labels=realtime(), double=double)

    seen = observe_health(
        admin_access,
        admin.list(POD, namespace=target),
        limits=ProbeLimits(timeout_seconds=NEVER, budget_seconds=1.0, parallelism=2),
    )

    assert seen == ()
    assert sum(sum(d.calls.values()) for d in doubles) == 2


def test_pods_that_are_not_ready_not_realtime_or_without_an_http_port_are_not_asked(
    target: str, admin: KubeClient, admin_access: KubeAccess, start_health: StartHealth
):
    doubles = {name: start_health() for name in ("starting", "freetoken", "no-http-port")}
    a_pod(admin, target, "starting", pod_labels=realtime(), double=doubles["starting"], ready=False)
    a_pod(admin, target, "freetoken", pod_labels=labels("freetoken"), double=doubles["freetoken"])
    a_pod(admin, target, "no-http-port", pod_labels=realtime(), double=doubles["no-http-port"], port_name="metrics")

    assert observe_health(admin_access, admin.list(POD, namespace=target), limits=UNBOUNDED) == ()
    assert all(not d.calls for d in doubles.values())


def test_the_live_snapshot_holds_the_health_of_the_realtime_pods_of_a_target_namespace(
    namespace: str, target: str, admin: KubeClient, admin_access: KubeAccess, start_health: StartHealth
):
    a_pod(admin, target, "omni-0", pod_labels=realtime(), double=start_health())

    snapshot = read_snapshot(admin_access, system_namespace=namespace, probes=UNBOUNDED)

    assert snapshot.health_of(target, "omni-0") == HealthObservation(namespace=target, pod="omni-0", healthy=True)


def test_a_captured_snapshot_file_keeps_the_health_observations(
    namespace: str, target: str, admin: KubeClient, admin_access: KubeAccess, start_health: StartHealth
):
    a_pod(admin, target, "omni-0", pod_labels=realtime(), double=start_health())
    a_pod(admin, target, "omni-1", pod_labels=realtime(), double=start_health(status=500, body=b"boom"))

    document = capture(admin_access, system_namespace=namespace, probes=UNBOUNDED)
    loaded = parse_snapshot_text(snapshot_text(document), source="captured.yaml")

    assert HEALTH_ANNOTATION in document["metadata"]["annotations"]
    assert [(h.pod, h.healthy, h.error) for h in loaded.snapshot.health if h.namespace == target] == [
        ("omni-0", True, ""),
        ("omni-1", False, "GET health: 500 Internal Server Error: boom"),
    ]
    assert loaded.snapshot == read_snapshot(admin_access, system_namespace=namespace, probes=UNBOUNDED)


# --- pure ------------------------------------------------------------------------------------


def pod_object(
    name: str, *, pod_labels: dict[str, str], containers: list[dict[str, Any]], ready: bool = True
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ai", "labels": pod_labels},
        "spec": {"containers": containers},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_the_health_port_is_the_port_named_http_of_the_first_container_that_declares_one():
    containers = [
        {"name": "sidecar", "ports": [{"name": "metrics", "containerPort": 9090}]},
        {"name": "server", "ports": [{"name": "grpc", "containerPort": 9000}, {"name": "http", "containerPort": 8091}]},
        {"name": "other", "ports": [{"name": "http", "containerPort": 8080}]},
    ]
    assert realtime_pods([pod_object("omni-0", pod_labels=realtime(), containers=containers)]) == (
        HealthTarget(namespace="ai", pod="omni-0", port=8091),
    )


def test_two_lists_that_select_one_object_keep_it_once_in_the_order_first_listed():
    pod = pod_object("both-0", pod_labels={"model": "qwen", **realtime()}, containers=[])
    other = pod_object("other-0", pod_labels=realtime(), containers=[])
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "both-0", "namespace": "ai"}}

    assert distinct([pod, other, dict(pod), config_map]) == [pod, other, config_map]
