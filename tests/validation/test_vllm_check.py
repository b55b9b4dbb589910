"""validation/vllm_check.py without torch or vllm: injected probes; each report read by the program."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from planning.hardware.validation import VerdictReason, verdict
from tests.validation.conftest import load

check = load("vllm_check")


def _gpu() -> object:
    return check.HipResult(on_gpu=True, hip=True, detail="Radeon 8060S, HIP 7.0")


def _answers(model: str, utilization: float) -> object:
    return check.InferenceResult(True, f"{model} generated 8 tokens at {utilization}")


def _main(tmp_path: Path, **probes: object) -> tuple[int, str]:
    log = tmp_path / "termination-log"
    code = check.main({"MAGICSTICK_TERMINATION_LOG": str(log)}, **probes)  # type: ignore[arg-type]
    return code, log.read_text()


def test_imports_without_torch_or_vllm() -> None:
    assert "torch" not in sys.modules or sys.modules["torch"] is None
    assert check.DEFAULT_MODEL == "facebook/opt-125m" and check.MAX_MODEL_LEN == 256


def test_hip_gpu_and_inference_pass(tmp_path: Path) -> None:
    asked: list[tuple[str, float]] = []

    def inference(model: str, utilization: float) -> object:
        asked.append((model, utilization))
        return _answers(model, utilization)

    code, report = _main(tmp_path, hip=_gpu, inference=inference)
    assert code == 0
    written = json.loads(report)
    assert {k: written[k] for k in ("hip", "inference", "cpuFallback")} == {
        "hip": True,
        "inference": True,
        "cpuFallback": False,
    }
    assert asked == [(check.DEFAULT_MODEL, check.DEFAULT_GPU_MEMORY_UTILIZATION)]
    found = verdict("VLLM", report)
    assert found.passed and found.reason is VerdictReason.PASSED


def test_failed_inference_is_a_verdict(tmp_path: Path) -> None:
    code, report = _main(
        tmp_path, hip=_gpu, inference=lambda model, utilization: check.InferenceResult(False, "vLLM failed: HIP error")
    )
    assert code == 0
    assert json.loads(report)["inference"] is False
    assert verdict("VLLM", report).reason is VerdictReason.INFERENCE_FAILED


def test_failed_hip_computation_is_a_verdict(tmp_path: Path) -> None:
    code, report = _main(tmp_path, hip=lambda: check.HipResult(True, False, "mismatch"), inference=_answers)
    assert code == 0
    assert verdict("VLLM", report).reason is VerdictReason.HIP_FAILED


def test_no_hip_gpu_is_cpu_fallback_and_skips_inference(tmp_path: Path) -> None:
    def inference(model: str, utilization: float) -> object:
        raise AssertionError("inference must not run without a HIP GPU")

    code, report = _main(tmp_path, hip=lambda: check.HipResult(False, False, "no HIP GPU"), inference=inference)
    assert code == 0
    written = json.loads(report)
    assert written["hip"] is False and written["inference"] is False and written["cpuFallback"] is True
    assert verdict("VLLM", report).reason is VerdictReason.CPU_FALLBACK


def test_missing_torch_exits_1_with_a_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    code, report = _main(tmp_path, inference=_answers)
    assert code == 1
    written = json.loads(report)
    assert written["hip"] is False and written["inference"] is False and written["cpuFallback"] is True
    assert "torch" in written["error"]
    found = verdict("VLLM", report)
    assert not found.passed


def test_missing_vllm_exits_1_with_what_is_known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    code, report = _main(tmp_path, hip=_gpu)
    assert code == 1
    written = json.loads(report)
    assert written["hip"] is True and written["cpuFallback"] is False and written["inference"] is False
    assert "vllm" in written["error"]
    assert verdict("VLLM", report).reason is VerdictReason.INFERENCE_FAILED


def test_model_and_memory_come_from_the_environment(tmp_path: Path) -> None:
    asked: list[tuple[str, float]] = []

    def inference(model: str, utilization: float) -> object:
        asked.append((model, utilization))
        return _answers(model, utilization)

    environ = {
        "MAGICSTICK_VALIDATION_MODEL": "Qwen/Qwen2.5-0.5B",
        "MAGICSTICK_VALIDATION_GPU_MEMORY_UTILIZATION": "0.3",
        "MAGICSTICK_TERMINATION_LOG": str(tmp_path / "log"),
    }
    assert check.main(environ, _gpu, inference) == 0
    assert asked == [("Qwen/Qwen2.5-0.5B", 0.3)]


def test_long_details_keep_the_report_within_the_termination_message_limit(tmp_path: Path) -> None:
    code, report = _main(
        tmp_path, hip=_gpu, inference=lambda model, utilization: check.InferenceResult(False, "x" * 10000)
    )
    assert code == 0
    assert len(report.encode()) <= 4096
    assert verdict("VLLM", report).reason is VerdictReason.INFERENCE_FAILED
