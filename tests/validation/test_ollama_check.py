"""validation/ollama_check.py against a stdlib HTTP double of Ollama; each report read by the program."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from planning.hardware.validation import VerdictReason, verdict
from tests.validation.conftest import load

check = load("ollama_check")

MIB = 1024 * 1024
MODEL = "qwen2.5:0.5b"
FAST = check.Timeouts(pull=5, generate=5, status=5)


@dataclass
class Ollama:
    """What the double answers, and what it was asked."""

    answer: str = "42"
    size: int = 400 * MIB
    size_vram: int = 400 * MIB
    loaded: bool = True
    pull_error: str | None = None
    listed: bool = False
    requests: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)


def _handler(state: Ollama) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, document: dict[str, Any]) -> None:
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append((self.path, body))
            if self.path == "/api/pull":
                if state.pull_error:
                    self._send(500, {"error": state.pull_error})
                else:
                    self._send(200, {"status": "success"})
            elif self.path == "/api/generate":
                self._send(200, {"model": body["model"], "response": state.answer, "done": True})
            else:
                self._send(404, {"error": "not found"})

        def do_GET(self) -> None:
            state.requests.append((self.path, None))
            if self.path == "/api/tags":
                self._send(200, {"models": [{"name": MODEL, "model": MODEL}] if state.listed else []})
            elif self.path == "/api/ps":
                models = (
                    [{"name": MODEL, "model": MODEL, "size": state.size, "size_vram": state.size_vram}]
                    if state.loaded
                    else []
                )
                self._send(200, {"models": models})
            else:
                self._send(404, {"error": "not found"})

    return Handler


@pytest.fixture
def ollama() -> Iterator[tuple[Ollama, str]]:
    state = Ollama()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _main(url: str, log: Path) -> tuple[int, str]:
    code = check.main(
        {"MAGICSTICK_OLLAMA_URL": url, "MAGICSTICK_VALIDATION_MODEL": MODEL, "MAGICSTICK_TERMINATION_LOG": str(log)},
        FAST,
    )
    return code, log.read_text()


def test_right_answer_on_the_gpu_passes(ollama: tuple[Ollama, str], tmp_path: Path) -> None:
    state, url = ollama
    state.answer = " 42\n"
    code, report = _main(url, tmp_path / "termination-log")
    assert code == 0
    assert json.loads(report) == {"gpuBuffersMi": 400, "arithmetic": True, "cpuFallback": False}
    found = verdict("OLlama", report)
    assert found.passed and found.reason is VerdictReason.PASSED
    paths = [path for path, _ in state.requests]
    assert paths == ["/api/tags", "/api/pull", "/api/generate", "/api/ps"]
    generate = state.requests[2][1]
    assert generate is not None and generate["options"]["temperature"] == 0 and generate["stream"] is False
    assert "17 + 25" in generate["prompt"]


def test_wrong_answer_is_a_failed_verdict(ollama: tuple[Ollama, str], tmp_path: Path) -> None:
    state, url = ollama
    state.answer = "The answer is 420."
    code, report = _main(url, tmp_path / "termination-log")
    assert code == 0
    assert json.loads(report) == {"gpuBuffersMi": 400, "arithmetic": False, "cpuFallback": False}
    found = verdict("OLlama", report)
    assert not found.passed and found.reason is VerdictReason.WRONG_ANSWER


def test_no_vram_is_cpu_fallback(ollama: tuple[Ollama, str], tmp_path: Path) -> None:
    state, url = ollama
    state.size_vram = 0
    code, report = _main(url, tmp_path / "termination-log")
    assert code == 0
    assert json.loads(report) == {"gpuBuffersMi": 0, "arithmetic": True, "cpuFallback": True}
    found = verdict("OLlama", report)
    assert not found.passed and found.reason is VerdictReason.CPU_FALLBACK


def test_partial_offload_is_cpu_fallback(ollama: tuple[Ollama, str], tmp_path: Path) -> None:
    state, url = ollama
    state.size_vram = 300 * MIB
    code, report = _main(url, tmp_path / "termination-log")
    assert code == 0
    assert json.loads(report) == {"gpuBuffersMi": 300, "arithmetic": True, "cpuFallback": True}
    assert verdict("OLlama", report).reason is VerdictReason.CPU_FALLBACK


def test_model_not_loaded_is_an_infrastructure_error(ollama: tuple[Ollama, str], tmp_path: Path) -> None:
    state, url = ollama
    state.loaded = False
    code, report = _main(url, tmp_path / "termination-log")
    assert code == 1
    written = json.loads(report)
    assert written["arithmetic"] is True and written["cpuFallback"] is True and "not loaded" in written["error"]
    assert not verdict("OLlama", report).passed


def test_failed_pull_is_an_infrastructure_error(ollama: tuple[Ollama, str], tmp_path: Path) -> None:
    state, url = ollama
    state.pull_error = "pull model manifest: file does not exist"
    code, report = _main(url, tmp_path / "termination-log")
    assert code == 1
    written = json.loads(report)
    assert written["arithmetic"] is False and "file does not exist" in written["error"]
    assert [path for path, _ in state.requests] == ["/api/tags", "/api/pull"]
    assert not verdict("OLlama", report).passed


def test_a_model_ollama_already_lists_is_checked_without_a_pull(ollama: tuple[Ollama, str], tmp_path: Path) -> None:
    state, url = ollama
    state.listed = True
    code, report = _main(url, tmp_path / "termination-log")
    assert code == 0
    assert [path for path, _ in state.requests] == ["/api/tags", "/api/generate", "/api/ps"]
    assert verdict("OLlama", report).passed


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_unreachable_ollama_exits_1_with_a_report(tmp_path: Path) -> None:
    code, report = _main(f"http://127.0.0.1:{_closed_port()}", tmp_path / "termination-log")
    assert code == 1
    written = json.loads(report)
    assert written["gpuBuffersMi"] == 0 and written["arithmetic"] is False and written["cpuFallback"] is True
    assert "unreachable" in written["error"]
    found = verdict("OLlama", report)
    assert not found.passed and found.reason is VerdictReason.CPU_FALLBACK


def test_unwritable_termination_log_exits_1(ollama: tuple[Ollama, str], tmp_path: Path) -> None:
    _, url = ollama
    code = check.main(
        {"MAGICSTICK_OLLAMA_URL": url, "MAGICSTICK_TERMINATION_LOG": str(tmp_path / "missing" / "log")}, FAST
    )
    assert code == 1


def test_default_model_is_used_when_unset(ollama: tuple[Ollama, str], tmp_path: Path) -> None:
    state, url = ollama
    check.main({"MAGICSTICK_OLLAMA_URL": url, "MAGICSTICK_TERMINATION_LOG": str(tmp_path / "log")}, FAST)
    assert state.requests[1] == ("/api/pull", {"model": check.DEFAULT_MODEL, "stream": False})
