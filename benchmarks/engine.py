"""What the real Pulumi engine costs: `pulumi preview`, the first `pulumi up` and a converged
`pulumi up` of the program at 20, 200 and 1,000 ModelActivations, against a test kube-apiserver.

For each size it prints the wall time of each command; the program's own time (the same
program under the SDK's mocks, no engine: benchmarks/scale.py's `program` worker) and the
engine's share of a converged up beside it; the resources in the state; the state file's size
and bytes per resource; and the peak resident memory (VmHWM) of the engine (`pulumi`), the
language host, the Kubernetes provider and the dynamic providers' processes. Figures, never
assertions.

The program plans from a generated snapshot (`magicstick:snapshotFile`, the world of
benchmarks/scale.py: activations, a twentieth as many AppInstances, four nodes) and applies to
a fresh API server holding the vendored upstream CRDs, so the figures measure the engine, not
the reader (benchmarks/scale.py measures the reader).

Run from the repository root, after scripts/toolchain/build.sh:

    venv/bin/python -m benchmarks.engine [--small] [--sizes 20,200,1000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from benchmarks.scale import World, _in_worker, cluster_objects
from tests.e2e.engine import COMMAND_TIMEOUT, PulumiProject

SIZES: Final = (20, 200, 1000)
SMALL: Final = (20,)
MIB: Final = 1024 * 1024
SAMPLE_SECONDS: Final = 0.1
NAMESPACES: Final = ("ai-system", "flux-system", "ai", "identity-system", "node-feature-discovery", "kube-amd-gpu", "gpu-operator", "kube-system")
ROLES: Final = {
    "pulumi": "engine",
    "pulumi-resource-kubernetes": "kubernetes provider",
    "pulumi.dynamic": "dynamic providers",
    "tests.e2e.language_host": "language host",
}


def world_of(activations: int) -> World:
    return World(activations=activations, instances=max(1, activations // 20), nodes=4)


class PeakMemory:
    """Samples the peak resident memory (VmHWM, which only grows) of a process tree's members by role."""

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self.peaks: dict[int, tuple[str, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def by_role(self) -> dict[str, int]:
        """Role -> the largest peak of one process of that role (dynamic providers: their sum)."""
        result: dict[str, int] = {}
        for role, peak in self.peaks.values():
            result[role] = result.get(role, 0) + peak if role == "dynamic providers" else max(result.get(role, 0), peak)
        return result

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            for pid in self._descendants():
                role, peak = _role_and_peak(pid)
                if role is not None:
                    self.peaks[pid] = (role, peak)

    def _descendants(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(parent, []).append(int(entry.name))
        found, stack = [], [self.root_pid]
        while stack:
            pid = stack.pop()
            found.append(pid)
            stack.extend(children.get(pid, ()))
        return found


def _role_and_peak(pid: int) -> tuple[str | None, int]:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None, 0
    words = [part.decode(errors="replace") for part in command if part]
    role = None
    for word in words[:4]:
        name = os.path.basename(word)
        if name in ROLES:
            role = ROLES[name]
            break
    peak = next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:")), 0)
    return role, peak


@dataclass
class Figures:
    activations: int
    seconds: dict[str, float] = field(default_factory=dict)
    program_seconds: float = 0.0
    resources: int = 0
    state_bytes: int = 0
    memory: dict[str, int] = field(default_factory=dict)


@contextmanager
def _project(snapshot: Path) -> Iterator[PulumiProject]:
    from providers.kube import KubeAccess, open_client
    from tests.cluster.apiserver import ADMIN_USER, install_crds, running_cluster
    from tests.live.world import ensure_namespace
    from tests.support.vendored import VENDORED_CRDS

    with running_cluster() as cluster, tempfile.TemporaryDirectory(prefix="magicstick-engine-") as scratch:
        install_crds(cluster, [VENDORED_CRDS])
        kubeconfig = str(cluster.kubeconfig_path(ADMIN_USER))
        with open_client(KubeAccess(kubeconfig=kubeconfig)) as client:
            for namespace in NAMESPACES:
                ensure_namespace(client, namespace)
        project = PulumiProject.create(Path(scratch))
        project.config_set({"magicstick:kubeconfig": kubeconfig, "magicstick:snapshotFile": str(snapshot), "magicstick:now": "2026-01-01T00:00:00Z"})
        yield project


def _timed(project: PulumiProject, *args: str) -> tuple[float, dict[str, int]]:
    """Wall time and peak memory of one command; infinity when it outlived the command bound."""
    started = time.perf_counter()
    with PeakMemory(os.getpid()) as memory:
        try:
            project.pulumi(*args)
        except subprocess.TimeoutExpired:
            return math.inf, memory.by_role()
    seconds = time.perf_counter() - started
    print(f"engine benchmark:   pulumi {' '.join(args)}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return seconds, memory.by_role()


def measure(activations: int) -> Figures:
    from api import yamlio

    world = world_of(activations)
    figures = Figures(activations=activations)
    figures.program_seconds = _in_worker("program", world)["seconds"]
    with tempfile.TemporaryDirectory() as scratch:
        snapshot = Path(scratch) / "snapshot.yaml"
        snapshot.write_text(yamlio.safe_dump_all(cluster_objects(world)))
        with _project(snapshot) as project:
            figures.seconds["preview"], _ = _timed(project, "preview")
            figures.seconds["first up"], figures.memory = _timed(project, "up", "--yes", "--skip-preview")
            if math.isinf(figures.seconds["first up"]):
                figures.seconds["converged up"] = math.inf
                return figures
            figures.seconds["converged up"], figures.memory = _timed(project, "up", "--yes", "--skip-preview")
            exported = project.export()
            figures.resources = len(exported["deployment"].get("resources") or ())
            figures.state_bytes = sum(p.stat().st_size for p in project.backend_dir.rglob("*.json*") if "/stacks/" in str(p) and ".bak" not in p.name)
    return figures


def report(rows: Sequence[Figures]) -> str:
    header = f"{'activations':>11} {'preview s':>9} {'1st up s':>8} {'conv. up s':>10} {'program s':>9} {'engine share':>12} {'resources':>9} {'state KiB':>9} {'B/resource':>10} {'engine MiB':>10} {'langhost MiB':>12} {'k8s prov MiB':>12} {'dynamic MiB':>11}"
    lines = [header]
    for f in rows:
        converged = f.seconds["converged up"]
        share = 1 - f.program_seconds / converged if converged and not math.isinf(converged) else math.nan
        memory = {role: f.memory.get(role, 0) / MIB for role in ("engine", "language host", "kubernetes provider", "dynamic providers")}
        lines.append(
            f"{f.activations:>11} {f.seconds['preview']:>9.1f} {f.seconds['first up']:>8.1f} {converged:>10.1f} {f.program_seconds:>9.2f} {share:>11.0%} "
            f"{f.resources:>9} {f.state_bytes / 1024:>9.0f} {f.state_bytes / max(f.resources, 1):>10.0f} "
            f"{memory['engine']:>10.0f} {memory['language host']:>12.0f} {memory['kubernetes provider']:>12.0f} {memory['dynamic providers']:>11.0f}"
        )
    lines.append("engine share: the part of a converged up's wall time that is not the program's own (program under mocks).")
    lines.append("memory: peak resident (VmHWM) of one process of each role during the converged up; dynamic providers summed.")
    lines.append(f"inf: the command outlived its bound ({COMMAND_TIMEOUT:.0f} s, tests/e2e/engine.py) and the later ones were not run.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="20 activations only (what .ci/run prints)")
    parser.add_argument("--sizes", help="comma-separated activation counts (default 20,200,1000)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    options = parser.parse_args(argv)
    sizes = SMALL if options.small else tuple(int(s) for s in options.sizes.split(",")) if options.sizes else SIZES
    rows = []
    for size in sizes:
        print(f"engine benchmark: {size} activations", file=sys.stderr, flush=True)
        rows.append(measure(size))
    print(report(rows))
    if options.json:
        print(json.dumps([f.__dict__ for f in rows]))


if __name__ == "__main__":
    main()
