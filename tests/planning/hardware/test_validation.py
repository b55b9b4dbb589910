"""GPU validation runs and device diagnostics: when they start, how they are recorded and judged."""

from __future__ import annotations

import json

import pytest

from planning.hardware.compatibility import ValidationBlock
from planning.hardware.evidence import read_evidence
from planning.hardware.validation import (
    EngineRun,
    History,
    HistoryFull,
    HostIdentity,
    MalformedHistory,
    PodSecurity,
    RunRecord,
    Stage,
    VerdictReason,
    job_name,
    pinned_image,
    read_history,
    read_runtime_images,
    runtime_images_values,
    validation_job,
    verdict,
    with_run,
)
from planning.snapshot import Snapshot
from tests.planning.builders import NOW, appliance, plan_of, status_of
from tests.planning.hardware.strix_halo import amd_installed, consented, evidence, halo_feature, halo_node, history_map

IMAGE = "registry.example.com/magicstick/ollama-rocm-validation:CHANGEME"
DIGEST = "sha256:" + "a" * 64


def current_host() -> HostIdentity:
    node = Snapshot.from_objects([halo_node()]).nodes[0]
    found = read_evidence(node, NOW)
    return HostIdentity(node="halo", node_uid="uid-halo", boot_id=found.boot_id, fingerprint=found.fingerprint)


def record(
    run_id: str = "run-1",
    *,
    stages: tuple[Stage, Stage] = (Stage.PASSED, Stage.PASSED),
    host: HostIdentity | None = None,
    requested_at: str = "2026-01-01T00:00:00Z",
) -> RunRecord:
    engines = tuple(
        EngineRun(
            engine=e,
            image=IMAGE,
            timeout_seconds=900,
            stage=s,
            job=job_name(run_id, e),
            image_id=f"x@{DIGEST}" if s is Stage.PASSED else "",
        )
        for e, s in zip(("OLlama", "VLLM"), stages, strict=True)
    )
    return RunRecord(
        run_id=run_id,
        profile_id="strix-halo",
        profile_version="1",
        host=host or current_host(),
        requested_at=requested_at,
        engines=engines,
    )


def validation(result) -> dict:
    return status_of(result, "Appliance", "local")["hardwareOperators"]["amd-gpu"]["compatibility"]["validation"]


def halo(*objects: dict, request: str = "run-1", node: dict | None = None, annotations: dict | None = None):
    activation = consented(validationRequest=request) if request else consented()
    if annotations:
        activation["metadata"]["annotations"] = annotations
    return plan_of(appliance(), activation, *amd_installed(), node or halo_node(), halo_feature(), *objects)


def test_a_new_request_on_an_applicable_profile_is_declared_as_one_run_and_reported_pending() -> None:
    result = halo(history_map())
    (run,) = result.validation_runs
    assert (run.run_id, run.host, run.host_current) == ("run-1", current_host(), True)
    assert [e.engine for e in run.engines] == ["OLlama", "VLLM"]
    assert {v["state"] for v in validation(result).values()} == {"Pending"}


def test_no_request_declares_no_run() -> None:
    assert halo(history_map(), request="").validation_runs == ()


@pytest.mark.parametrize(
    ("objects", "node", "block"),
    [
        ((history_map(text="{not json"),), None, ValidationBlock.HISTORY_UNAVAILABLE),
        ((history_map(),), halo_node(registered=False), ValidationBlock.NOT_APPLICABLE),
        ((history_map(),), halo_node(annotation=evidence(boot="boot-old")), ValidationBlock.NOT_APPLICABLE),
        ((history_map(record("run-0", stages=(Stage.RUNNING, Stage.PENDING))),), None, ValidationBlock.ANOTHER_RUN),
    ],
    ids=["history-unreadable", "resource-not-registered", "stale-evidence", "another-run-unfinished"],
)
def test_a_request_that_cannot_start_is_blocked_with_its_reason_and_declares_nothing_new(objects, node, block) -> None:
    result = halo(*objects, node=node)
    assert "run-1" not in {r.run_id for r in result.validation_runs}
    assert {v["reason"] for v in validation(result).values()} == {block.value}


def test_an_absent_history_store_reads_as_empty_and_lets_the_first_run_start() -> None:
    (run,) = halo().validation_runs
    assert run.run_id == "run-1"


def test_a_recorded_unfinished_run_stays_declared_bound_to_its_recorded_host() -> None:
    started = record(stages=(Stage.RUNNING, Stage.PENDING))
    (run,) = halo(history_map(started)).validation_runs
    assert run.engines == started.engines
    assert run.host_current is True


