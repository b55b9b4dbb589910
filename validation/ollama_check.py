"""The Ollama ROCm validation check: GPU buffers and one arithmetic answer, as a termination message.

Runs inside the Ollama ROCm validation image (Containerfile.ollama-rocm), after
entrypoint-ollama.sh started `ollama serve`. Standard library only. It:

1. pulls the model named by MAGICSTICK_VALIDATION_MODEL (default qwen2.5:0.5b), unless /api/tags
   already lists it (an offline appliance's model, created or copied into Ollama's models
   folder, is checked without any registry);
2. asks /api/generate "What is 17 + 25? Answer with the number only." at temperature 0; the
   answer is right when it holds the number 42;
3. reads /api/ps: the loaded model's size_vram gives gpuBuffersMi (MiB, rounded down), and
   cpuFallback is true when size_vram is 0 or less than the model's size (part of it on the CPU);
4. writes {"gpuBuffersMi": int, "arithmetic": bool, "cpuFallback": bool} to the termination log
   (MAGICSTICK_TERMINATION_LOG, default /dev/termination-log) and to stdout.

Exit 0 when the checks ran, whatever their verdict. Exit 1 on an infrastructure error (Ollama
unreachable, pull failed, no loaded model to measure): the report then holds what is known,
unconfirmed GPU use counted as CPU fallback, plus an "error" string. Every request is bounded.
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from report import finish

DEFAULT_MODEL = "qwen2.5:0.5b"
DEFAULT_URL = "http://127.0.0.1:11434"
PROMPT = "What is 17 + 25? Answer with the number only."
EXPECTED = re.compile(r"(?<!\d)42(?!\d)")
MIB = 1024 * 1024
MAX_ERROR = 512


@dataclass(frozen=True)
class Timeouts:
    """Seconds each request may wait (a socket timeout: the longest silence of the server)."""

    pull: float = 600.0
    generate: float = 300.0
    status: float = 15.0


class InfrastructureError(Exception):
    """The checks could not run: the report is incomplete and the exit code is 1."""


def _request(base_url: str, path: str, body: Mapping[str, Any] | None, timeout: float) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        base_url.rstrip("/") + path,
        data=data,
        method="POST" if data is not None else "GET",
        headers={"Content-Type": "application/json"} if data is not None else {},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        detail = error.read().decode("utf-8", "replace")[:200]
        raise InfrastructureError(f"{path}: HTTP {error.code} {detail}".strip()) from error
    except (urllib.error.URLError, OSError) as error:
        raise InfrastructureError(f"{path}: Ollama unreachable at {base_url}: {error}") from error
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InfrastructureError(f"{path}: not a JSON answer: {text[:200]!r}") from error
    if not isinstance(document, dict):
        raise InfrastructureError(f"{path}: not a JSON object: {text[:200]!r}")
    if document.get("error"):
        raise InfrastructureError(f"{path}: {document['error']}")
    return document


def _same_model(entry: Mapping[str, Any], model: str) -> bool:
    wanted = {model, f"{model}:latest"} if ":" not in model.rsplit("/", 1)[-1] else {model}
    return entry.get("name") in wanted or entry.get("model") in wanted


def run(model: str, base_url: str, timeouts: Timeouts = Timeouts()) -> tuple[dict[str, Any], int]:
    """The report and the exit code. Never raises for Ollama's failures."""
    report: dict[str, Any] = {"gpuBuffersMi": 0, "arithmetic": False, "cpuFallback": True}
    try:
        present = _request(base_url, "/api/tags", None, timeouts.status).get("models") or []
        if not any(isinstance(m, dict) and _same_model(m, model) for m in present):
            _request(base_url, "/api/pull", {"model": model, "stream": False}, timeouts.pull)
        answer = _request(
            base_url,
            "/api/generate",
            {
                "model": model,
                "prompt": PROMPT,
                "stream": False,
                "keep_alive": "5m",
                "options": {"temperature": 0, "seed": 1, "num_predict": 16},
            },
            timeouts.generate,
        )
        report["arithmetic"] = bool(EXPECTED.search(str(answer.get("response", ""))))
        loaded = _request(base_url, "/api/ps", None, timeouts.status).get("models") or []
        entry = next((m for m in loaded if isinstance(m, dict) and _same_model(m, model)), None)
        if entry is None:
            raise InfrastructureError(f"/api/ps: {model} is not loaded after the generate request")
        size_vram, size = entry.get("size_vram"), entry.get("size")
        if not isinstance(size_vram, int) or not isinstance(size, int):
            raise InfrastructureError(f"/api/ps: no sizes for {model}: size={size!r} size_vram={size_vram!r}")
        report["gpuBuffersMi"] = max(size_vram, 0) // MIB
        report["cpuFallback"] = size_vram <= 0 or size_vram < size
    except InfrastructureError as error:
        report["error"] = str(error)[:MAX_ERROR]
        return report, 1
    return report, 0


def main(environ: Mapping[str, str] = os.environ, timeouts: Timeouts = Timeouts()) -> int:
    model = environ.get("MAGICSTICK_VALIDATION_MODEL") or DEFAULT_MODEL
    base_url = environ.get("MAGICSTICK_OLLAMA_URL") or DEFAULT_URL
    report, code = run(model, base_url, timeouts)
    return finish(report, code, environ)


if __name__ == "__main__":
    sys.exit(main())
