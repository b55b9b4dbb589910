"""The dynamic providers the demo does not need, served by the real engine: the offloading store
entry, the direct runtime, the GPU validation run, the stale removal and the Pod recovery.

The world is tests/e2e/scenarios/dynamic_providers.yaml. As in test_demo_lifecycle.py, one stack
and one API server serve the module: the program's CRDs and Appliance/local come first (a first
`pulumi up` seeds the default modules), then the scenario's objects with their statuses, then
`pulumi up` and a pass of the controller stand-ins until nothing changes.

The API server runs no kubelet, no scheduler, no Job controller and no host agent, so this
module plays three more of them than tests/e2e/world.py does, each writing only what it writes:

- the host evidence timer: the scenario's evidence names the snapshot's Node UID, which a live
  API server never keeps (it assigns its own), so it is written again for the live Node;
- KubeAI and the kubelet for the evicted Pod: the scenario's Pod names the snapshot's Model UID
  as its controller, so it is created again under the live Model, then marked Failed through
  /status;
- the Job controller and the kubelet for the validation Jobs the provider creates: each Job's
  Pod ran its image and left the engine's JSON report as its termination message; the Job
  gets the conditions the Job controller writes when it ends (tests/live/test_gpu_validation.py).

The run's clock is fixed (`magicstick:now`, the render's `--now`) so that the host evidence,
written once with the scenario's `observedAt` (three minutes before), stays current for the
whole module however long the engine takes; a real run leaves the key unset while the timer
writes every few minutes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest

from api.host_evidence import HOST_EVIDENCE_ANNOTATION, evidence_document
from planning.hardware.validation import (
    COMPONENT,
    ENGINE_LABEL,
    HISTORY_CONFIG_MAP,
    HISTORY_KEY,
    RUNTIME_IMAGES_CONFIG_MAP,
    RUNTIME_IMAGES_KEY,
    RUNTIME_IMAGES_NAMESPACE,
    Stage,
    job_name,
    read_history,
    read_runtime_images,
)
from planning.models.direct import RUNTIME_LABEL
from planning.models.offloading import OFFLOADING_CONFIG_MAP, OFFLOADING_KEY, OFFLOADING_NAMESPACE
from providers.kinds import (
    CONFIG_MAP,
    DEPLOYMENT,
    JOB,
    KUBEAI_MODEL,
    KUSTOMIZATION,
    MODEL_ACTIVATION,
    NODE,
    POD,
    SERVICE,
)
from providers.kube import KubeClient, NotFound
from providers.profile_store import read_profiles
from services.reconcile_trigger.cleanup import delete_runtime
from tests.cluster.apiserver import ClusterInfo
from tests.e2e import lifecycle
from tests.e2e.engine import PulumiProject, Run
from tests.e2e.lifecycle import changes, resource_type
from tests.e2e.world import demo_documents, load_demo, play_controllers, prepare_cluster
from tests.live.ollama_double import OllamaDouble
from tests.live.world import write_status_as

SCENARIO: Final = Path(__file__).parent / "scenarios" / "dynamic_providers.yaml"
NOW: Final = "2026-01-01T12:00:00Z"
SYSTEM_NAMESPACE: Final = "ai-system"
MODEL_NAMESPACE: Final = "ai"
DYNAMIC: Final = "pulumi-python:dynamic/magicstick:"
DYNAMIC_TYPES: Final = {
    "offloading store entry": f"{DYNAMIC}OffloadingProfile",
    "direct runtime": f"{DYNAMIC}DirectRuntime",
    "GPU validation run": f"{DYNAMIC}GpuValidationRun",
    "stale removal": f"{DYNAMIC}StaleRemoval",
    "Pod recovery": f"{DYNAMIC}PodRecovery",
}
"""The dynamic providers tests/e2e/test_demo_lifecycle.py leaves to this module."""
MAX_ROUNDS: Final = 12
"""A bound for a loop that does not converge: the validation run adds a round per engine to
what the demo needs (tests/e2e/lifecycle.py MAX_ROUNDS)."""

# What the scenario holds (tests/e2e/scenarios/dynamic_providers.yaml)
STRIX_HALO_NODE: Final = "magicstick-node-1"
VALIDATION_REQUEST: Final = "e2e-dynamic-providers-1"
VALIDATION_ENGINES: Final = ("OLlama", "VLLM")
OFFLOADED: Final = "qwen-offloaded"
REALTIME: Final = "omni-cpu"
REALTIME_IMAGE: Final = "registry.example.com/vllm-omni-cpu:0.12.0"
STALE: Final = "operator-hermes"
RECOVERED_MODEL: Final = "qwen2505bcpu"
EVICTED_POD: Final = "qwen2505bcpu-6d5f7c9b8-x2k4p"

HOST_EVIDENCE_TIMER: Final = "magicstick-host-evidence"
KUBEAI: Final = "kubeai-controller"
KUBELET: Final = "kubelet"
JOB_CONTROLLER: Final = "job-controller"
VALIDATION_REPORTS: Final = {
    "ollama": {"gpuBuffersMi": 768, "arithmetic": True, "cpuFallback": False},
    "vllm": {"hip": True, "inference": True, "cpuFallback": False},
}
"""The JSON report each validation image writes to /dev/termination-log when it passes
(planning/hardware/validation.py `verdict`), by the Job's engine label."""

