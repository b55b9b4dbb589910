"""validation/ollama_check.py against the real Ollama (the toolchain's CPU engine) with the tiny model.

The engine here has no GPU, so the check must report CPU fallback with no GPU buffers, and the
program's verdict must fail the run for that reason, whatever the random weights answer. The
model is only in the engine's own models folder, as on an offline appliance: the check must
find it there and not try the registry (which this machine cannot reach, so a pull would exit 1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from planning.hardware.validation import VerdictReason, verdict
from tests.support.ollama_server import OllamaServer, serving_tiny_model
from tests.validation.conftest import load

check = load("ollama_check")
MODEL = "tiny:latest"


@pytest.fixture(scope="module")
def ollama_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OllamaServer]:
    with serving_tiny_model(tmp_path_factory.mktemp("ollama"), name="tiny") as server:
        yield server


def test_the_check_on_a_cpu_engine_reports_cpu_fallback_and_the_verdict_fails_for_it(
    ollama_engine: OllamaServer, tmp_path: Path
) -> None:
    log = tmp_path / "termination-log"
    code = check.main(
        {
            "MAGICSTICK_OLLAMA_URL": ollama_engine.url,
            "MAGICSTICK_VALIDATION_MODEL": MODEL,
            "MAGICSTICK_TERMINATION_LOG": str(log),
        }
    )
    report = json.loads(log.read_text())
    assert code == 0, report
    assert report["gpuBuffersMi"] == 0
    assert report["cpuFallback"] is True
    assert isinstance(report["arithmetic"], bool)
    found = verdict("OLlama", log.read_text())
    assert not found.passed and found.reason is VerdictReason.CPU_FALLBACK
