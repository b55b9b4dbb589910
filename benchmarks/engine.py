"""What the real Pulumi engine costs, and the goals it is held to: `pulumi preview`, the first
`pulumi up`, a converged `pulumi up` without and with `--refresh` (what the Pulumi Kubernetes
Operator runs) of the program at 20, 100 and 1,000 ModelActivations, against a test
kube-apiserver, side by side with the engine's floor in the same run.

For each size it prints the wall time of each command; the program's own time (the same
program under the SDK's mocks, no engine: benchmarks/scale.py's `program` worker); the
resources in the state; the state's size in bytes per resource and per activation; the peak
resident memory (VmHWM) and the CPU seconds of the engine (`pulumi`), the Python language host
(`pulumi-language-python`), the program it runs (a `python` of `pulumi-language-python-exec`), the
Kubernetes provider and the dynamic providers' processes; and the floor: a stack that registers
as many plain ConfigMaps (benchmarks/floor/), converged, on the same engine and API server.

Then the goals, each "met" or "NOT met" (figures, never assertions):
1. edit -> applied on a realistic appliance, p95 <= 10 s over 20 edits, each `up --refresh` as PKO
   runs it (benchmarks/edit_latency.py);
2. a converged up of the largest size <= 1.5x the floor's;
3. linear: the converged up grows at most 1.1x as fast as the activations (100 -> 1,000: <= 11x),
   and the state's bytes per added activation stay constant (within a quarter);
4. <= 1.0 registered resource per added activation;
5. the peak memory of engine + language host + program + providers <= 1 GiB at the largest size.

The program plans from a generated snapshot (`magicstick:snapshotFile`, the world of
benchmarks/scale.py: activations, a twentieth as many AppInstances, four nodes) and applies to
a fresh API server holding the vendored upstream CRDs, so the figures measure the engine, not
the reader (benchmarks/scale.py measures the reader).

Run from the repository root, after scripts/toolchain/build.sh:

    venv/bin/python -m benchmarks.engine [--small] [--sizes 20,100,1000] [--edits 20]

`--small` (what .ci/run prints) runs 20 and 100 activations and 3 edits: the goals stated at
1,000 are then judged at 100, and the output says so.
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
from itertools import pairwise
from pathlib import Path
from typing import Any, Final

from benchmarks.scale import World, _in_worker, cluster_objects
from tests.e2e.engine import COMMAND_TIMEOUT, REPO_ROOT, PulumiProject

MIB: Final = 1024 * 1024
SIZES: Final = (20, 100, 1000)
SMALL: Final = (20, 100)
EDITS: Final = 20
SMALL_EDITS: Final = 3
GOAL_FLOOR_RATIO: Final = 1.5
GOAL_GROWTH_PER_SIZE: Final = 1.1
"""Goal 3: the converged up may grow 1.1x as fast as the activations (11x for 100 -> 1,000)."""
GOAL_STATE_DRIFT: Final = 0.25
GOAL_PER_ACTIVATION: Final = 1.0
GOAL_MEMORY_BYTES: Final = 1024 * MIB
WORKSPACE_SETTINGS: Final = (("PULUMI_SKIP_CHECKPOINTS", "true"),)
"""The engine settings deploy/workspace/Containerfile gives every run under the operator."""
FLOOR_NAMESPACE: Final = "floor"
FLOOR_SOURCE: Final = Path(__file__).parent / "floor"
CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK")
SAMPLE_SECONDS: Final = 0.1
NAMESPACES: Final = (
    FLOOR_NAMESPACE,
    "ai-system",
    "flux-system",
    "ai",
    "identity-system",
    "node-feature-discovery",
    "kube-amd-gpu",
    "gpu-operator",
    "kube-system",
)
ROLES: Final = {
    "pulumi": "engine",
    "pulumi-language-python": "language host",
    "pulumi-language-python-exec": "program",
    "pulumi-resource-kubernetes": "kubernetes provider",
    "pulumi.dynamic": "dynamic providers",
}
"""The role of a process by the first of its first four words that names one: the program is
`venv/bin/python -u .../pulumi-language-python-exec ...`, a dynamic provider `python -u -m pulumi.dynamic`."""


def world_of(activations: int) -> World:
    return World(activations=activations, instances=max(1, activations // 20), nodes=4)


class PeakMemory:
    """Samples the peak resident memory (VmHWM, which only grows) of a process tree's members by role."""

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self.peaks: dict[int, tuple[str, int]] = {}
        self.cpu: dict[int, tuple[str, float]] = {}
        """The last CPU seconds (user + system) seen of each process, by pid."""
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

    def cpu_by_role(self) -> dict[str, float]:
        """Role -> CPU seconds of all its processes (as last sampled)."""
        result: dict[str, float] = {}
        for role, seconds in self.cpu.values():
            result[role] = result.get(role, 0.0) + seconds
        return result

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            for pid in self._descendants():
                role, peak = _role_and_peak(pid)
                if role is not None:
                    self.peaks[pid] = (role, peak)
                    self.cpu[pid] = (role, _cpu_seconds(pid))

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


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


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
    """Wall time of each program command."""
    floor_seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of each command of the floor stack at the program's resource count."""
    program_seconds: float = 0.0
    resources: int = 0
    """Resources in the state, the Stack and the providers left out: what the program registers."""
    state_bytes: int = 0
    memory: dict[str, int] = field(default_factory=dict)
    """Peak resident bytes by role during the converged up with refresh (dynamic providers summed)."""
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds by role during the converged up with refresh."""
    floor_memory: dict[str, int] = field(default_factory=dict)
    """The floor's peak resident bytes by role during its converged up with refresh."""
    floor_state_bytes: int = 0


