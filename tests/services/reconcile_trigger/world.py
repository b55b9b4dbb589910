"""The trigger's world in the test API server: the PKO Stack, the objects it watches, bounded waits.

Tests play the controllers: they write a Kustomization's Ready status as Flux would, a Pod's
as the kubelet would, a Node's heartbeat, the program's own status writes, PKO's Stalled.
Every wait polls a condition with a short pause and a deadline; none times the trigger.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

from api.meta import API_VERSION
from providers.kinds import CRD
from providers.kube import KubeClient, NotFound, ResourceKind, TooManyRequests
from services.reconcile_trigger.stack import RECONCILIATION_REQUEST, STACK, Backoff, StackRef
from services.reconcile_trigger.trigger import ReconcileTrigger, Timing
from services.reconcile_trigger.watcher import WatchTiming
from services.reconcile_trigger.watches import WatchTarget
from tests.cluster.apiserver import ClusterInfo, install_crds
from tests.support.vendored import VENDORED_CRDS

STACK_CRD_FILE: Final = VENDORED_CRDS / "pulumi-kubernetes-operator" / "pulumi.com_stacks.yaml"
STACK_CRD_NAME: Final = "stacks.pulumi.com"
STACK_NAME: Final = "magicstick"
LOADER: Final = "reconcile-trigger-tests"
PROGRAM_STATUS: Final = "magicstick-status"
"""The field manager of the program's status writes (providers/status_writer.py)."""
FLUX: Final = "kustomize-controller"
KUBELET: Final = "kubelet"
PKO: Final = "pulumi-kubernetes-operator"

FAST: Final = Timing(
    quiet_seconds=0.05,
    max_delay_seconds=0.2,
    churn_backoff=Backoff(0.2, 30.0),
    watch=WatchTiming(timeout_seconds=60, read_deadline_seconds=75.0, backoff=Backoff(0.05, 0.5)),
    request_backoff=Backoff(0.05, 0.5),
    stall_backoff=Backoff(0.25, 2.0),
    stall_poll_seconds=0.02,
    stop_seconds=5.0,
    cleanup_backoff=Backoff(0.05, 0.5),
)
"""Small numbers of the same shape as the defaults, so tests run in moments."""
DEADLINE: Final = 20.0

T = TypeVar("T")


def eventually(trigger: ReconcileTrigger, check: Callable[[], T], *, what: str, timeout: float = DEADLINE) -> T:
    """`check()` once it returns something truthy, looked at after each change the trigger
    reports (ReconcileTrigger.progress); AssertionError naming `what` after `timeout` s."""
    result = trigger.progress.wait_for(check, timeout)
    if not result:
        raise AssertionError(f"not within {timeout:g} s: {what}")
    return result


def stack_request_after(
    client: KubeClient, stack: StackRef, previous: str | None = None, *, timeout: int = int(DEADLINE)
) -> str:
    """The Stack's reconciliation request once it is set and differs from `previous`, watched
    on the API server (the trigger may run in another process); AssertionError after `timeout` s."""
    current = client.get(STACK, stack.name, stack.namespace)
    found: str | None = (current["metadata"].get("annotations") or {}).get(RECONCILIATION_REQUEST)
    if found is not None and found != previous:
        return found
    with client.watch(
        STACK,
        namespace=stack.namespace,
        resource_version=current["metadata"]["resourceVersion"],
        timeout_seconds=timeout,
    ) as stream:
        for event in stream:
            metadata = event.object.get("metadata") or {}
            request: str | None = (metadata.get("annotations") or {}).get(RECONCILIATION_REQUEST)
            if metadata.get("name") == stack.name and request is not None and request != previous:
                return request
    raise AssertionError(f"not within {timeout} s: a reconciliation request of Stack {stack} other than {previous}")


