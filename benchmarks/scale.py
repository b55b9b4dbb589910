"""Benchmark at appliance-fleet scale: plan time, whole-program time under mocks against the floor
of as many plain CustomResources, peak memory, registered resources per activation, the largest
status of each kind against its bound, where the program's time goes, and the live reader with
its requests by verb. One table; goals are printed beside the figures, never asserted.

The full configuration is 5,000 ModelActivations, 200 AppInstances and 20 nodes with mixed
GPUs (NVIDIA, AMD, Intel and CPU-only in turn), and growth is measured from 500 activations.
`--small` runs the same measurements at 200 activations (growth from 20), 10 AppInstances and
4 nodes, so CI can run it on every commit. `--no-reader` leaves out the live reader (it starts
its own kube-apiserver; build it first with scripts/toolchain/build.sh).

Every measurement runs in its own Python process (`--worker`), so peak memory is that
measurement's alone and no Pulumi mock state carries over.

Run from the repository root:

    venv/bin/python -m benchmarks.scale [--small] [--no-reader]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

GIB: Final = 1024**3
PAGE_SIZE_NOTE: Final = "LIST pages of providers.kube.client.DEFAULT_PAGE_SIZE objects"

GOAL_FLOOR_RATIO: Final = 1.3
GOAL_PER_ACTIVATION: Final = 1.0
GOAL_GROWTH: Final = 11.0
GOAL_MEMORY_BYTES: Final = GIB


@dataclass(frozen=True)
class World:
    """The size of one generated cluster."""

    activations: int
    instances: int
    nodes: int


@dataclass(frozen=True)
class Configuration:
    world: World
    growth_from: int
    """Activations of the smaller run the growth is measured from."""
    profile_at: int
    """Activations of the profiled run."""
    reader_activations: int


FULL: Final = Configuration(World(5000, 200, 20), growth_from=500, profile_at=1000, reader_activations=5000)
SMALL: Final = Configuration(World(200, 10, 4), growth_from=20, profile_at=200, reader_activations=200)

GPU_MIX: Final = (("nvidia",), ("amd",), ("intel",), (), ("nvidia", "amd"))
"""The GPUs of node i are GPU_MIX[i % 5]: each vendor alone, a CPU-only node and a mixed one."""

RESOURCE_PURPOSE: Final = {
    "pulumi-python:dynamic/magicstick:StatusBatch": "the status writes of up to about a hundred runtime objects of one kind",
    "kubernetes:kubeai.org/v1:Model": "the KubeAI Model of one local activation: the runtime itself",
    "pulumi-python:dynamic/magicstick:OllamaAlias": "the model-name alias on the Ready Pods of one Ollama model",
    "pulumi-python:dynamic/magicstick:PodRecovery": "one deletion of a terminal model Pod",
    "pulumi-python:dynamic/magicstick:DirectRuntime": "the objects of one FreeToken or realtime runtime",
}
"""What each resource that grows with the activations buys."""


# --- the generated cluster -------------------------------------------------------------------


def cluster_objects(world: World) -> list[dict[str, Any]]:
    """A Ready platform with the world's activations, instances and nodes (tests/planning/large.py)."""
    from tests.planning.hardware.nodes import node
    from tests.planning.large import large_cluster

    nodes = [node(f"node-{index:02d}", *GPU_MIX[index % len(GPU_MIX)]) for index in range(world.nodes)]
    return [*large_cluster(world.activations, world.instances), *nodes]


# --- workers: each measurement in its own process --------------------------------------------


def _peak_memory_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@contextmanager
def _snapshot_file(world: World) -> Iterator[Path]:
    from api import yamlio

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "snapshot.yaml"
        path.write_text(yamlio.safe_dump_all(cluster_objects(world)))
        yield path


def _warm_up() -> None:
    """Import what the program imports lazily (pulumi_kubernetes' modules): a cost of the process,
    paid once, not of the run."""
    for module in ("pulumi_kubernetes.apiextensions.v1", "pulumi_kubernetes.core.v1", "program.main"):
        importlib.import_module(module)


def _program(path: Path) -> Any:
    from cli.offline import run_offline
    from program import main as program

    return run_offline(program.run, {"snapshotFile": str(path), "now": "2026-01-01T00:00:00Z"})[1]