@contextmanager
def _cluster() -> Iterator[str]:
    """A fresh test API server with the vendored upstream CRDs and the namespaces; its admin kubeconfig."""
    from providers.kube import KubeAccess, open_client
    from tests.cluster.apiserver import ADMIN_USER, install_crds, running_cluster
    from tests.live.world import ensure_namespace
    from tests.support.vendored import VENDORED_CRDS

    with running_cluster() as cluster:
        install_crds(cluster, [VENDORED_CRDS])
        kubeconfig = str(cluster.kubeconfig_path(ADMIN_USER))
        with open_client(KubeAccess(kubeconfig=kubeconfig)) as client:
            for namespace in NAMESPACES:
                ensure_namespace(client, namespace)
        yield kubeconfig


@dataclass(frozen=True)
class Tuning:
    """How the engine is run: engine settings (`PULUMI_*` variables) and `--parallel`."""

    settings: tuple[tuple[str, str], ...] = ()
    parallel: int | None = None

    def args(self) -> tuple[str, ...]:
        return () if self.parallel is None else (f"--parallel={self.parallel}",)

    def describe(self) -> str:
        told = [f"{key}={value}" for key, value in self.settings] + (
            [f"--parallel {self.parallel}"] if self.parallel is not None else []
        )
        return ", ".join(told) or "the engine's defaults"


def _project(scratch: Path, tuning: Tuning, *, source: Path = REPO_ROOT) -> PulumiProject:
    project = PulumiProject.create(scratch, source=source)
    project.settings.update(dict(tuning.settings))
    return project