def serving_watches(client: KubeClient, targets: Iterable[WatchTarget], *, timeout: float = DEADLINE) -> None:
    """Wait until the server opens a watch of each target's kind. A CRD just installed answers
    429 `storage is (re)initializing` until the server's cache of its objects is filled; a
    trigger started before would count that as a failure. Each attempt is a request the server
    answers: its answer paces the loop. A kind not served is skipped."""
    deadline = time.monotonic() + timeout
    for target in targets:
        while True:
            try:
                version = client.list_collection(
                    target.kind, namespace=target.namespace, label_selector=target.label_selector
                ).resource_version
                with client.watch(
                    target.kind, namespace=target.namespace, resource_version=version, timeout_seconds=1
                ) as stream:
                    stream.abort()
                break
            except NotFound:
                break
            except TooManyRequests:
                if time.monotonic() > deadline:
                    raise AssertionError(f"not within {timeout:g} s: the server watches {target}") from None


def ensure_stack_crd(cluster: ClusterInfo, client: KubeClient) -> None:
    """The vendored PKO Stack CRD, installed as it is unless the cluster serves it already."""
    if client.get_or_none(CRD, STACK_CRD_NAME) is not None:
        return
    install_crds(cluster, [STACK_CRD_FILE])


def stack_body(namespace: str, name: str = STACK_NAME) -> dict[str, Any]:
    return {
        "apiVersion": "pulumi.com/v1",
        "kind": "Stack",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "stack": "organization/magicstick/test",
            "projectRepo": "https://git.example.com/CHANGEME/magicstick.git",
            "branch": "main",
        },
    }


def create_stack(client: KubeClient, namespace: str, name: str = STACK_NAME) -> StackRef:
    client.apply(STACK, stack_body(namespace, name), field_manager=LOADER)
    return StackRef(namespace, name)


def request_annotation(client: KubeClient, stack: StackRef) -> str | None:
    annotations = client.get(STACK, stack.name, stack.namespace)["metadata"].get("annotations") or {}
    return annotations.get(RECONCILIATION_REQUEST)


def stalled_condition() -> dict[str, Any]:
    """PKO's Stalled condition (a metav1.Condition) as v2.9.0 writes it after its third failed
    update (tests/node/test_pko_stack.py sees the real one): no observedGeneration of its own,
    the Stack's is `status.observedGeneration`."""
    return {
        "type": "Stalled",
        "status": "True",
        "reason": "UpdateFailed",
        "message": "up failed 3 times; not retrying until the spec or source changes",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def ready_condition() -> dict[str, Any]:
    """PKO's Ready condition after a successful update (it removes Stalled then), as v2.9.0 writes it."""
    return {
        "type": "Ready",
        "status": "True",
        "reason": "ProcessingCompleted",
        "message": "the stack has been processed and is up to date",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def write_status(
    client: KubeClient, kind: ResourceKind, obj: Mapping[str, Any], status: Mapping[str, Any], *, field_manager: str
) -> str:
    """Server-side apply `status` through /status, as the controller `field_manager`; the new resourceVersion."""
    metadata = {"name": obj["metadata"]["name"]}
    if obj["metadata"].get("namespace"):
        metadata["namespace"] = obj["metadata"]["namespace"]
    body = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": metadata, "status": dict(status)}
    return version_of(client.apply(kind, body, field_manager=field_manager, subresource="status"))


def version_of(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["resourceVersion"])


def model_activation(namespace: str, name: str, *, preset: str = "qwen2505bcpu") -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelActivation",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "type": "local",
            "enabled": True,
            "local": {"preset": preset, "computeTarget": "cpu", "engine": "VLLM"},
        },
    }