def work_plan(world: World) -> dict[str, Any]:
    """Plan time (best of three) and the largest status of each kind, in bytes of JSON."""
    from catalogs import load_catalogs
    from planning.frozen import thaw
    from planning.plan import plan
    from planning.snapshot import Snapshot
    from tests.planning.builders import NOW

    snapshot = Snapshot.from_objects(cluster_objects(world))
    catalogs = load_catalogs()
    timings, result = [], None
    for _ in range(3):
        started = time.perf_counter()
        result = plan(snapshot=snapshot, catalogs=catalogs, now=NOW)
        timings.append(time.perf_counter() - started)
    assert result is not None
    largest: dict[str, int] = {}
    for update in result.statuses:
        largest[update.kind] = max(largest.get(update.kind, 0), len(json.dumps(thaw(update.status))))
    return {"seconds": min(timings), "largest_status": largest, "objects": len(result.objects)}


def work_program(world: World) -> dict[str, Any]:
    """The whole program under mocks, from the snapshot file (parsing included)."""
    with _snapshot_file(world) as path:
        _warm_up()
        started = time.perf_counter()
        run = _program(path)
        seconds = time.perf_counter() - started
    types = Counter(r.type for r in run.registrations)
    return {
        "seconds": seconds,
        "registrations": len(run.registrations),
        "types": dict(types),
        "peak_bytes": _peak_memory_bytes(),
    }


def work_floor(count: int) -> dict[str, Any]:
    """`count` plain CustomResources, each with a small mapping of inputs, under the same mocks."""
    import pulumi

    from cli.offline import run_offline

    _warm_up()

    def register() -> None:
        for index in range(count):
            pulumi.CustomResource(
                "magicstick:bench:Plain", f"plain-{index}", {"index": index, "name": f"plain-{index}"}
            )

    started = time.perf_counter()
    _, run = run_offline(register, {})
    seconds = time.perf_counter() - started
    assert len(run.registrations) == count
    return {"seconds": seconds, "registrations": count, "peak_bytes": _peak_memory_bytes()}


BUCKETS: Final = (
    ("YAML parsing (libyaml)", ("/yaml/", "_yaml")),
    ("planning (pure)", ("/planning/", "/catalogs/", "/api/")),
    ("dynamic providers pickled per resource (dill)", ("/dill/", "/pickle.py", "/copyreg.py")),
    ("Pulumi SDK: stack traces of registrations", ("/traceback.py", "/linecache.py")),
    ("Pulumi SDK: register, serialize, outputs", ("/pulumi/", "/google/protobuf/", "/grpc/")),
    ("asyncio event loop", ("/asyncio/",)),
    ("the program's components and providers", ("/components/", "/program/", "/providers/", "/cli/")),
)
OTHER: Final = "interpreter and standard library"

Function = tuple[str, int, str]


def _attributed(stats: Mapping[Function, Any]) -> Counter[str]:
    """Own time by bucket. Time in a function of no bucket (a builtin, the standard library) goes
    to its callers' buckets, in the shares its callers spent in it, up to four calls up."""
    totals: Counter[str] = Counter()
    memo: dict[Function, dict[str, float]] = {}

    def shares(function: Function, depth: int) -> dict[str, float]:
        filename = function[0]
        named = next((name for name, parts in BUCKETS if any(part in filename for part in parts)), None)
        if named is not None:
            return {named: 1.0}
        if depth == 0 or function not in stats:
            return {OTHER: 1.0}
        if function in memo:
            return memo[function]
        memo[function] = {OTHER: 1.0}  # a cycle counts as the interpreter's
        callers = stats[function][4]
        spent = sum(entry[2] for entry in callers.values())
        found: defaultdict[str, float] = defaultdict(float)
        for caller, entry in callers.items():
            weight = entry[2] / spent if spent else 1.0 / len(callers)
            for bucket, share in shares(caller, depth - 1).items():
                found[bucket] += weight * share
        memo[function] = dict(found) or {OTHER: 1.0}
        return memo[function]

    for function, (_, _, own, _, _) in stats.items():
        for bucket, share in shares(function, 4).items():
            totals[bucket] += own * share
    return totals


def work_profile(world: World) -> dict[str, Any]:
    """Own time of the whole program by bucket of source files, under cProfile."""
    with _snapshot_file(world) as path:
        _warm_up()
        profiler = cProfile.Profile()
        profiler.enable()
        _program(path)
        profiler.disable()
    # typeshed does not declare pstats.Stats.stats, the profile's table.
    return {"buckets": dict(_attributed(pstats.Stats(profiler).stats))}  # type: ignore[attr-defined]