def test_a_recorded_run_on_a_host_that_changed_stays_declared_but_may_start_nothing() -> None:
    old = HostIdentity(node="halo", node_uid="uid-halo", boot_id="boot-before", fingerprint="sha256:old")
    (run,) = halo(history_map(record(stages=(Stage.PASSED, Stage.PENDING), host=old))).validation_runs
    assert (run.host, run.host_current, run.current_host) == (old, False, current_host())


def test_a_recorded_run_whose_node_has_no_current_evidence_waits_without_a_current_host() -> None:
    stale = halo_node(annotation=evidence(boot="boot-old"))
    (run,) = halo(history_map(record(stages=(Stage.RUNNING, Stage.PENDING))), node=stale).validation_runs
    assert (run.host, run.host_current, run.current_host) == (current_host(), False, None)


def test_results_are_reported_with_image_id_and_job_and_become_stale_when_the_host_changes() -> None:
    passed = record()
    fresh = validation(halo(history_map(passed)))
    assert fresh["OLlama"]["state"] == "Passed"
    assert fresh["OLlama"]["imageID"] == f"x@{DIGEST}"
    assert fresh["OLlama"]["job"] == job_name("run-1", "OLlama")
    rebooted = halo_node(annotation=evidence(boot="boot-2"))
    rebooted["status"]["nodeInfo"]["bootID"] = "boot-2"
    changed = validation(halo(history_map(passed), node=rebooted))
    assert {v["state"] for v in changed.values()} == {"Stale"}
    assert {v["reason"] for v in changed.values()} == {VerdictReason.EVIDENCE_CHANGED.value}


def test_a_stale_result_starts_no_new_run_without_a_new_request() -> None:
    old = HostIdentity(node="halo", node_uid="uid-halo", boot_id="boot-before", fingerprint="sha256:old")
    result = halo(history_map(record(host=old)))
    (run,) = result.validation_runs
    assert run.run_id == "run-1" and run.host_current is False


@pytest.mark.parametrize(
    ("engine", "report", "passed", "reason"),
    [
        ("OLlama", {"gpuBuffersMi": 512, "arithmetic": True, "cpuFallback": False}, True, VerdictReason.PASSED),
        ("OLlama", {"gpuBuffersMi": 0, "arithmetic": True, "cpuFallback": False}, False, VerdictReason.NO_GPU_BUFFERS),
        ("OLlama", {"gpuBuffersMi": 512, "arithmetic": False, "cpuFallback": False}, False, VerdictReason.WRONG_ANSWER),
        ("OLlama", {"gpuBuffersMi": 512, "arithmetic": True, "cpuFallback": True}, False, VerdictReason.CPU_FALLBACK),
        ("OLlama", {"gpuBuffersMi": 512, "arithmetic": True}, False, VerdictReason.CPU_FALLBACK),
        ("VLLM", {"hip": True, "inference": True, "cpuFallback": False}, True, VerdictReason.PASSED),
        ("VLLM", {"hip": False, "inference": True, "cpuFallback": False}, False, VerdictReason.HIP_FAILED),
        ("VLLM", {"hip": True, "inference": False, "cpuFallback": False}, False, VerdictReason.INFERENCE_FAILED),
        ("VLLM", {"hip": True, "inference": True, "cpuFallback": True}, False, VerdictReason.CPU_FALLBACK),
        ("VLLM", None, False, VerdictReason.NO_REPORT),
    ],
    ids=[
        "ollama-passes",
        "ollama-no-buffers",
        "ollama-wrong-answer",
        "ollama-cpu",
        "ollama-silent-on-cpu",
        "vllm-passes",
        "vllm-no-hip",
        "vllm-no-inference",
        "vllm-cpu",
        "no-report",
    ],
)
def test_an_engine_passes_only_on_the_gpu_with_its_checks_and_cpu_fallback_is_failure(
    engine, report, passed, reason
) -> None:
    found = verdict(engine, json.dumps(report) if report is not None else None)
    assert (found.passed, found.reason) == (passed, reason)


