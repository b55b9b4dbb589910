"""The vLLM ROCm validation check: one HIP computation and one tiny inference, as a termination message.

Runs inside the vLLM ROCm validation image (Containerfile.vllm-rocm). It:

1. hip: torch sees a HIP GPU (`torch.cuda.is_available()` and `torch.version.hip` set) and a
   256x256 float32 matmul on it matches the same matmul on the CPU;
2. inference: `vllm.LLM(model=MAGICSTICK_VALIDATION_MODEL (default facebook/opt-125m),
   max_model_len=256)` generates a few tokens at temperature 0 (only run on a HIP GPU);
3. cpuFallback: true when the device is not a HIP GPU;
4. writes {"hip": bool, "inference": bool, "cpuFallback": bool} to the termination log
   (MAGICSTICK_TERMINATION_LOG, default /dev/termination-log) and to stdout.

Exit 0 when the checks ran, whatever their verdict (a HIP error or a vLLM error is a failed
check, with a "detail" string). Exit 1 on an infrastructure error (torch or vllm cannot be
imported, a probe broke unexpectedly): the report holds what is known, unconfirmed GPU use
counted as CPU fallback, plus an "error" string.

torch and vllm are imported inside the probes only, so this module imports without them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from report import finish

DEFAULT_MODEL = "facebook/opt-125m"
DEFAULT_GPU_MEMORY_UTILIZATION = 0.5
MAX_MODEL_LEN = 256
PROMPT = "The capital of France is"
MAX_DETAIL = 400


@dataclass(frozen=True)
class HipResult:
    on_gpu: bool
    """torch sees a HIP device (a CUDA build, or no device, is not one)."""
    hip: bool
    """The matmul ran on that device and matched the CPU result."""
    detail: str = ""


@dataclass(frozen=True)
class InferenceResult:
    ok: bool
    detail: str = ""


def hip_probe() -> HipResult:
    """The HIP computation. ImportError (no torch) escapes: an infrastructure error."""
    # torch is installed in the validation image (Containerfile.vllm-rocm) only, not in the venv.
    import torch  # type: ignore[import-not-found]

    hip_version = getattr(torch.version, "hip", None)
    if not torch.cuda.is_available() or not hip_version:
        return HipResult(
            False,
            False,
            f"no HIP GPU: torch.cuda.is_available()={torch.cuda.is_available()}, torch.version.hip={hip_version!r}",
        )
    try:
        generator = torch.Generator().manual_seed(0)
        a = torch.randn(256, 256, generator=generator)
        b = torch.randn(256, 256, generator=generator)
        expected = a @ b
        device = torch.device("cuda", 0)
        got = (a.to(device) @ b.to(device)).cpu()
        difference = float((got - expected).abs().max())
        matched = bool(torch.allclose(got, expected, rtol=1e-3, atol=1e-3))
        name = torch.cuda.get_device_name(0)
    except RuntimeError as error:
        return HipResult(True, False, f"HIP {hip_version}: the computation failed: {error}")
    return HipResult(True, matched, f"{name}, HIP {hip_version}: matmul max difference {difference:.2e}")


def inference_probe(model: str, gpu_memory_utilization: float) -> InferenceResult:
    """The tiny offline inference. ImportError (no vllm) escapes: an infrastructure error."""
    # vllm is installed in the validation image (Containerfile.vllm-rocm) only, not in the venv.
    from vllm import LLM, SamplingParams  # type: ignore[import-not-found]

    try:
        llm = LLM(
            model=model, max_model_len=MAX_MODEL_LEN, enforce_eager=True, gpu_memory_utilization=gpu_memory_utilization
        )
        outputs = llm.generate([PROMPT], SamplingParams(temperature=0.0, max_tokens=8))
    except Exception as error:  # noqa: BLE001 (any engine failure is the verdict)
        return InferenceResult(False, f"vLLM failed: {type(error).__name__}: {error}")
    completion = outputs[0].outputs[0] if outputs and outputs[0].outputs else None
    if completion is None or not completion.token_ids:
        return InferenceResult(False, "vLLM generated no tokens")
    return InferenceResult(True, f"{model} generated {len(completion.token_ids)} tokens")


def run(
    environ: Mapping[str, str],
    hip: Callable[[], HipResult] = hip_probe,
    inference: Callable[[str, float], InferenceResult] = inference_probe,
) -> tuple[dict[str, Any], int]:
    """The report and the exit code. Never raises."""
    report: dict[str, Any] = {"hip": False, "inference": False, "cpuFallback": True}
    model = environ.get("MAGICSTICK_VALIDATION_MODEL") or DEFAULT_MODEL
    try:
        utilization = float(
            environ.get("MAGICSTICK_VALIDATION_GPU_MEMORY_UTILIZATION") or DEFAULT_GPU_MEMORY_UTILIZATION
        )
    except ValueError:
        utilization = DEFAULT_GPU_MEMORY_UTILIZATION
    details: list[str] = []
    try:
        found = hip()
        report["hip"], report["cpuFallback"] = found.hip, not found.on_gpu
        details.append(found.detail)
        if found.on_gpu:
            answered = inference(model, utilization)
            report["inference"] = answered.ok
            details.append(answered.detail)
        else:
            details.append("inference not run: no HIP GPU")
    except Exception as error:  # noqa: BLE001 (an import error or a broken probe: report what is known)
        report["error"] = f"{type(error).__name__}: {error}"[:MAX_DETAIL]
        code = 1
    else:
        code = 0
    detail = "; ".join(d for d in details if d)
    if detail:
        report["detail"] = detail[:MAX_DETAIL]
    return report, code


def main(
    environ: Mapping[str, str] = os.environ,
    hip: Callable[[], HipResult] = hip_probe,
    inference: Callable[[str, float], InferenceResult] = inference_probe,
) -> int:
    report, code = run(environ, hip, inference)
    return finish(report, code, environ)


if __name__ == "__main__":
    sys.exit(main())