def work_reader(kubeconfig: str, namespace: str) -> dict[str, Any]:
    """One observation of the live cluster: requests by verb, LIST pages and wall time."""
    from providers.kube import KubeAccess, open_client
    from providers.live_reader import read_live_objects

    with open_client(KubeAccess(kubeconfig=kubeconfig)) as client:
        verbs: Counter[str] = Counter()
        send = client.request

        def counted(method: str, path: str, **options: Any) -> Any:
            verbs[method] += 1
            return send(method, path, **options)

        # The benchmark counts the reader's requests by wrapping the client's method.
        client.request = counted  # type: ignore[method-assign]
        started = time.perf_counter()
        live = read_live_objects(client, namespace)
        seconds = time.perf_counter() - started
    kinds = Counter(o["kind"] for o in live.objects)
    return {
        "seconds": seconds,
        "verbs": dict(verbs),
        "models": kinds["ModelActivation"],
        "pods": kinds["Pod"],
        "peak_bytes": _peak_memory_bytes(),
    }


WORKERS: Final[Mapping[str, Callable[..., dict[str, Any]]]] = {
    "plan": work_plan,
    "program": work_program,
    "floor": work_floor,
    "profile": work_profile,
    "reader": work_reader,
}


def _in_worker(name: str, *arguments: Any) -> dict[str, Any]:
    """Run WORKERS[name](*arguments) in a fresh interpreter; its JSON answer."""
    payload = json.dumps({"worker": name, "arguments": [asdict(a) if isinstance(a, World) else a for a in arguments]})
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", "--worker", payload], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"worker {name} failed:\n{done.stderr}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])  # _work prints a WORKERS result
    return answer


def _work(payload: str) -> None:
    request = json.loads(payload)
    arguments = [World(**a) if isinstance(a, dict) else a for a in request["arguments"]]
    print(json.dumps(WORKERS[request["worker"]](*arguments)))


# --- the live reader at scale ----------------------------------------------------------------


def _model_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-0", "namespace": "ai", "labels": {"model": name}},
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [{"name": "server", "image": "registry.example.com/model-server:1.0.0"}],
        },
    }


def measure_reader(activations: int) -> dict[str, Any]:
    """Load `activations` ModelActivations and a Pod each into a fresh test kube-apiserver, then read."""
    from api import yamlio
    from api.crdgen import load_committed_crds
    from providers.kube import KubeAccess, open_client
    from tests.cluster.apiserver import ADMIN_USER, install_crds, running_cluster
    from tests.live.world import NAMESPACE, ensure_namespace, kind_of, without_server_fields
    from tests.planning.builders import appliance
    from tests.planning.large import model_activation

    namespace = "scale"
    with running_cluster() as cluster, tempfile.TemporaryDirectory() as scratch:
        for crd in load_committed_crds():
            (Path(scratch) / f"{crd['metadata']['name']}.yaml").write_text(yamlio.safe_dump(crd))
        install_crds(cluster, [Path(scratch)])
        kubeconfig = str(cluster.kubeconfig_path(ADMIN_USER))
        with open_client(KubeAccess(kubeconfig=kubeconfig)) as admin:
            admin.apply(
                NAMESPACE,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                field_manager="bench",
            )
            ensure_namespace(admin, "ai")
            models = [model_activation(index) for index in range(activations)]
            objects = [appliance(), *models, *(_model_pod(m["metadata"]["name"]) for m in models)]
            objects = [
                o if o["kind"] == "Pod" else {**o, "metadata": {**o["metadata"], "namespace": namespace}}
                for o in objects
            ]
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=8) as pool:
                list(
                    pool.map(
                        lambda o: admin.apply(kind_of(o), without_server_fields(o), field_manager="bench"), objects
                    )
                )
            loading = time.perf_counter() - started
        figures = _in_worker("reader", kubeconfig, namespace)
    assert figures["models"] == activations, f"read {figures['models']} ModelActivations, loaded {activations}"
    return {**figures, "loading_seconds": loading}


# --- the table -------------------------------------------------------------------------------


