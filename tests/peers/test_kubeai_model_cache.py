"""KubeAI's own controller loads a cached Model once, and every replica reads the cache.

The program's render of the demo (one node: the cache node) declares the model cache's volumes
and a vLLM Model with `cacheProfile: magicstick-model-cache`. Here they meet KubeAI v0.22.1's
controller, configured by `helm template` of the vendored chart with the release's values (whose
`cacheProfiles` names the volume), and kube-controller-manager's own persistent-volume binder and
Job controller. What is played is only what a kubelet does: a Job's Pod is marked Succeeded
(as a loader that finished its download), a model Pod Running and Ready.

Shown with KubeAI's own objects: the claim KubeAI creates binds the program's volume; one loader
Job downloads into `models/<model>-<uid>`; KubeAI then reports `status.cache.loaded`, which the
program's reader turns into `modelCache.state: Loaded`; a second replica mounts the same folder
read-only and no second loader Job runs. Deleting the Model runs KubeAI's eviction Job first.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from cli.render import render
from planning.models.model_cache import CACHE_PROFILE, HUGGINGFACE_VOLUME
from planning.snapshot import Snapshot
from providers.kinds import JOB, KUBEAI_MODEL, PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, POD
from providers.kube import KubeClient
from tests.e2e.lifecycle import GARBAGE_COLLECTION
from tests.live.world import write_status_as
from tests.peers.kubeai_chart import RELEASE_NAMESPACE
from tests.peers.kubeai_controller import KubeAIController
from tests.peers.scene import DEMO, NOW
from tests.support.watching import watch_collection_until, watch_until, watch_until_gone

JsonObject = dict[str, Any]
ENGINE: Final = "magicstick"
KUBELET: Final = "kubelet"
WAIT_SECONDS: Final = 60.0
CACHED_MODEL: Final = "qwen2505bcpu"
"""The demo's vLLM model (hf://): the one the program gives the cache profile."""
CACHE_CLAIM: Final = f"shared-model-cache-{CACHE_PROFILE}"
"""The claim KubeAI creates for a shared-filesystem cache profile."""
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
KUBEAI_CLUSTER_CONTROLLERS: Final = (*GARBAGE_COLLECTION, "persistentvolume-binder", "job")
"""Beside the garbage collector, the real binder of claims to volumes and the real Job controller."""


@pytest.fixture(scope="module")
def demo_render(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program's render of the demo snapshot as it is: one Linux node, the cache node."""
    out = tmp_path_factory.mktemp("demo") / "out"
    render(snapshot=DEMO, out=out, now=NOW)
    return out / "resources"


@contextlib.contextmanager
def finishing_jobs(client: KubeClient) -> Iterator[list[str]]:
    """Play the kubelet for Job Pods: each Pod the Job controller creates is marked Succeeded, as
    a loader or evictor that finished. Yields the names of the Jobs whose Pods it finished."""
    finished: list[str] = []
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            for pod in client.list(POD, namespace=RELEASE_NAMESPACE):
                job = pod["metadata"].get("labels", {}).get(JOB_NAME_LABEL)
                if job is None or pod.get("status", {}).get("phase") == "Succeeded":
                    continue
                if pod["metadata"].get("deletionTimestamp"):
                    continue
                with contextlib.suppress(Exception):  # a Pod deleted meanwhile: the next round sees it gone
                    write_status_as(client, pod, _succeeded(pod), field_manager=KUBELET)
                    finished.append(job)
            stop.wait(0.2)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    try:
        yield finished
    finally:
        stop.set()
        worker.join()


def _succeeded(pod: Mapping[str, Any]) -> JsonObject:
    now = "2026-12-04T00:00:00Z"
    return {
        "phase": "Succeeded",
        "startTime": now,
        "conditions": [{"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": now}],
        "containerStatuses": [
            {
                "name": container["name"],
                "image": container["image"],
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}},
            }
            for container in pod["spec"]["containers"]
        ],
    }


def _wait_for_model_pods(client: KubeClient, count: int, controller: KubeAIController) -> list[JsonObject]:
    """Once the cached Model has `count` server Pods (the loader Job's Pods not counted), those."""
    return watch_collection_until(
        client,
        POD,
        RELEASE_NAMESPACE,
        lambda pods: (
            servers
            if len(servers := [p for p in pods if JOB_NAME_LABEL not in p["metadata"]["labels"]]) == count
            else None
        ),
        WAIT_SECONDS,
        label_selector=f"model={CACHED_MODEL}",
        explain=controller.log_tail,
    )


