"""GPU validation runs against a real API server: the history store's compare-and-swap, the Jobs'
server-side dry run, one Job at a time, resume after a restart, verdicts from the Pod.

No Job controller and no kubelet run here: the tests play them, writing the Job's conditions
through /status and creating its Pod with the container status a kubelet would report.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from planning.hardware.validation import (
    HISTORY_CONFIG_MAP,
    HISTORY_KEY,
    RUNTIME_IMAGES_CONFIG_MAP,
    RUNTIME_IMAGES_KEY,
    EngineRun,
    HostIdentity,
    PodSecurity,
    RunRecord,
    Stage,
    job_name,
    read_history,
    read_runtime_images,
    validation_job,
)
from providers.gpu_stores import bootstrap_history, put_run, put_runtime_image, read_run
from providers.gpu_validation import GpuValidationHistoryProvider, GpuValidationProvider
from providers.kinds import CONFIG_MAP, JOB, POD
from providers.kube import KubeAccess, KubeClient, open_client
from providers.outcomes import ProblemReason
from tests.live.test_pod_recovery import SERVICE_ACCOUNT
from tests.providers.engine import configured, kubeconfig_config

WRITERS = 20
CONTROLLER = "job-controller"
OLLAMA_IMAGE = "registry.example.com/magicstick/ollama-rocm-validation:1.0"
VLLM_IMAGE = "registry.example.com/magicstick/vllm-rocm-validation:1.0"
DIGEST = "sha256:" + "b" * 64
HOST = HostIdentity(node="halo", node_uid="uid-halo", boot_id="boot-1", fingerprint="sha256:host")


def inputs(
    namespace: str,
    run_id: str = "run-1",
    *,
    host: HostIdentity = HOST,
    host_current: bool = True,
    current: HostIdentity | None = None,
) -> dict[str, Any]:
    return {
        "runId": run_id,
        "profileId": "strix-halo",
        "profileVersion": "1",
        "host": host.to_wire(),
        "hostCurrent": host_current,
        "currentHost": (current or host).to_wire() if host_current or current else None,
        "engines": [
            {"engine": "OLlama", "image": OLLAMA_IMAGE, "timeoutSeconds": 900},
            {"engine": "VLLM", "image": VLLM_IMAGE, "timeoutSeconds": 1800},
        ],
        "security": {e: {"runAsUser": 1000, "supplementalGroups": [44]} for e in ("OLlama", "VLLM")},
        "namespace": namespace,
        "historyNamespace": namespace,
        "device": "",
        "runtimeImagesNamespace": namespace,
    }


def provider(access: KubeAccess) -> GpuValidationProvider:
    assert access.kubeconfig is not None
    return configured(GpuValidationProvider(), kubeconfig_config(access.kubeconfig))


def delete_job(client: KubeClient, namespace: str, name: str) -> None:
    """Someone deletes the Job (no garbage collector here: background propagation, no finalizer)."""
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
    client.request("DELETE", JOB.object_path(name, namespace), body=body, content_type="application/json")


def jobs(client: KubeClient, namespace: str) -> list[str]:
    return sorted(j["metadata"]["name"] for j in client.list(JOB, namespace=namespace))


def record(namespace: str, client: KubeClient, run_id: str = "run-1") -> RunRecord:
    found = read_run(client, namespace, run_id)
    assert found is not None
    return found


def stages(found: RunRecord) -> dict[str, str]:
    return {e.engine: e.stage.value for e in found.engines}


def finish_job(
    client: KubeClient, namespace: str, name: str, *, image: str, report: dict | None, failed: str | None = None
) -> None:
    """Play the Job controller and the kubelet: the Job's Pod ran `image` and left `report`."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}}
    client.apply(SERVICE_ACCOUNT, account, field_manager=CONTROLLER)
    client.apply(
        POD,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-x1", "namespace": namespace, "labels": {"job-name": name}},
            "spec": {
                "automountServiceAccountToken": False,
                "restartPolicy": "Never",
                "containers": [{"name": "validation", "image": image}],
            },
        },
        field_manager=CONTROLLER,
    )
    terminated = {
        "exitCode": 0 if failed is None else 1,
        "reason": "Completed",
        "message": json.dumps(report) if report else "",
    }
    client.apply(
        POD,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-x1", "namespace": namespace},
            "status": {
                "phase": "Succeeded" if failed is None else "Failed",
                "containerStatuses": [
                    {
                        "name": "validation",
                        "image": image,
                        "imageID": f"docker-pullable://{image.split(':')[0]}@{DIGEST}",
                        "ready": False,
                        "restartCount": 0,
                        "state": {"terminated": terminated},
                    }
                ],
            },
        },
        field_manager="kubelet",
        subresource="status",
    )
    status = {
        "startTime": "2026-01-01T00:00:00Z",
        "conditions": _finished_conditions(failed),
        ("failed" if failed else "succeeded"): 1,
    }
    if not failed:
        status["completionTime"] = "2026-01-01T00:10:00Z"
    client.apply(
        JOB,
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace}, "status": status},
        field_manager=CONTROLLER,
        subresource="status",
    )