def _timed(project: PulumiProject, *args: str) -> tuple[float, PeakMemory]:
    """Wall time of one command, and what its processes used; infinity when it outlived the bound."""
    started = time.perf_counter()
    with PeakMemory(os.getpid()) as sampled:
        try:
            project.pulumi(*args)
        except subprocess.TimeoutExpired:
            return math.inf, sampled
    seconds = time.perf_counter() - started
    print(
        f"engine benchmark:   {'program' if project.source == REPO_ROOT else 'floor'}: pulumi {' '.join(args)}: {seconds:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    return seconds, sampled


UP: Final = ("up", "--yes", "--skip-preview")
COMMANDS: Final = ("preview", "first up", "converged up", "converged up --refresh")


def _registered(exported: dict[str, Any]) -> int:
    resources = exported["deployment"].get("resources") or ()
    return sum(
        1 for r in resources if r["type"] != "pulumi:pulumi:Stack" and not r["type"].startswith("pulumi:providers:")
    )


def _state_bytes(project: PulumiProject) -> int:
    return sum(
        p.stat().st_size for p in project.backend_dir.rglob("*.json*") if "/stacks/" in str(p) and ".bak" not in p.name
    )


def _program_commands(project: PulumiProject, figures: Figures, tuning: Tuning) -> bool:
    """Preview, first up, converged up, converged up with refresh; False when one outlived its bound."""
    figures.seconds["preview"], _ = _timed(project, "preview", *tuning.args())
    for command, args in (("first up", UP), ("converged up", UP), ("converged up --refresh", (*UP, "--refresh"))):
        figures.seconds[command], sampled = _timed(project, *args, *tuning.args())
        if math.isinf(figures.seconds[command]):
            return False
    figures.memory, figures.cpu = sampled.by_role(), sampled.cpu_by_role()
    return True


def _floor_commands(project: PulumiProject, figures: Figures, tuning: Tuning) -> None:
    for command, args in (("first up", UP), ("converged up", UP), ("converged up --refresh", (*UP, "--refresh"))):
        figures.floor_seconds[command], sampled = _timed(project, *args, *tuning.args())
        figures.floor_memory = sampled.by_role()
        if math.isinf(figures.floor_seconds[command]):
            return


def measure(activations: int, tuning: Tuning = Tuning()) -> Figures:
    from api import yamlio

    world = world_of(activations)
    figures = Figures(activations=activations)
    figures.program_seconds = _in_worker("program", world)["seconds"]
    with tempfile.TemporaryDirectory(prefix="magicstick-engine-") as scratch, _cluster() as kubeconfig:
        snapshot = Path(scratch) / "snapshot.yaml"
        snapshot.write_text(yamlio.safe_dump_all(cluster_objects(world)))
        program = _project(Path(scratch) / "program", tuning)
        program.config_set(
            {
                "magicstick:kubeconfig": kubeconfig,
                "magicstick:snapshotFile": str(snapshot),
                "magicstick:now": "2026-01-01T00:00:00Z",
            }
        )
        if not _program_commands(program, figures, tuning):
            return figures
        figures.resources = _registered(program.export())
        figures.state_bytes = _state_bytes(program)
        floor = _project(Path(scratch) / "floor", tuning, source=FLOOR_SOURCE)
        floor.config_set(
            {"floor:kubeconfig": kubeconfig, "floor:count": str(figures.resources), "floor:namespace": FLOOR_NAMESPACE}
        )
        _floor_commands(floor, figures, tuning)
        figures.floor_state_bytes = _state_bytes(floor)
    return figures


def report(rows: Sequence[Figures]) -> str:
    header = (
        f"{'activations':>11} {'preview s':>9} {'1st up s':>8} {'conv. up s':>10} {'+refresh s':>10} {'program s':>9} "
        f"{'floor s':>7} {'+refresh':>8} {'resources':>9} {'state KiB':>9} {'B/resource':>10} {'B/activ.':>8} "
        f"{'engine MiB':>10} {'langhost MiB':>12} {'program MiB':>11} {'k8s prov MiB':>12} {'dynamic MiB':>11}"
    )
    lines = [header]
    for f in rows:
        memory = {
            role: f.memory.get(role, 0) / MIB
            for role in ("engine", "language host", "program", "kubernetes provider", "dynamic providers")
        }
        lines.append(
            f"{f.activations:>11} {f.seconds.get('preview', math.nan):>9.1f} {f.seconds.get('first up', math.nan):>8.1f} "
            f"{f.seconds.get('converged up', math.nan):>10.1f} {f.seconds.get('converged up --refresh', math.nan):>10.1f} {f.program_seconds:>9.2f} "
            f"{f.floor_seconds.get('converged up', math.nan):>7.1f} {f.floor_seconds.get('converged up --refresh', math.nan):>8.1f} "
            f"{f.resources:>9} {f.state_bytes / 1024:>9.0f} {f.state_bytes / max(f.resources, 1):>10.0f} {f.state_bytes / max(f.activations, 1):>8.0f} "
            f"{memory['engine']:>10.0f} {memory['language host']:>12.0f} {memory['program']:>11.0f} {memory['kubernetes provider']:>12.0f} {memory['dynamic providers']:>11.0f}"
        )
    lines.append(
        "floor: a stack of as many plain ConfigMaps as the program registers at that size (benchmarks/floor/), same engine and API server."
    )
    lines.append(
        "memory: peak resident (VmHWM) of one process of each role during the converged up with refresh; dynamic providers summed."
    )
    for f in rows:
        if f.floor_memory:
            split = ", ".join(f"{role} {peak / MIB:.0f}" for role, peak in sorted(f.floor_memory.items()))
            lines.append(
                f"floor's peak memory MiB at {f.activations} ({sum(f.floor_memory.values()) / MIB:.0f} in all): {split}; "
                f"its state {f.floor_state_bytes / 1024:.0f} KiB ({f.floor_state_bytes / max(f.resources, 1):.0f} B/resource)"
            )
        if f.cpu:
            split = ", ".join(f"{role} {seconds:.1f}" for role, seconds in sorted(f.cpu.items()))
            lines.append(f"cpu seconds of the converged up with refresh at {f.activations}: {split}")
    lines.append(
        f"nan/inf: not reached, or the command outlived its bound ({COMMAND_TIMEOUT:.0f} s, tests/e2e/engine.py)."
    )
    return "\n".join(lines)


@dataclass(frozen=True)
class Verdict:
    number: int
    goal: str
    met: bool
    figures: str

    def line(self) -> str:
        return f"goal {self.number} ({self.goal}): {'met' if self.met else 'NOT met'} ({self.figures})"


def verdicts(rows: Sequence[Figures]) -> list[Verdict]:
    """Goals 2 to 5 from the sizes measured: the largest, and growth from the next largest
    (100 -> 1,000 in the full run). Pure."""
    ordered = sorted(rows, key=lambda f: f.activations)
    small, large = ordered[-2] if len(ordered) > 1 else ordered[0], ordered[-1]
    found = []
    up, floor = large.seconds.get("converged up", math.inf), large.floor_seconds.get("converged up", math.inf)
    refreshed, floor_refreshed = (
        large.seconds.get("converged up --refresh", math.inf),
        large.floor_seconds.get("converged up --refresh", math.inf),
    )
    ratio = up / floor if floor else math.inf
    found.append(
        Verdict(
            2,
            f"converged up <= {GOAL_FLOOR_RATIO}x the floor at {large.activations}",
            ratio <= GOAL_FLOOR_RATIO,
            f"{up:.1f} s / {floor:.1f} s = {ratio:.2f}x; with --refresh {refreshed:.1f} s / {floor_refreshed:.1f} s = {refreshed / floor_refreshed if floor_refreshed else math.inf:.2f}x",
        )
    )
    if large.activations > small.activations:
        size_ratio = large.activations / small.activations
        growth = large.seconds.get("converged up", math.inf) / small.seconds.get("converged up", math.inf)
        bound = GOAL_GROWTH_PER_SIZE * size_ratio
        marginals = _marginal_state_bytes(rows)
        steady = len(marginals) < 2 or max(marginals) <= (1 + GOAL_STATE_DRIFT) * min(marginals)
        told = ", ".join(f"{a}->{b}: {m:.0f} B" for (a, b), m in zip(_steps(rows), marginals, strict=True))
        found.append(
            Verdict(
                3,
                f"linear: {small.activations} -> {large.activations} costs <= {bound:.1f}x, state bytes per added activation constant",
                growth <= bound and steady and len(marginals) >= 1,
                f"{growth:.1f}x; state bytes per added activation {told}"
                + ("" if len(marginals) >= 2 else " (one step: constancy not judged)"),
            )
        )
        per_activation = (large.resources - small.resources) / (large.activations - small.activations)
        found.append(
            Verdict(
                4,
                f"<= {GOAL_PER_ACTIVATION} registered resource per added activation",
                per_activation <= GOAL_PER_ACTIVATION,
                f"{per_activation:.2f} ({small.resources} at {small.activations}, {large.resources} at {large.activations})",
            )
        )
    memory = sum(large.memory.values())
    found.append(
        Verdict(
            5,
            f"peak memory of engine + language host + program + providers <= 1 GiB at {large.activations}",
            memory <= GOAL_MEMORY_BYTES and memory > 0,
            f"{memory / MIB:.0f} MiB",
        )
    )
    return found


def _steps(rows: Sequence[Figures]) -> list[tuple[int, int]]:
    ordered = sorted(rows, key=lambda f: f.activations)
    return [(a.activations, b.activations) for a, b in pairwise(ordered)]


def _marginal_state_bytes(rows: Sequence[Figures]) -> list[float]:
    ordered = sorted(rows, key=lambda f: f.activations)
    return [(b.state_bytes - a.state_bytes) / (b.activations - a.activations) for a, b in pairwise(ordered)]


def main(argv: Sequence[str] | None = None) -> None:
    from benchmarks import edit_latency

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="20 and 100 activations, 3 edits (what .ci/run prints)")
    parser.add_argument("--sizes", help="comma-separated activation counts (default 20,100,1000)")
    parser.add_argument(
        "--edits", type=int, help=f"edits of goal 1 (default {EDITS}, --small {SMALL_EDITS}; 0 leaves goal 1 out)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="PULUMI_NAME=VALUE",
        help="an engine setting for every command (repeatable; default: the workspace image's, PULUMI_SKIP_CHECKPOINTS=true)",
    )
    parser.add_argument("--parallel", type=int, help="`--parallel` of every command (default: the engine's, 4 per CPU)")
    options = parser.parse_args(argv)
    settings = dict(WORKSPACE_SETTINGS) | dict(tuple(setting.split("=", 1)) for setting in options.setting)
    tuning = Tuning(settings=tuple(sorted(settings.items())), parallel=options.parallel)
    sizes = SMALL if options.small else tuple(int(s) for s in options.sizes.split(",")) if options.sizes else SIZES
    edits = options.edits if options.edits is not None else SMALL_EDITS if options.small else EDITS
    latency = None
    if edits > 0:
        print(f"engine benchmark: goal 1, {edits} edits on the realistic appliance", file=sys.stderr, flush=True)
        # With --refresh: deploy/stack.yaml's `refresh: true`, how PKO runs every update.
        latency = edit_latency.measure(edits=edits, refresh=True)
    rows = []
    for size in sizes:
        print(f"engine benchmark: {size} activations", file=sys.stderr, flush=True)
        rows.append(measure(size, tuning))
    print(f"engine: {tuning.describe()}")
    print(report(rows))
    if latency is not None:
        print(edit_latency.report(latency))
    for verdict in verdicts(rows):
        print(verdict.line())
    if max(sizes) < 1000:
        print(f"(goals 2 to 5 are stated at 1,000 activations; judged here at {max(sizes)})")
    if options.json:
        print(json.dumps([f.__dict__ for f in rows]))


if __name__ == "__main__":
    main()