JsonObject = dict[str, Any]


# The controllers this scenario needs beyond tests/e2e/world.py's


def publish_host_evidence(kube: KubeClient, documents: list[JsonObject], node: str = STRIX_HALO_NODE) -> JsonObject:
    """Play the host evidence timer: the scenario's evidence of `node`, written again for the
    live Node (its UID, and the boot ID and kernel its status reports), fingerprinted. The
    evidence document written."""
    scenario = next(d for d in documents if d["kind"] == "Node" and d["metadata"]["name"] == node)
    seen = json.loads(scenario["metadata"]["annotations"][HOST_EVIDENCE_ANNOTATION])
    live = kube.get(NODE, node)
    info = live["status"]["nodeInfo"]
    document = evidence_document(
        node_uid=live["metadata"]["uid"],
        boot_id=info["bootID"],
        kernel=info["kernelVersion"],
        architecture=seen["architecture"],
        driver_ready=seen["driverReady"],
        pci_devices=tuple(seen["pciDevices"]),
        observed_at=seen["observedAt"],
    )
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node, "annotations": {HOST_EVIDENCE_ANNOTATION: json.dumps(document)}},
    }
    kube.apply(NODE, body, field_manager=HOST_EVIDENCE_TIMER, force=True)
    return document


def evict_model_pod(kube: KubeClient, documents: list[JsonObject], name: str = EVICTED_POD) -> JsonObject:
    """Play KubeAI and the kubelet: the scenario's Pod, controlled by the live Model, then ended
    with the status the scenario gives it: the copy `load_demo` put there is deleted first and
    created again by KubeAI's field manager, the status by the kubelet's. The live Pod."""
    pod = next(d for d in documents if d["kind"] == "Pod" and d["metadata"]["name"] == name)
    namespace = pod["metadata"]["namespace"]
    owner = pod["metadata"]["ownerReferences"][0]
    model = kube.get(KUBEAI_MODEL, owner["name"], namespace)
    try:
        kube.delete(POD, name, namespace)
    except NotFound:
        pass  # the garbage collector was first
    metadata = {
        "name": name,
        "namespace": namespace,
        "labels": dict(pod["metadata"]["labels"]),
        "ownerReferences": [{**owner, "uid": model["metadata"]["uid"]}],
    }
    kube.apply(
        POD, {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod["spec"]}, field_manager=KUBEAI
    )
    write_status_as(kube, pod, pod["status"], field_manager=KUBELET)
    return kube.get(POD, name, namespace)


def _finished(job: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or ()
    )


def image_digest_of(engine: str) -> str:
    """The digest the kubelet reports for the image an engine's validation Pod ran."""
    return "sha256:" + hashlib.sha256(f"{VALIDATION_REQUEST}/{engine}".encode()).hexdigest()


