"""prepare-gpu and configure-gpu-memory: only what the host advertises, then what it confirms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from api.host_evidence import AMD_GPU_ELIGIBLE_LABEL, HOST_EVIDENCE_ANNOTATION
from services.host_agent.engine import Engine
from services.host_agent.journal import Journal
from tests.services.host_agent.fake_host import cpu_only, strix_halo
from tests.services.host_agent.stand_ins import NODE_UID, RecordingCluster, RecordingRunner, context, operation

MODPROBE = "etc/modprobe.d/magicstick-gpu-memory.conf"


def _run(
    root: Path, obj_of: Any, cluster: RecordingCluster | None = None
) -> tuple[RecordingCluster, RecordingRunner, Engine]:
    cluster, runner = cluster or RecordingCluster(), RecordingRunner()
    ctx = context(root, cluster=cluster, runner=runner)
    engine = Engine(Journal(root / "var/lib/magicstick/journal"), ctx)
    engine.run_once([obj_of(ctx)])
    return cluster, runner, engine


def _last(cluster: RecordingCluster) -> dict[str, Any]:
    return cluster.statuses[-1][1]


def _memory(ctx: Any, plan_id: str | None = None, **gpu_memory: int) -> dict[str, Any]:
    settings = {"carveoutIndex": 0, "dynamicLimitMi": 65536, **gpu_memory}
    return operation(ctx, "configure-gpu-memory", experimentConsent=True, gpuMemory=settings, planId=plan_id)


def test_the_memory_plan_advertises_the_current_carve_out_and_whole_steps_leaving_the_os_its_allowance(
    tmp_path: Path,
) -> None:
    strix_halo(tmp_path)
    plan = context(tmp_path).host.plans.gpu_memory
    assert plan is not None
    assert [(c.index, c.vram_mi, c.current) for c in plan.carveout_choices] == [(0, 512, True)]
    assert (plan.dynamic_limit_step_mi, plan.dynamic_limit_maximum_mi, plan.os_ram_allowance_mi) == (1024, 119808, 8192)


def test_an_advertised_dynamic_limit_is_written_for_the_next_boot(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    cluster, _, _ = _run(tmp_path, _memory)
    assert (_last(cluster)["phase"], _last(cluster)["reason"]) == ("Succeeded", "RebootRequired")
    options = (tmp_path / MODPROBE).read_text()
    assert "options ttm pages_limit=16777216 page_pool_size=16777216" in options
    assert "options amdgpu gttsize=65536" in options


def test_a_carve_out_that_is_not_advertised_is_rejected_naming_the_field(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    cluster, _, _ = _run(tmp_path, lambda ctx: _memory(ctx, carveoutIndex=3))
    assert (_last(cluster)["phase"], _last(cluster)["reason"]) == ("Failed", "Rejected")
    assert "spec.gpuMemory.carveoutIndex" in _last(cluster)["message"]
    assert not (tmp_path / MODPROBE).exists()


def test_a_dynamic_limit_off_the_steps_or_above_the_os_allowance_is_rejected_naming_the_field(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    for limit in (1500, 126976):
        cluster, _, _ = _run(tmp_path, lambda ctx, limit=limit: _memory(ctx, dynamicLimitMi=limit))
        assert "spec.gpuMemory.dynamicLimitMi" in _last(cluster)["message"]
    assert not (tmp_path / MODPROBE).exists()


def test_gpu_memory_on_a_host_without_an_amd_gpu_is_refused_as_not_supported(tmp_path: Path) -> None:
    cpu_only(tmp_path)
    cluster, _, _ = _run(tmp_path, lambda ctx: _memory(ctx, plan_id="gpu-memory-any"))
    assert (_last(cluster)["phase"], _last(cluster)["reason"]) == ("Failed", "NotSupportedOnThisHost")


def test_gpu_preparation_without_consent_is_rejected_naming_the_field(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    cluster, runner, _ = _run(tmp_path, lambda ctx: operation(ctx, "prepare-gpu", experimentConsent=False))
    assert "spec.experimentConsent" in _last(cluster)["message"] and runner.calls == []


def test_gpu_preparation_loads_a_missing_driver_once(tmp_path: Path) -> None:
    host = strix_halo(tmp_path)
    host.unload_driver()
    cluster, runner, _ = _run(tmp_path, lambda ctx: operation(ctx, "prepare-gpu", experimentConsent=True))
    assert runner.calls == [("modprobe", "amdgpu")]
    assert (_last(cluster)["phase"], _last(cluster)["reason"]) == ("Failed", "GpuDriverNotReady")


def test_gpu_preparation_registers_until_the_node_is_eligible_with_a_gpu_then_succeeds(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    cluster, _, engine = _run(tmp_path, lambda ctx: operation(ctx, "prepare-gpu", experimentConsent=True))
    assert (_last(cluster)["phase"], _last(cluster)["reason"]) == ("Registering", "WaitingForRegistration")
    assert HOST_EVIDENCE_ANNOTATION in cluster.annotations[-1]
    obj = operation(engine.context, "prepare-gpu", experimentConsent=True, status=_last(cluster))
    evidence = json.loads(str(cluster.annotations[-1][HOST_EVIDENCE_ANNOTATION]))
    cluster.node_object = {
        "metadata": {
            "name": "halo",
            "uid": NODE_UID,
            "labels": {AMD_GPU_ELIGIBLE_LABEL: "true"},
            "annotations": {HOST_EVIDENCE_ANNOTATION: json.dumps(evidence)},
        },
        "status": {"allocatable": {"amd.com/gpu": "1"}},
    }
    engine.run_once([obj])
    assert (_last(cluster)["phase"], _last(cluster)["reason"]) == ("Succeeded", "Registered")


def test_a_request_id_that_is_no_identifier_is_refused_and_never_reaches_the_modprobe_file(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    injected = "req-1\ninstall amdgpu /bin/sh -c 'touch /tmp/owned'"
    cluster, runner, _ = _run(
        tmp_path, lambda ctx: {**_memory(ctx), "spec": {**_memory(ctx)["spec"], "requestID": injected}}
    )
    assert (_last(cluster)["phase"], _last(cluster)["reason"]) == ("Failed", "Rejected")
    assert _last(cluster)["message"].startswith("spec.requestID: ")
    assert not (tmp_path / MODPROBE).exists() and runner.calls == []