@dataclass
class Table:
    rows: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, figure: str, value: str, goal: str = "") -> None:
        self.rows.append((figure, value, goal))

    def print(self) -> None:
        width = max(len(f) for f, _, _ in self.rows)
        value_width = max(len(v) for _, v, _ in self.rows)
        for figure, value, goal in self.rows:
            print(f"{figure:<{width}}  {value:>{value_width}}  {goal}".rstrip())


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def _bound(kind: str) -> int:
    from planning.status import APPLIANCE_STATUS_BUDGET, RUNTIME_STATUS_BUDGET

    return APPLIANCE_STATUS_BUDGET if kind == "Appliance" else RUNTIME_STATUS_BUDGET


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the small configuration (CI)")
    parser.add_argument("--no-reader", action="store_true", help="leave out the live reader (no kube-apiserver)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.worker:
        _work(arguments.worker)
        return
    configuration = SMALL if arguments.small else FULL
    world = configuration.world
    base = World(configuration.growth_from, world.instances, world.nodes)

    planned = _in_worker("plan", world)
    program = _in_worker("program", world)
    floor = _in_worker("floor", program["registrations"])
    smaller = _in_worker("program", base)
    profile = _in_worker("profile", World(configuration.profile_at, world.instances, world.nodes))
    reader = None if arguments.no_reader else measure_reader(configuration.reader_activations)

    table = Table()
    table.add("configuration", f"{world.activations:,} activations, {world.instances} instances, {world.nodes} nodes")
    table.add("planned objects", f"{planned['objects']:,}")
    table.add("plan time (best of 3)", f"{planned['seconds']:.2f} s")
    table.add("whole program under mocks", f"{program['seconds']:.2f} s")
    table.add("floor: as many plain CustomResources", f"{floor['seconds']:.2f} s")
    ratio = program["seconds"] / floor["seconds"]
    table.add("program / floor", f"{ratio:.2f}", f"goal <= {GOAL_FLOOR_RATIO}: {_verdict(ratio <= GOAL_FLOOR_RATIO)}")
    growth = program["seconds"] / smaller["seconds"]
    factor = world.activations / base.activations
    table.add(
        f"growth {base.activations:,} -> {world.activations:,} activations",
        f"{growth:.1f}x",
        f"goal <= {GOAL_GROWTH:g}x for {factor:g}x the work: {_verdict(growth <= GOAL_GROWTH)}",
    )
    table.add(
        "peak memory of the program run",
        f"{program['peak_bytes'] / 2**20:,.0f} MiB",
        f"goal <= 1 GiB: {_verdict(program['peak_bytes'] <= GOAL_MEMORY_BYTES)}",
    )
    table.add("registered resources", f"{program['registrations']:,}")
    per_activation = program["registrations"] / world.activations
    marginal = (program["registrations"] - smaller["registrations"]) / (world.activations - base.activations)
    table.add("registered resources per activation", f"{per_activation:.2f}")
    table.add(
        "  of which grow with activations (marginal)",
        f"{marginal:.2f}",
        f"goal <= {GOAL_PER_ACTIVATION}: {_verdict(marginal <= GOAL_PER_ACTIVATION)}",
    )
    grown = Counter(program["types"]) - Counter(smaller["types"])
    for type_token, count in grown.most_common():
        share = count / (world.activations - base.activations)
        table.add(
            f"    {type_token.rsplit(':', 1)[-1]} ({share:.2f})", f"{count:,}", RESOURCE_PURPOSE.get(type_token, "")
        )
    for kind, size in sorted(planned["largest_status"].items()):
        bound = _bound(kind)
        table.add(f"largest {kind} status", f"{size:,} B", f"bound {bound:,} B: {_verdict(size <= bound)}")
    buckets = profile["buckets"]
    total = sum(buckets.values())
    table.add(f"where the time goes ({configuration.profile_at:,} activations, cProfile)", f"{total:.2f} s")
    for bucket, seconds in sorted(buckets.items(), key=lambda item: -item[1]):
        table.add(f"  {bucket}", f"{seconds / total:.0%}")
    if reader is not None:
        verbs = ", ".join(f"{verb} {count}" for verb, count in sorted(reader["verbs"].items()))
        table.add(
            f"reader: {reader['models']:,} activations and {reader['pods']:,} Pods",
            f"{reader['seconds']:.2f} s",
            PAGE_SIZE_NOTE,
        )
        table.add("  requests by verb", verbs)
        table.add("  peak memory of the reader", f"{reader['peak_bytes'] / 2**20:,.0f} MiB")
    table.print()


if __name__ == "__main__":
    main()