def finish_validation_jobs(kube: KubeClient, namespace: str = SYSTEM_NAMESPACE) -> int:
    """Play the Job controller and the kubelet for every GPU validation Job that has not ended:
    its Pod ran the Job's image to completion and left the engine's passing report; the Job is
    Complete. The number of Jobs finished."""
    finished = 0
    for job in kube.list(JOB, namespace=namespace, label_selector=f"app.kubernetes.io/component={COMPONENT}"):
        if _finished(job):
            continue
        name = job["metadata"]["name"]
        engine = job["metadata"]["labels"][ENGINE_LABEL]
        (container,) = job["spec"]["template"]["spec"]["containers"]
        image = container["image"]
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": name,
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-v4l1d",
                "namespace": namespace,
                "labels": {"job-name": name},
                "ownerReferences": [owner],
            },
            "spec": {
                "automountServiceAccountToken": False,
                "restartPolicy": "Never",
                "containers": [{"name": container["name"], "image": image}],
            },
        }
        kube.apply(POD, pod, field_manager=JOB_CONTROLLER)
        terminated = {"exitCode": 0, "reason": "Completed", "message": json.dumps(VALIDATION_REPORTS[engine])}
        ran = {
            "name": container["name"],
            "image": image,
            "imageID": f"{image.rsplit(':', 1)[0]}@{image_digest_of(engine)}",
            "ready": False,
            "restartCount": 0,
            "state": {"terminated": terminated},
        }
        kube.apply(
            POD,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod["metadata"]["name"], "namespace": namespace},
                "status": {"phase": "Succeeded", "containerStatuses": [ran]},
            },
            field_manager=KUBELET,
            subresource="status",
        )
        # The target condition first, then the terminal one: the API server refuses Complete
        # without SuccessCriteriaMet, and a finished Job without startTime and completionTime.
        conditions = [
            {
                "type": kind,
                "status": "True",
                "reason": "CompletionsReached",
                "lastTransitionTime": "2026-01-01T11:59:00Z",
            }
            for kind in ("SuccessCriteriaMet", "Complete")
        ]
        status = {
            "startTime": "2026-01-01T11:58:00Z",
            "completionTime": "2026-01-01T11:59:00Z",
            "succeeded": 1,
            "conditions": conditions,
        }
        kube.apply(
            JOB,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": namespace},
                "status": status,
            },
            field_manager=JOB_CONTROLLER,
            subresource="status",
        )
        finished += 1
    return finished


def converge_scenario(project: PulumiProject, kube: KubeClient, ollama: OllamaDouble) -> list[Run]:
    """tests/e2e/lifecycle.py `converge`, with the validation Jobs' controller among the
    stand-ins: `pulumi up` and a pass of the controllers until an up changes nothing and no
    controller writes."""
    runs = []
    for _ in range(MAX_ROUNDS):
        run = project.pulumi("up", "--yes", "--skip-preview", events=True)
        runs.append(run)
        played = play_controllers(kube, ollama) + finish_validation_jobs(kube)
        if not changes(run) and played == 0:
            return runs
    tail = "\n".join(runs[-1].stdout.splitlines()[-25:])
    raise AssertionError(f"no convergence in {MAX_ROUNDS} rounds; last changes: {changes(runs[-1])}\n{tail}")


# What the engine reported


def steps_of(runs: list[Run], type_: str) -> Iterator[tuple[str, str, JsonObject]]:
    """(URN, op, outputs) of every finished step of a `type_` resource in `runs`, in order; the
    outputs are those the provider returned, as the engine logged them (secrets blinded)."""
    for run in runs:
        for event in run.events:
            finished = event.get("resOutputsEvent")
            if finished is None:
                continue
            metadata = finished["metadata"]
            if resource_type(metadata["urn"]) == type_:
                yield metadata["urn"], metadata["op"], (metadata.get("new") or {}).get("outputs") or {}


def created(runs: list[Run], type_: str) -> list[JsonObject]:
    """The outputs of every `create` of a `type_` resource in `runs`."""
    return [outputs for _urn, op, outputs in steps_of(runs, type_) if op == "create"]


def state_types(project: PulumiProject) -> set[str]:
    return {resource["type"] for resource in project.export()["deployment"].get("resources") or ()}


# The stack's life


@pytest.fixture(scope="module")
def documents(engine_cluster: ClusterInfo, kube: KubeClient) -> list[JsonObject]:
    """The scenario, and the cluster as a user's is before the first `pulumi up`: the upstream
    CRDs the scenario shows served and the namespaces."""
    scenario = demo_documents(SCENARIO)
    prepare_cluster(engine_cluster, kube, scenario)
    return scenario


@pytest.fixture(scope="module")
def demo(documents: list[JsonObject]) -> list[JsonObject]:
    """conftest.py's `project` asks for `demo`: here it is this scenario, so that the module's
    API server serves the scenario's CRDs and not the demo's."""
    return documents


@pytest.fixture(scope="module")
def first_up(project: PulumiProject, engine_cluster: ClusterInfo, kube: KubeClient, documents: list[JsonObject]) -> Run:
    """As in test_demo_lifecycle.py: our CRDs and Appliance/local applied by the user, then the
    first `pulumi up`, which seeds the profile's default ModuleActivations."""
    project.config_set({"magicstick:now": NOW})
    return lifecycle.first_up(engine_cluster, kube, project, documents)