def test_the_validation_job_is_bounded_and_its_pod_carries_no_forbidden_setting() -> None:
    engine = EngineRun(engine="VLLM", image=IMAGE, timeout_seconds=1800)
    job = validation_job(
        run_id="run-1", engine=engine, node="halo", namespace="ai-system", security=PodSecurity(1000, (44,))
    )
    spec = job["spec"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (0, 1800)
    assert spec["ttlSecondsAfterFinished"] > 0
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["automountServiceAccountToken"] is False
    assert not any("hostPath" in volume for volume in pod["volumes"])
    assert not (pod["hostNetwork"] or pod["hostPID"] or pod["hostIPC"])
    assert container["securityContext"]["privileged"] is False
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["resources"]["limits"] == {"amd.com/gpu": "1"}
    assert container["image"] == IMAGE and "command" not in container and "args" not in container
    assert len(job["metadata"]["name"]) <= 63


def test_a_run_id_of_128_characters_still_gives_job_names_within_63() -> None:
    assert len(job_name("r" * 128, "OLlama")) <= 63
    assert job_name("r" * 128, "OLlama") != job_name("r" * 127, "OLlama")


def test_the_history_is_bounded_by_dropping_the_oldest_finished_runs() -> None:
    history = History()
    for index in range(3):
        history = with_run(history, record(f"run-{index}", requested_at=f"2026-01-0{index + 1}T00:00:00Z"), bound=3)
    history = with_run(history, record("run-3", stages=(Stage.PENDING, Stage.PENDING)), bound=3)
    assert sorted(history.runs) == ["run-1", "run-2", "run-3"]


def test_a_history_of_only_unfinished_runs_refuses_a_new_one() -> None:
    history = History(runs={"a": record("a", stages=(Stage.RUNNING, Stage.PENDING))})
    with pytest.raises(HistoryFull):
        with_run(history, record("b", stages=(Stage.PENDING, Stage.PENDING)), bound=1)


def test_a_malformed_history_is_an_error_never_an_empty_store() -> None:
    with pytest.raises(MalformedHistory):
        read_history('{"runs": {"x": {"runId": "x"}}}')


def test_the_runtime_image_is_the_catalogued_repository_at_the_digest_that_ran() -> None:
    assert (
        pinned_image(IMAGE, f"docker-pullable://registry.example.com/x@{DIGEST}")
        == f"registry.example.com/magicstick/ollama-rocm-validation@{DIGEST}"
    )
    assert pinned_image("registry.example.com:5000/a/b:1", DIGEST) == f"registry.example.com:5000/a/b@{DIGEST}"
    assert pinned_image(IMAGE, "") is None
    values = runtime_images_values({"OLlama": f"r/o@{DIGEST}"})
    assert read_runtime_images(json.dumps(values)) == {"OLlama": f"r/o@{DIGEST}"}


def diagnostic(request: str, **overrides: str) -> dict[str, str]:
    node = Snapshot.from_objects([halo_node()]).nodes[0]
    found = read_evidence(node, NOW)
    binding = {
        "node": "halo",
        "nodeUID": "uid-halo",
        "device": "1002:1586",
        "bootID": found.boot_id,
        "fingerprint": found.fingerprint,
        "profileVersion": "1",
    }
    return {f"appliance.magicstick.dev/device-validation-{request}": json.dumps(binding | overrides)}


def diagnostics(result) -> list[dict]:
    return status_of(result, "Appliance", "local")["hardwareOperators"]["amd-gpu"]["compatibility"]["deviceDiagnostics"]


def test_a_bound_device_diagnostic_is_declared_as_a_run_of_its_own() -> None:
    result = halo(history_map(), request="", annotations=diagnostic("d1"))
    (run,) = result.validation_runs
    assert (run.run_id, run.device) == ("device-d1", "1002:1586")


@pytest.mark.parametrize(
    "overrides",
    [
        {"bootID": "boot-old"},
        {"fingerprint": "sha256:other"},
        {"device": "1002:744c"},
        {"profileVersion": "0"},
        {"nodeUID": "uid-gone"},
    ],
    ids=["other-boot", "other-fingerprint", "other-device", "other-profile-version", "other-node"],
)
def test_a_device_diagnostic_bound_to_another_identity_is_stale_and_never_runs(overrides) -> None:
    result = halo(history_map(), request="", annotations=diagnostic("d1", **overrides))
    assert result.validation_runs == ()
    assert [d["state"] for d in diagnostics(result)] == ["Stale"]


def test_device_diagnostics_queue_behind_the_engine_validation_and_run_one_at_a_time() -> None:
    result = halo(history_map(), annotations=diagnostic("d1") | diagnostic("d2"))
    assert [r.run_id for r in result.validation_runs] == ["run-1"]
    assert [d["state"] for d in diagnostics(result)] == ["Queued", "Queued"]


def test_a_device_diagnostic_never_changes_eligibility() -> None:
    with_diagnostic = halo(history_map(), request="", annotations=diagnostic("d1", bootID="boot-old"))
    without = halo(history_map(), request="")
    labels = [
        {o.name: o.body["metadata"]["labels"] for o in r.objects if o.kind == "Node"}
        for r in (with_diagnostic, without)
    ]
    assert labels[0] == labels[1]


def test_a_malformed_device_validation_annotation_is_rejected_in_status() -> None:
    result = halo(history_map(), request="", annotations={"appliance.magicstick.dev/device-validation-x": "nope"})
    assert [d["state"] for d in diagnostics(result)] == ["Rejected"]