def local_activation(namespace: str, name: str, local: dict[str, Any], *, target_namespace: str) -> dict[str, Any]:
    """A local ModelActivation with `local` as its spec.local, run in `target_namespace`."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelActivation",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"type": "local", "targetNamespace": target_namespace, "local": local},
    }


def realtime_activation(namespace: str, name: str, *, target_namespace: str) -> dict[str, Any]:
    """A ModelActivation the program runs as the realtime vLLM-Omni runtime, in `target_namespace`."""
    local = {
        "url": "hf://Qwen/Qwen2.5-Omni-7B",
        "computeTarget": "nvidia-gpu",
        "engine": "VLLM",
        "realtime": {"profile": "omni-cuda", "gpuNode": "gpu-1"},
    }
    return local_activation(namespace, name, local, target_namespace=target_namespace)


def freetoken_activation(namespace: str, name: str, *, target_namespace: str) -> dict[str, Any]:
    """A ModelActivation the program runs as the FreeToken runtime, in `target_namespace`."""
    local = {"url": "hf://example/moe-35b", "computeTarget": "nvidia-gpu", "engine": "FreeToken"}
    return local_activation(namespace, name, local, target_namespace=target_namespace)


def kustomization(name: str, namespace: str = "flux-system") -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "interval": "10m",
            "path": "./modules/example",
            "prune": True,
            "sourceRef": {"kind": "GitRepository", "name": "magicstick"},
        },
    }


def flux_ready(generation: int) -> dict[str, Any]:
    revision = "main@sha1:0123456789abcdef0123456789abcdef01234567"
    return {
        "observedGeneration": generation,
        "lastAppliedRevision": revision,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "ReconciliationSucceeded",
                "message": f"Applied revision: {revision}",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "observedGeneration": generation,
            }
        ],
    }


def model_pod(namespace: str, name: str, model: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"model": model}},
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [{"name": "server", "image": "registry.example.com/model:CHANGEME"}],
        },
    }


def pod_ready() -> dict[str, Any]:
    return {
        "phase": "Running",
        "podIP": "10.96.0.10",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    }


def crash_looping(restarts: int) -> dict[str, Any]:
    """A model Pod's status as the kubelet writes it while its container crash-loops: waiting in
    CrashLoopBackOff after its `restarts`-th failure. Only the restart count moves between two."""
    return {
        "phase": "Running",
        "podIP": "10.96.0.10",
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "ContainersNotReady",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "containerStatuses": [
            {
                "name": "server",
                "image": "registry.example.com/model:CHANGEME",
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": restarts,
                "state": {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": "back-off 10s restarting failed container=server",
                    }
                },
                "lastState": {
                    "terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "startedAt": "2026-01-01T00:00:00Z",
                        "finishedAt": "2026-01-01T00:00:01Z",
                    }
                },
            }
        ],
    }


def restarted(restarts: int) -> dict[str, Any]:
    """The same Pod's status right after its `restarts`-th restart: running again, not ready yet."""
    status = crash_looping(restarts)
    (container,) = status["containerStatuses"]
    container.update(started=True, state={"running": {"startedAt": "2026-01-01T00:00:02Z"}})
    return status


def node(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})}}


def node_heartbeat(at: str) -> dict[str, Any]:
    """A kubelet's periodic node status: the Ready condition's heartbeat moves, nothing else."""
    return {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": at,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
    }


def config_map(namespace: str, name: str, data: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": dict(data),
    }


def handled(
    trigger: ReconcileTrigger, kind: ResourceKind, namespace: str | None, version: str, selector: str | None = None
) -> None:
    """Wait until the watch of `kind` in `namespace` has handled `version` (an etcd revision:
    comparable as a number on this server)."""
    (watcher,) = [
        w
        for w in trigger.watchers
        if w.target.kind == kind and w.target.namespace == namespace and w.target.label_selector == selector
    ]
    eventually(
        trigger,
        lambda: watcher.resource_version is not None and int(watcher.resource_version) >= int(version),
        what=f"the watch of {watcher.target} handles resourceVersion {version}",
    )


def settled(
    trigger: ReconcileTrigger, kind: ResourceKind, namespace: str | None, version: str, selector: str | None = None
) -> None:
    """`handled`, and then the trigger has nothing left to request."""
    handled(trigger, kind, namespace, version, selector)
    eventually(trigger, trigger.idle, what="the trigger has nothing left to request")
