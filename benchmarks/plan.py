"""Benchmark of planning and declaring: plan time and registered resources for 10, 100 and 1000
ModelActivations (a mix of CPU vLLM, CPU Ollama and external models on a Ready platform).

Run from the repository root:

    venv/bin/python -m benchmarks.plan
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from catalogs import load_catalogs
from cli.offline import run_offline
from planning.plan import plan
from planning.snapshot import Snapshot
from program import main as program
from tests.planning.builders import NOW, runtime, with_flux
from tests.planning.models.world import platform

SIZES = (10, 100, 1000)


def _activation(index: int) -> dict[str, Any]:
    if index % 3 == 2:
        external = {
            "model": "openai/gpt-4o-mini",
            "apiBase": "https://api.example.com/v1",
            "modelType": "chat",
            "apiKeySecretRef": {"name": "external-api-key", "key": "api-key"},
        }
        return runtime("ModelActivation", f"model-{index:04d}", {"type": "external", "external": external})
    engine = "VLLM" if index % 3 == 0 else "OLlama"
    local = {
        "preset": "qwen2505bcpu",
        "computeTarget": "cpu",
        "engine": engine,
        "memoryRequiredMi": 2048 + 16 * (index % 7),
    }
    return runtime("ModelActivation", f"model-{index:04d}", {"type": "local", "local": local})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="plans per size; the best time is reported")
    arguments = parser.parse_args()
    catalogs = load_catalogs()
    print(
        f"{'activations':>11} {'best plan ms':>13} {'declared objects':>17} {'registered resources':>21} {'program run s':>14}"
    )
    for size in SIZES:
        objects = with_flux([*platform(), *(_activation(i) for i in range(size))])
        snapshot = Snapshot.from_objects(objects)
        timings = []
        for _ in range(arguments.repeat):
            started = time.perf_counter()
            result = plan(snapshot=snapshot, catalogs=catalogs, now=NOW)
            timings.append(time.perf_counter() - started)
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "snapshot.yaml"
            path.write_text(yaml.safe_dump_all(objects))
            started = time.perf_counter()
            _, run = run_offline(program.run, {"snapshotFile": str(path), "now": "2026-01-01T00:00:00Z"})
            elapsed = time.perf_counter() - started
        print(
            f"{size:>11} {min(timings) * 1000:>13.1f} {len(result.objects):>17} {len(run.registrations):>21} {elapsed:>14.2f}"
        )


if __name__ == "__main__":
    main()
