"""The real Ollama (scripts/toolchain/build.sh, its CPU engine) serving on a loopback port.

`ollama serve` runs with its own models folder (`OLLAMA_MODELS`), as a model Pod's server does
with the model cache mounted; `ollama create` puts the tiny model (tests/support/tiny_model.py)
into that folder through the server, as an administrator fills an offline appliance's cache.
The server keeps models loaded (`OLLAMA_KEEP_ALIVE`, as KubeAI sets it) and its log in the work
directory, which a failure prints.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from tests.cluster.apiserver import ChildProcess, free_ports, launch, wait_ready
from tests.support.tiny_model import TinyModel, write_tiny_model
from tests.toolchain import ollama

STARTUP_SECONDS: Final = 60.0
CREATE_SECONDS: Final = 120.0
KEEP_ALIVE: Final = "999999h"


@dataclass(frozen=True)
class OllamaServer:
    """A running `ollama serve`: its address, its models folder and its process."""

    process: ChildProcess
    host: str
    port: int
    models: Path

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client(self, *, timeout: float = 120.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout)

    def cli(self, *arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`ollama ARGUMENTS...` against this server; raises with its output when it fails."""
        completed = subprocess.run(
            [str(ollama()), *arguments],
            cwd=cwd,
            env={**os.environ, "OLLAMA_HOST": f"{self.host}:{self.port}"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CREATE_SECONDS,
            check=False,
        )
        if completed.returncode != 0:
            raise AssertionError(
                f"ollama {' '.join(arguments)} exited with {completed.returncode}: "
                f"{completed.stdout}{completed.stderr}\n--- server log\n{self.process.log_tail()}"
            )
        return completed

    def create(self, name: str, model: TinyModel) -> None:
        """`ollama create NAME -f Modelfile`: the model's blobs and manifest in `models`."""
        self.cli("create", name, "-f", str(model.modelfile_path), cwd=model.modelfile_path.parent)


@contextlib.contextmanager
def serving_ollama(workdir: Path, *, host: str = "127.0.0.1", models: Path | None = None) -> Iterator[OllamaServer]:
    """Start `ollama serve` on a free port of `host` with `models` (default: `workdir/models`) as
    its models folder; yield once `/` answers, stop it on exit. The API server's pod proxy
    refuses loopback addresses: a test that reaches it that way serves on another address of
    this host (tests/live/ollama_double.py `proxyable_host_address`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    models = models or workdir / "models"
    models.mkdir(parents=True, exist_ok=True)
    (port,) = free_ports(1)
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "OLLAMA_HOST": f"{host}:{port}",
        "OLLAMA_MODELS": str(models),
        "OLLAMA_KEEP_ALIVE": KEEP_ALIVE,
        "OLLAMA_NOPRUNE": "1",
    }
    process = launch("ollama", [str(ollama()), "serve"], workdir, env=environment)
    try:
        with httpx.Client(base_url=f"http://{host}:{port}", timeout=2.0) as probe:
            wait_ready(process, probe, "/", time.monotonic() + STARTUP_SECONDS)
        yield OllamaServer(process=process, host=host, port=port, models=models)
    finally:
        process.stop()


@contextlib.contextmanager
def serving_tiny_model(workdir: Path, *, name: str = "tiny", host: str = "127.0.0.1") -> Iterator[OllamaServer]:
    """`serving_ollama` with the tiny model created under `name`."""
    model = write_tiny_model(workdir / "model-source")
    with serving_ollama(workdir, host=host) as server:
        server.create(name, model)
        yield server
