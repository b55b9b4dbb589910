"""Memory admission of local models: allowMemoryRisk skips only the host-coverage check."""

from __future__ import annotations

import pytest

from api.models import LocalModelSpec
from api.validation import SpecError
from planning.hardware.memory import HostMemory
from planning.models.memory import MemoryRejected
from planning.models.resolve import resolve_admitted
from planning.reasons import Reason
from tests.planning.builders import CATALOGS


def _local(**fields: object) -> LocalModelSpec:
    return LocalModelSpec.model_validate({"preset": "qwen2505bcpu", "computeTarget": "cpu", "engine": "VLLM", **fields})


def test_a_cpu_vllm_budget_below_the_estimated_minimum_is_rejected_naming_the_field_and_the_numbers() -> None:
    with pytest.raises(SpecError, match=r"spec\.local\.memoryRequiredMi: .*256.*below"):
        resolve_admitted(_local(memoryRequiredMi=256), CATALOGS)


def test_allow_memory_risk_admits_a_cpu_vllm_budget_below_the_estimated_minimum_and_keeps_the_request() -> None:
    resolved = resolve_admitted(_local(memoryRequiredMi=256, allowMemoryRisk=True), CATALOGS)
    assert resolved.memory_required_mi == 256


SHARED_POOL = HostMemory(
    architecture="unified", shared_pool_id="uid-apu", gpu_allocation_mode="shared-gtt", physical_memory_mi=131072
)
FIRMWARE_POOL = HostMemory(
    architecture="unified", shared_pool_id="uid-apu", gpu_allocation_mode="firmware-reserved", physical_memory_mi=131072
)


def test_a_cpu_vllm_budget_covering_the_estimate_is_admitted_and_carries_the_estimate() -> None:
    resolved = resolve_admitted(_local(memoryRequiredMi=4096), CATALOGS)
    assert resolved.memory_estimate is not None
    # the 512 MiB fallback cache is held as one whole GiB by CPU vLLM
    assert resolved.memory_status()["memoryEstimate"]["ramMinimumMi"] == 960 + 1024 + 1536


def test_an_offload_budget_an_administrator_writes_in_the_cr_is_used_as_written() -> None:
    """A CR written directly must supply the vLLM offload budget; only the dashboard's
    API recomputes it, and the program is not that API."""
    local = _local(computeTarget="nvidia-gpu", cpuOffloading=True, memoryRequiredMi=8192, cpuOffloadMi=2048, vramMi=512)
    assert resolve_admitted(local, CATALOGS).cpu_offload_mi == 2048


def test_a_vram_budget_below_the_gpu_minimum_is_refused_unless_the_risk_is_allowed() -> None:
    with pytest.raises(SpecError, match=r"spec\.local\.vramMi: 256 MiB is below the estimated GPU minimum"):
        resolve_admitted(_local(computeTarget="nvidia-gpu", vramMi=256), CATALOGS)
    assert (
        resolve_admitted(_local(computeTarget="nvidia-gpu", vramMi=256, allowMemoryRisk=True), CATALOGS).vram_mi == 256
    )


@pytest.mark.parametrize(
    ("host", "memory_required"),
    [(SHARED_POOL, 3056), (FIRMWARE_POOL, 1856)],
    ids=["shared-gtt-charges-the-model-once", "firmware-reserved-charges-only-the-runtime"],
)
def test_a_model_on_a_unified_pool_has_one_linux_ram_request(host: HostMemory, memory_required: int) -> None:
    resolved = resolve_admitted(_local(computeTarget="amd-gpu"), CATALOGS, host=host)
    assert resolved.memory_required_mi == memory_required
    assert resolved.memory_required_mi < 1536 + 960 + 50 + (resolved.vram_mi or 0)
    status = resolved.memory_status()
    assert (status["memoryArchitecture"], status["sharedPoolId"], status["gpuAllocationMode"]) == (
        "unified",
        "uid-apu",
        host.gpu_allocation_mode,
    )


def test_a_discrete_gpu_model_reports_no_unified_pool_fields() -> None:
    assert set(resolve_admitted(_local(computeTarget="amd-gpu"), CATALOGS).memory_status()) == {"memoryEstimate"}


def test_a_request_beyond_the_physical_memory_of_a_unified_pool_is_refused_unless_the_risk_is_allowed() -> None:
    small = HostMemory(
        architecture="unified", shared_pool_id="uid-apu", gpu_allocation_mode="shared-gtt", physical_memory_mi=8192
    )
    with pytest.raises(
        SpecError,
        match=r"spec\.local\.memoryRequiredMi: the request of 16384 MiB exceeds the 8192 MiB of the shared memory pool uid-apu",
    ):
        resolve_admitted(_local(computeTarget="amd-gpu", memoryRequiredMi=16384), CATALOGS, host=small)
    assert (
        resolve_admitted(
            _local(computeTarget="amd-gpu", memoryRequiredMi=16384, allowMemoryRisk=True), CATALOGS, host=small
        ).memory_required_mi
        == 16384
    )


def test_an_offload_budget_is_taken_from_the_client_only_when_the_estimate_is_unknown() -> None:
    local = LocalModelSpec.model_validate(
        {
            "url": "hf://example/unknown-model",
            "computeTarget": "nvidia-gpu",
            "engine": "VLLM",
            "cpuOffloading": True,
            "memoryRequiredMi": 8192,
            "cpuOffloadMi": 2048,
            "vramMi": 4096,
            "allowMemoryRisk": True,
        }
    )
    assert resolve_admitted(local, CATALOGS).cpu_offload_mi == 2048


def test_an_unknown_estimate_under_cpu_offloading_is_refused_with_its_reason() -> None:
    local = LocalModelSpec.model_validate(
        {
            "url": "hf://example/unknown-model",
            "computeTarget": "nvidia-gpu",
            "engine": "VLLM",
            "cpuOffloading": True,
            "memoryRequiredMi": 8192,
            "cpuOffloadMi": 2048,
            "vramMi": 4096,
        }
    )
    with pytest.raises(MemoryRejected) as refused:
        resolve_admitted(local, CATALOGS)
    assert refused.value.reason is Reason.MEMORY_ESTIMATE_UNKNOWN


def test_an_ollama_offload_budget_is_always_zero() -> None:
    local = _local(engine="OLlama", computeTarget="nvidia-gpu", cpuOffloading=True, memoryRequiredMi=8192, vramMi=512)
    assert resolve_admitted(local, CATALOGS).cpu_offload_mi == 0