@pytest.fixture(scope="module")
def evicted(first_up: Run, kube: KubeClient, documents: list[JsonObject]) -> JsonObject:
    """The scenario's objects loaded, the host evidence published for the live Node, and the
    evicted Pod under the live Model: the evicted Pod as the API server holds it."""
    load_demo(kube, documents)
    publish_host_evidence(kube, documents)
    return evict_model_pod(kube, documents)


@pytest.fixture(scope="module")
def converged(evicted: JsonObject, project: PulumiProject, kube: KubeClient, ollama: OllamaDouble) -> list[Run]:
    return converge_scenario(project, kube, ollama)


def test_every_dynamic_provider_the_demo_leaves_out_is_served_by_the_engine_and_reports_no_problem(
    converged: list[Run],
):
    served = {resource_type(urn) for run in converged for urn in run.operations()}
    assert set(DYNAMIC_TYPES.values()) <= served, sorted(set(DYNAMIC_TYPES.values()) - served)
    for what, type_ in DYNAMIC_TYPES.items():
        outputs = created(converged, type_)
        assert outputs, f"no {what} ({type_}) was created"
        assert all(out.get("problem") == {} for out in outputs), f"{what}: {[out.get('problem') for out in outputs]}"


def test_a_second_up_expecting_no_changes_succeeds(converged: list[Run], project: PulumiProject):
    run = project.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", events=True)
    assert changes(run) == {}


def test_the_offloading_store_holds_the_models_profile_and_its_model_runs_on_it(converged: list[Run], kube: KubeClient):
    (entry,) = created(converged, DYNAMIC_TYPES["offloading store entry"])
    store = kube.get(CONFIG_MAP, OFFLOADING_CONFIG_MAP, OFFLOADING_NAMESPACE)
    stored = read_profiles(store, key=OFFLOADING_KEY)
    assert stored[entry["profileName"]] == entry["profile"]
    assert entry["profile"]["requests"]["memory"] == entry["profile"]["limits"]["memory"] == "24576Mi"
    model = kube.get(KUBEAI_MODEL, OFFLOADED, MODEL_NAMESPACE)
    assert model["spec"]["resourceProfile"] == f"{entry['profileName']}:1"
    assert "--cpu-offload-gb=8" in model["spec"].get("args", ())


def test_the_direct_runtime_applied_its_stage_config_map_service_and_deployment(converged: list[Run], kube: KubeClient):
    (runtime,) = created(converged, DYNAMIC_TYPES["direct runtime"])
    assert [(obj["kind"], obj["metadata"]["name"]) for obj in runtime["objects"]] == [
        ("ConfigMap", f"{REALTIME}-stages"),
        ("Service", REALTIME),
        ("Deployment", REALTIME),
    ]
    for kind, name in ((CONFIG_MAP, f"{REALTIME}-stages"), (SERVICE, REALTIME), (DEPLOYMENT, REALTIME)):
        live = kube.get(kind, name, MODEL_NAMESPACE)
        assert live["metadata"]["labels"][RUNTIME_LABEL] == "realtime", f"{kind.kind}/{name}"
        assert "magicstick" in {entry["manager"] for entry in live["metadata"]["managedFields"]}, f"{kind.kind}/{name}"
    deployment = kube.get(DEPLOYMENT, REALTIME, MODEL_NAMESPACE)
    assert [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]] == [REALTIME_IMAGE]


def test_the_gpu_validation_run_ran_each_engine_in_its_job_and_recorded_the_verdicts_and_the_images(
    converged: list[Run], kube: KubeClient
):
    outputs = [
        out for _urn, op, out in steps_of(converged, DYNAMIC_TYPES["GPU validation run"]) if op in ("create", "update")
    ]
    assert outputs[-1]["complete"] is True
    assert outputs[-1]["stages"] == {engine: Stage.PASSED.value for engine in VALIDATION_ENGINES}
    for engine in VALIDATION_ENGINES:
        job = kube.get(JOB, job_name(VALIDATION_REQUEST, engine), SYSTEM_NAMESPACE)
        assert "magicstick-gpu-validation" in {entry["manager"] for entry in job["metadata"]["managedFields"]}
    history = kube.get(CONFIG_MAP, HISTORY_CONFIG_MAP, SYSTEM_NAMESPACE)
    record = read_history(history["data"][HISTORY_KEY]).runs[VALIDATION_REQUEST]
    assert record.finished
    assert {e.engine: (e.stage, e.image_id.rsplit("@", 1)[-1]) for e in record.engines} == {
        engine: (Stage.PASSED, image_digest_of(engine.lower())) for engine in VALIDATION_ENGINES
    }
    assert (
        record.host.node == STRIX_HALO_NODE
        and record.host.node_uid == kube.get(NODE, STRIX_HALO_NODE)["metadata"]["uid"]
    )
    images = kube.get(CONFIG_MAP, RUNTIME_IMAGES_CONFIG_MAP, RUNTIME_IMAGES_NAMESPACE)
    published = read_runtime_images(images["data"][RUNTIME_IMAGES_KEY])
    assert {engine: image.rsplit("@", 1)[-1] for engine, image in published.items()} == {
        engine: image_digest_of(engine.lower()) for engine in VALIDATION_ENGINES
    }