def _finished_conditions(failed: str | None) -> list[dict[str, str]]:
    """The conditions the Job controller writes when a Job ends, in its order: the target
    condition first (SuccessCriteriaMet or FailureTarget), then the terminal one (Complete or
    Failed). The API server refuses a terminal condition without its target condition, and a
    finished Job without startTime (a Complete one without completionTime too)."""
    at = "2026-01-01T00:10:00Z"
    if failed:
        return [
            {"type": kind, "status": "True", "reason": failed, "lastTransitionTime": at}
            for kind in ("FailureTarget", "Failed")
        ]
    reason = "CompletionsReached"
    return [
        {"type": kind, "status": "True", "reason": reason, "lastTransitionTime": at}
        for kind in ("SuccessCriteriaMet", "Complete")
    ]


OLLAMA_PASSES = {"gpuBuffersMi": 768, "arithmetic": True, "cpuFallback": False}


@pytest.mark.parametrize(
    "engine", [EngineRun("OLlama", OLLAMA_IMAGE, 900), EngineRun("VLLM", VLLM_IMAGE, 1800)], ids=["ollama", "vllm"]
)
def test_each_validation_job_passes_a_server_side_dry_run_and_carries_no_forbidden_setting(
    namespace, admin: KubeClient, engine
):
    body = validation_job(
        run_id="run-1", engine=engine, node="halo", namespace=namespace, security=PodSecurity(1000, (44,))
    )
    answered = admin.request(
        "POST",
        JOB.collection_path(namespace),
        params={"dryRun": "All", "fieldManager": "test"},
        body=body,
        content_type="application/json",
    )
    assert jobs(admin, namespace) == []
    spec = answered["spec"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (0, engine.timeout_seconds)
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["automountServiceAccountToken"] is False
    assert all("hostPath" not in volume for volume in pod.get("volumes", ()))
    assert not any(pod.get(key) for key in ("hostNetwork", "hostPID", "hostIPC"))
    assert container["securityContext"]["privileged"] is False
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 1000
    assert container["resources"]["limits"] == {"amd.com/gpu": "1"}
    assert pod["restartPolicy"] == "Never"


def test_twenty_concurrent_history_writers_lose_no_record(namespace, admin: KubeClient, admin_access: KubeAccess):
    bootstrap_history(admin, namespace, bound=32)
    start = threading.Barrier(WRITERS)

    def writer(index: int) -> str:
        with open_client(admin_access) as client:
            start.wait()
            mine = RunRecord(
                run_id=f"run-{index}",
                profile_id="strix-halo",
                profile_version="1",
                host=HOST,
                requested_at=f"2026-01-01T00:00:{index:02d}Z",
                engines=(EngineRun("OLlama", OLLAMA_IMAGE, 900),),
            )
            return put_run(client, namespace, mine).run_id

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        written = sorted(pool.map(writer, range(WRITERS)))
    stored = admin.get(CONFIG_MAP, HISTORY_CONFIG_MAP, namespace)
    assert (
        sorted(read_history(stored["data"][HISTORY_KEY]).runs) == written == sorted(f"run-{i}" for i in range(WRITERS))
    )


def test_the_history_bootstrap_creates_an_absent_store_and_never_resets_one(namespace, admin: KubeClient):
    assert bootstrap_history(admin, namespace, bound=4) is True
    put_run(
        admin,
        namespace,
        RunRecord("kept", "strix-halo", "1", HOST, "2026-01-01T00:00:00Z", (EngineRun("OLlama", OLLAMA_IMAGE, 900),)),
    )
    assert bootstrap_history(admin, namespace, bound=4) is False
    assert read_run(admin, namespace, "kept") is not None


def test_the_history_provider_reports_an_unreadable_store_and_leaves_it_untouched(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    broken = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": HISTORY_CONFIG_MAP, "namespace": namespace},
        "data": {HISTORY_KEY: "{oops"},
    }
    admin.apply(CONFIG_MAP, broken, field_manager="someone")
    assert admin_access.kubeconfig is not None
    history = configured(GpuValidationHistoryProvider(), kubeconfig_config(admin_access.kubeconfig))
    outs = history.create({"namespace": namespace, "bound": 32}).outs
    assert outs["problem"]["reason"] == ProblemReason.VALIDATION_HISTORY_UNAVAILABLE
    assert admin.get(CONFIG_MAP, HISTORY_CONFIG_MAP, namespace)["data"][HISTORY_KEY] == "{oops"


def test_a_request_is_recorded_before_its_first_job_which_runs_alone(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    outs = provider(admin_access).create(inputs(namespace)).outs
    assert outs["problem"] == {}
    assert outs["stages"] == {"OLlama": "Running", "VLLM": "Pending"}
    assert outs["complete"] is False
    assert jobs(admin, namespace) == [job_name("run-1", "OLlama")]
    found = record(namespace, admin)
    assert found.host == HOST and found.engine("OLlama").job == job_name("run-1", "OLlama")


def test_a_restart_mid_run_picks_up_the_recorded_request_and_starts_no_second_job(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    provider(admin_access).create(inputs(namespace))
    before = record(namespace, admin)
    # The program restarted and lost its state: a fresh provider process creates the resource again.
    outs = provider(admin_access).create(inputs(namespace)).outs
    assert outs["stages"] == {"OLlama": "Running", "VLLM": "Pending"}
    assert jobs(admin, namespace) == [job_name("run-1", "OLlama")]
    assert record(namespace, admin) == before


def test_a_restart_between_recording_and_creating_the_job_creates_it_once(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    starting = RunRecord(
        "run-1",
        "strix-halo",
        "1",
        HOST,
        "2026-01-01T00:00:00Z",
        (
            EngineRun("OLlama", OLLAMA_IMAGE, 900, stage=Stage.STARTING, job=job_name("run-1", "OLlama")),
            EngineRun("VLLM", VLLM_IMAGE, 1800),
        ),
    )
    put_run(admin, namespace, starting)
    for _ in range(2):
        provider(admin_access).create(inputs(namespace))
    assert jobs(admin, namespace) == [job_name("run-1", "OLlama")]
    assert stages(record(namespace, admin)) == {"OLlama": "Running", "VLLM": "Pending"}


def test_a_finished_job_gives_its_verdict_from_the_pod_publishes_the_digest_and_starts_the_next_engine(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    validation = provider(admin_access)
    created = validation.create(inputs(namespace)).outs
    finish_job(admin, namespace, job_name("run-1", "OLlama"), image=OLLAMA_IMAGE, report=OLLAMA_PASSES)
    assert validation.diff("id", created, inputs(namespace)).changes is True
    outs = validation.update("id", created, inputs(namespace)).outs
    assert outs["stages"] == {"OLlama": "Passed", "VLLM": "Running"}
    ollama = record(namespace, admin).engine("OLlama")
    assert ollama is not None and ollama.image_id.endswith(DIGEST) and ollama.finished_at
    assert jobs(admin, namespace) == sorted([job_name("run-1", "OLlama"), job_name("run-1", "VLLM")])
    images = admin.get(CONFIG_MAP, RUNTIME_IMAGES_CONFIG_MAP, namespace)["data"][RUNTIME_IMAGES_KEY]
    assert read_runtime_images(images) == {"OLlama": f"registry.example.com/magicstick/ollama-rocm-validation@{DIGEST}"}


def test_cpu_fallback_and_a_deadline_are_failures_and_the_run_completes(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    validation = provider(admin_access)
    outs = validation.create(inputs(namespace)).outs
    finish_job(
        admin, namespace, job_name("run-1", "OLlama"), image=OLLAMA_IMAGE, report={**OLLAMA_PASSES, "cpuFallback": True}
    )
    outs = validation.update("id", outs, inputs(namespace)).outs
    finish_job(admin, namespace, job_name("run-1", "VLLM"), image=VLLM_IMAGE, report=None, failed="DeadlineExceeded")
    outs = validation.update("id", outs, inputs(namespace)).outs
    assert outs["stages"] == {"OLlama": "Failed", "VLLM": "Failed"} and outs["complete"] is True
    found = record(namespace, admin)
    assert [e.reason for e in found.engines] == ["CpuFallback", "DeadlineExceeded"]
    assert validation.diff("id", outs, inputs(namespace)).changes is False
    assert admin.get_or_none(CONFIG_MAP, RUNTIME_IMAGES_CONFIG_MAP, namespace) is None


def test_a_job_that_vanished_mid_run_is_reported_interrupted_and_never_run_again(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    validation = provider(admin_access)
    outs = validation.create(inputs(namespace)).outs
    delete_job(admin, namespace, job_name("run-1", "OLlama"))
    outs = validation.update("id", outs, inputs(namespace)).outs
    assert outs["stages"] == {"OLlama": "Interrupted", "VLLM": "Running"}
    assert jobs(admin, namespace) == [job_name("run-1", "VLLM")]


def test_changed_host_evidence_starts_no_new_job_and_marks_what_did_not_run(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    validation = provider(admin_access)
    outs = validation.create(inputs(namespace)).outs
    finish_job(admin, namespace, job_name("run-1", "OLlama"), image=OLLAMA_IMAGE, report=OLLAMA_PASSES)
    rebooted = HostIdentity(node="halo", node_uid="uid-halo", boot_id="boot-2", fingerprint="sha256:host")
    outs = validation.update("id", outs, inputs(namespace, host_current=False, current=rebooted)).outs
    # The verdict of the Job that ran is recorded (bound to the recorded host; status shows it
    # Stale); nothing new starts: a new validationRequest is needed.
    assert outs["stages"] == {"OLlama": "Passed", "VLLM": "NotRun"}
    assert outs["complete"] is True
    assert jobs(admin, namespace) == [job_name("run-1", "OLlama")]
    assert record(namespace, admin).host == HOST


def test_stale_evidence_without_a_change_of_host_waits_and_starts_nothing(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    outs = provider(admin_access).create(inputs(namespace, host_current=False)).outs
    assert outs["stages"] == {} and outs["problem"] == {}
    assert read_run(admin, namespace, "run-1") is None
    assert jobs(admin, namespace) == []


def test_an_unreadable_history_blocks_new_runs(namespace, admin: KubeClient, admin_access: KubeAccess):
    broken = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": HISTORY_CONFIG_MAP, "namespace": namespace},
        "data": {HISTORY_KEY: "[]"},
    }
    admin.apply(CONFIG_MAP, broken, field_manager="someone")
    outs = provider(admin_access).create(inputs(namespace)).outs
    assert outs["problem"]["reason"] == ProblemReason.VALIDATION_HISTORY_UNAVAILABLE
    assert jobs(admin, namespace) == []


def test_deleting_the_run_deletes_its_jobs_and_keeps_its_history(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    validation = provider(admin_access)
    validation.create(inputs(namespace))
    validation.delete("id", inputs(namespace))
    validation.delete("id", inputs(namespace))
    assert jobs(admin, namespace) == []
    assert read_run(admin, namespace, "run-1") is not None


def test_the_runtime_images_store_keeps_keys_it_does_not_own(namespace, admin: KubeClient):
    foreign = {"modelServers": {"VLLM": {"images": {"default": "vllm/vllm-openai:v0.9"}}}, "other": 1}
    store = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": RUNTIME_IMAGES_CONFIG_MAP, "namespace": namespace},
        "data": {RUNTIME_IMAGES_KEY: json.dumps(foreign)},
    }
    admin.apply(CONFIG_MAP, store, field_manager="kustomize-controller")
    assert put_runtime_image(admin, "VLLM", f"r/v@{DIGEST}", namespace=namespace) is True
    assert put_runtime_image(admin, "VLLM", f"r/v@{DIGEST}", namespace=namespace) is False
    document = json.loads(admin.get(CONFIG_MAP, RUNTIME_IMAGES_CONFIG_MAP, namespace)["data"][RUNTIME_IMAGES_KEY])
    assert document["modelServers"]["VLLM"]["images"] == {
        "default": "vllm/vllm-openai:v0.9",
        "amd-gpu": f"r/v@{DIGEST}",
    }
    assert document["other"] == 1