def _rendered(resources: Path, pattern: str) -> list[JsonObject]:
    return [yaml.safe_load(path.read_text()) for path in sorted(resources.glob(pattern))]


def _declare(client: KubeClient, kind: Any, obj: Mapping[str, Any]) -> JsonObject:
    """As the program's engine applies it: server-side apply under its field manager."""
    body = {key: obj[key] for key in ("apiVersion", "kind", "metadata", "spec") if key in obj}
    return client.apply(kind, body, field_manager=ENGINE)


def _cache_mount(pod: Mapping[str, Any]) -> tuple[str, JsonObject]:
    """(the claim of the Pod's `models` volume, the server container's mount of it)."""
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "models"]
    (server,) = [c for c in pod["spec"]["containers"] if c["name"] == "server"]
    (mount,) = [m for m in server.get("volumeMounts", []) if m["name"] == "models"]
    return volume["persistentVolumeClaim"]["claimName"], mount


def test_a_cached_model_is_loaded_once_and_every_replica_reads_the_cache(
    demo_render: Path, kubeai_admin: KubeClient, kubeai_controller: KubeAIController
):
    admin, controller = kubeai_admin, kubeai_controller
    assert {v["metadata"]["name"] for v in _rendered(demo_render, "persistentvolume.*.yaml")} >= {HUGGINGFACE_VOLUME}
    for volume in _rendered(demo_render, "persistentvolume.*.yaml"):
        _declare(admin, PERSISTENT_VOLUME, volume)
    for claim in _rendered(demo_render, "persistentvolumeclaim.*.yaml"):
        _declare(admin, PERSISTENT_VOLUME_CLAIM, claim)
    (model,) = [m for m in _rendered(demo_render, "model.*.yaml") if m["metadata"]["name"] == CACHED_MODEL]
    assert model["spec"]["cacheProfile"] == CACHE_PROFILE

    with finishing_jobs(admin) as finished:
        _declare(admin, KUBEAI_MODEL, model)

        claim = watch_until(
            admin,
            PERSISTENT_VOLUME_CLAIM,
            RELEASE_NAMESPACE,
            CACHE_CLAIM,
            lambda c: c.get("status", {}).get("phase") == "Bound",
            WAIT_SECONDS,
            explain=controller.log_tail,
        )
        assert claim["spec"]["volumeName"] == HUGGINGFACE_VOLUME

        live = watch_until(
            admin,
            KUBEAI_MODEL,
            RELEASE_NAMESPACE,
            CACHED_MODEL,
            lambda m: bool(m.get("status", {}).get("cache", {}).get("loaded")),
            WAIT_SECONDS,
            explain=controller.log_tail,
        )
        assert finished.count(f"load-cache-{CACHED_MODEL}") == 1
        folder = f"/models/{CACHED_MODEL}-{live['metadata']['uid']}"
        assert Snapshot.from_objects([live]).model(RELEASE_NAMESPACE, CACHED_MODEL).cache_loaded  # type: ignore[union-attr]

        (first,) = _wait_for_model_pods(admin, 1, controller)
        scaled = {**model, "spec": {**model["spec"], "minReplicas": 2, "maxReplicas": 2}}
        _declare(admin, KUBEAI_MODEL, scaled)
        pods = _wait_for_model_pods(admin, 2, controller)
        for pod in pods:
            claim_name, mount = _cache_mount(pod)
            assert claim_name == CACHE_CLAIM
            assert (mount["mountPath"], mount["subPath"], mount.get("readOnly")) == (folder, folder[1:], True)
            (server,) = [c for c in pod["spec"]["containers"] if c["name"] == "server"]
            assert f"--model={folder}" in server["args"]
        assert finished.count(f"load-cache-{CACHED_MODEL}") == 1, finished
        assert [j["metadata"]["name"] for j in admin.list(JOB, namespace=RELEASE_NAMESPACE)] == []

        admin.delete(KUBEAI_MODEL, CACHED_MODEL, RELEASE_NAMESPACE)
        watch_until_gone(admin, KUBEAI_MODEL, RELEASE_NAMESPACE, CACHED_MODEL, WAIT_SECONDS)
        assert f"evict-cache-{CACHED_MODEL}" in finished
    assert first["metadata"]["name"] in {p["metadata"]["name"] for p in pods}