def test_the_stale_kustomization_was_removed_under_its_uid_and_its_removal_then_left_the_state(
    converged: list[Run], kube: KubeClient, project: PulumiProject
):
    (removal,) = created(converged, DYNAMIC_TYPES["stale removal"])
    assert (removal["kind"], removal["namespace"], removal["name"], removal["outcome"]) == (
        "Kustomization",
        "flux-system",
        STALE,
        "Removed",
    )
    assert kube.get_or_none(KUSTOMIZATION, STALE, "flux-system") is None
    assert _deleted(converged, DYNAMIC_TYPES["stale removal"])
    assert DYNAMIC_TYPES["stale removal"] not in state_types(project)


def test_the_evicted_pod_was_deleted_exactly_and_its_recovery_then_left_the_state(
    converged: list[Run], kube: KubeClient, project: PulumiProject, evicted: JsonObject
):
    (recovery,) = created(converged, DYNAMIC_TYPES["Pod recovery"])
    assert (recovery["pod"], recovery["podUID"], recovery["attempt"], recovery["outcome"]) == (
        EVICTED_POD,
        evicted["metadata"]["uid"],
        1,
        "Deleted",
    )
    assert kube.get_or_none(POD, EVICTED_POD, MODEL_NAMESPACE) is None
    running = [
        pod
        for pod in kube.list(POD, namespace=MODEL_NAMESPACE)
        if pod["metadata"]["labels"].get("model") == RECOVERED_MODEL and pod["status"].get("phase") == "Running"
    ]
    assert running, "KubeAI started a fresh Pod for the Model"
    assert _deleted(converged, DYNAMIC_TYPES["Pod recovery"])
    assert DYNAMIC_TYPES["Pod recovery"] not in state_types(project)


def _deleted(runs: list[Run], type_: str) -> bool:
    """Whether a later run deleted a `type_` resource from the stack (its `delete` does nothing
    in the cluster: the removal was an event, and the plan stopped declaring it)."""
    return any(resource_type(urn) == type_ and op == "delete" for run in runs for urn, op in run.operations().items())


def test_a_direct_runtime_the_reconcile_trigger_removed_with_its_activation_leaves_the_state_at_a_refresh(
    converged: list[Run], kube: KubeClient, project: PulumiProject, ollama: OllamaDouble
):
    """What the trigger's runtime cleanup leaves behind (services/reconcile_trigger/cleanup.py,
    its own `delete_runtime`): the runtime's objects deleted, then the activation gone. A
    refresh reads the runtime as gone, and the next runs converge without an error and without
    applying it again. Last in the module: it deletes the scenario's realtime activation."""
    removal = delete_runtime(kube, REALTIME, [MODEL_NAMESPACE])
    assert sorted(removal.deleted) == [
        f"ConfigMap {MODEL_NAMESPACE}/{REALTIME}-stages",
        f"Deployment {MODEL_NAMESPACE}/{REALTIME}",
        f"Service {MODEL_NAMESPACE}/{REALTIME}",
    ]
    kube.delete(MODEL_ACTIVATION, REALTIME, SYSTEM_NAMESPACE)

    project.pulumi("refresh", "--yes", "--skip-preview")
    assert DYNAMIC_TYPES["direct runtime"] not in state_types(project)

    converge_scenario(project, kube, ollama)
    assert DYNAMIC_TYPES["direct runtime"] not in state_types(project)
    for kind, name in ((CONFIG_MAP, f"{REALTIME}-stages"), (SERVICE, REALTIME), (DEPLOYMENT, REALTIME)):
        assert kube.get_or_none(kind, name, MODEL_NAMESPACE) is None, f"{kind.kind}/{name}"
