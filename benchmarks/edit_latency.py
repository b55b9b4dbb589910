"""What a user waits for after an edit: from a ModelActivation spec edit to the changed KubeAI
Model on the API server, through the real reconcile trigger and the real Pulumi engine.

The world is benchmarks/scale.py's generated appliance at 50 ModelActivations, 10 AppInstances
and 2 nodes (a Ready platform), loaded into a fresh test kube-apiserver with the vendored upstream
CRDs (third_party/crds/, PKO's Stack among them; the agent-sandbox CRD the world lists is not
vendored, so the program sees it unserved) and the program's own CRDs, and a PKO `Stack`
(ai-system/magicstick).
The reconcile trigger runs as its real process (`python -m services.reconcile_trigger.main`,
started as benchmarks/reconcile_trigger.py starts it) with its default timing. The benchmark
plays PKO: it watches the Stack's `pulumi.com/reconciliation-request` annotation and, for each
new value, runs one `pulumi up --yes --skip-preview` (tests/e2e/engine.py: the real CLI and
pulumi-kubernetes, a file backend) of the program reading the live cluster
(`magicstick:kubeconfig`; no snapshot file, and `magicstick:now` left to the clock as in a real
run). PKO's own part (starting its workspace pod, fetching the source, installing plugins) is
not in the figures. Before the edits the appliance is converged: `pulumi up` (at least two)
while Flux, helm-controller, Envoy Gateway and the Deployment controller are played between
them, until an up changes nothing; KubeAI is not played (no Model gets a Pod).

Then N edits (default 20), one at a time: each sets `spec.local.maxNumSeqs` of one CPU vLLM
activation to a new value by server-side apply of the whole object (what `kubectl apply
--server-side` sends); the program turns it into the Model's `--max-num-seqs` argument. For each
edit it prints one line (stderr), then p50, p95 and max of:

- total: the edit written -> the Model's spec showing it, seen by a watch of the Models;
- trigger: the edit written -> the new request seen on the Stack (a watch);
- program: the program's start (the SDK constructs the Stack resource) -> the SDK sends the
  Model's registration; in two parts: to the program's run line (`magicstick: N objects
  planned`: observed, planned, every resource constructed), then the SDK resolving and
  serializing inputs (the Python SDK's own debug lines mark both ends; they reach the event log);
- engine: the CLI's start -> the program's start (CLI, plugins, language host), and the Model's
  registration -> the Model applied (the engine's steps before it, the provider's check, diff
  and server-side apply);
- other: the rest (the request seen -> the CLI started).

The engine's events are read as they come: `--event-log` is written to a FIFO and each event is
stamped when it arrives (the log's own timestamps are whole seconds). After each edit's up, the
run the trigger then requests for the program's own write of the Model is served too (printed,
not counted), and the next edit waits until the Stack has been quiet for a while. The API
server's request counter (`apiserver_request_total` in /metrics, by verb) is read before and
after every up: that counts every client (program, providers, trigger), because the test API
server keeps no audit log to tell the provider's requests apart.

Figures, never assertions; the goal line says whether p95 is within 10 s. Figures taken while
the machine does something else (a build, another benchmark) are not representative: the output
prints the load average.

Run from the repository root, after scripts/toolchain/build.sh:

    venv/bin/python -m benchmarks.edit_latency [--edits 20] [--refresh]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from benchmarks.reconcile_trigger import (
    RESYNC_SECONDS,
    SETTLE_SECONDS,
    StackWatch,
    percentile,
    trigger_process,
    watch_stack,
)
from benchmarks.scale import World, cluster_objects
from planning.models.kubeai import model_name
from planning.objects import logical_name_of
from planning.settings import DEFAULT_SYSTEM_NAMESPACE
from providers.kinds import KUBEAI_MODEL, MODEL_ACTIVATION
from providers.kube import EventType, KubeAccess, KubeClient, KubeError, ResourceKind, open_client
from services.reconcile_trigger.settings import DEFAULT_MAX_DELAY_MS, DEFAULT_QUIET_MS
from services.reconcile_trigger.stack import StackRef
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds, running_cluster
from tests.e2e.engine import PulumiProject, Run
from tests.e2e.lifecycle import MAX_ROUNDS, OWN_CRDS, changes
from tests.e2e.world import MODEL_NAMESPACE, NAMESPACES, load_demo, play_platform
from tests.live.world import LOADER, ensure_namespace, without_server_fields
from tests.services.reconcile_trigger.world import create_stack, ensure_stack_crd
from tests.support.vendored import VENDORED_CRDS

JsonObject = dict[str, Any]

WORLD: Final = World(activations=50, instances=10, nodes=2)
EDITS: Final = 20
GOAL_SECONDS: Final = 10.0
SYSTEM_NAMESPACE: Final = DEFAULT_SYSTEM_NAMESPACE
MORE_NAMESPACES: Final = ("gpu-operator", "kube-system")
"""Namespaces the program may declare objects in for the nodes' GPUs, beside the demo's."""
FIRST_MAX_NUM_SEQS: Final = 8
"""Edit i sets maxNumSeqs to FIRST_MAX_NUM_SEQS + i: every edit changes its Model."""
QUIET_SECONDS: Final = (DEFAULT_QUIET_MS + DEFAULT_MAX_DELAY_MS) / 1000 + 1.0
"""How long the Stack must see no new request before the next edit: longer than the trigger's
quiet period and maximum delay together."""
MODEL_SECONDS: Final = 30.0
"""How long after its up the edited Model may take to show up on the watch before the edit counts as lost."""
SPLITS: Final = ("trigger", "program", "engine", "other")
PARTS: Final = {"program": ("program plan", "program register"), "engine": ("engine start", "engine apply")}
"""The two parts of the program's and of the engine's time."""
STACK_TYPE: Final = "pulumi:pulumi:Stack"
MODEL_TYPE: Final = "kubernetes:kubeai.org/v1:Model"
RUN_LINE: Final = re.compile(r"magicstick: \d+ objects planned")
"""program/report.py's run line, logged once the program has declared everything."""
REGISTERING: Final = "registering resource: ty={type}, name={name},"
"""The Python SDK's debug line (a diagnostic event) when a resource is constructed: for the
Stack resource, the first thing the program does."""
PREPARED: Final = "resource registration prepared: ty={type}, name={name}"
"""The SDK's debug line once a resource's inputs are resolved and serialized: it sends the
registration to the engine right after."""
METRIC_LINE: Final = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
METRIC_LABEL: Final = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def progress(line: str) -> None:
    print(f"edit latency: {line}", file=sys.stderr, flush=True)


# --- what one edit costs ---------------------------------------------------------------------


def durations(start: float, points: Sequence[float | None], end: float) -> list[float]:
    """The time from each point to the next, from `start` through `points` to `end`; each point
    is held between the one before it and `end` (a missing one takes the one before), so the
    durations are never negative and add up to `end - start`. Pure."""
    durations, previous = [], start
    for point in (*points, end):
        at = previous if point is None else min(max(point, previous), end)
        durations.append(at - previous)
        previous = at
    return durations


@dataclass(frozen=True)
class Edit:
    """One edit and the moments it went through (time.monotonic())."""

    activation: str
    value: int
    """The maxNumSeqs it wrote."""
    edited_at: float
    """Just before the write."""
    requested_at: float
    launched_at: float
    program_started_at: float | None
    """The SDK constructs the Stack resource: the program runs (the CLI and language host have started)."""
    declared_at: float | None
    """The program's run line: observed, planned, every resource constructed."""
    registered_at: float | None
    """The SDK prepared the Model's registration (inputs resolved and serialized) and sends it."""
    model_step_at: float | None
    """The engine started the Model's step (informative: the provider's check and diff come before it)."""
    applied_at: float
    up_seconds: float
    """The whole `pulumi up` of the edit (it goes on after the Model is applied)."""
    follow_up_seconds: tuple[float, ...]
    """The ups the trigger requested after it (for the program's own write of the Model)."""
    follow_up_changes: tuple[int, ...]
    """What each of them changed (resource steps other than `same`)."""
    requests: Mapping[str, int]
    """API requests by verb during the edit's up, every client."""

    @property
    def total(self) -> float:
        return self.applied_at - self.edited_at

    def splits(self) -> dict[str, float]:
        """SPLITS (adding up to the total), and the two PARTS of the program and of the engine."""
        trigger, reaction, start, plan, register, apply = durations(
            self.edited_at,
            (self.requested_at, self.launched_at, self.program_started_at, self.declared_at, self.registered_at),
            self.applied_at,
        )
        return {
            "trigger": trigger,
            "program": plan + register,
            "engine": start + apply,
            "other": reaction,
            "program plan": plan,
            "program register": register,
            "engine start": start,
            "engine apply": apply,
        }

    def line(self, number: int, of: int) -> str:
        parts = self.splits()
        named = ", ".join(f"{name} {parts[name]:.2f}" for name in SPLITS)
        return (
            f"edit {number}/{of} {self.activation} maxNumSeqs={self.value}: applied after {self.total:.2f} s ({named}); "
            f"up {self.up_seconds:.1f} s, then {len(self.follow_up_seconds)} follow-up up(s) {_seconds_list(self.follow_up_seconds)} "
            f"changing {sum(self.follow_up_changes)}; "
            f"{sum(self.requests.values())} API requests"
        )


@dataclass(frozen=True)
class EditLatency:
    """The edits of one run of the benchmark, and what came before them."""

    world: World
    edits: tuple[Edit, ...]
    converge_seconds: tuple[float, ...]
    converge_changes: tuple[int, ...]
    converged: bool
    resources: int
    refresh: bool
    trigger_start_seconds: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]

    def values(self, split: str = "total") -> list[float]:
        """Per edit: the total, or one of SPLITS and PARTS."""
        return [edit.total if split == "total" else edit.splits()[split] for edit in self.edits]

    def percentile(self, split: str, p: int) -> float:
        return percentile(self.values(split), p)

    @property
    def p50(self) -> float:
        """Of the total, edit -> applied."""
        return self.percentile("total", 50)

    @property
    def p95(self) -> float:
        return self.percentile("total", 95)

    @property
    def goal_met(self) -> bool:
        return self.p95 <= GOAL_SECONDS


def _seconds_list(values: Sequence[float]) -> str:
    return "(" + ", ".join(f"{value:.1f} s" for value in values) + ")" if values else ""


# --- the engine's events, as they come -------------------------------------------------------


class EventFifo:
    """A FIFO for `pulumi --event-log`: every line the CLI writes, stamped when it arrives.

    The benchmark holds a write end open itself, so the reader neither waits for the CLI to
    open the FIFO nor stops before it did; closing it after the CLI exited ends the reading.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: list[tuple[float, bytes]] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._read_fd = -1
        self._hold_fd = -1

    def __enter__(self) -> EventFifo:
        os.mkfifo(self.path)
        self._read_fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        self._hold_fd = os.open(self.path, os.O_WRONLY)
        os.set_blocking(self._read_fd, True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self._hold_fd)
        self._thread.join()
        self.path.unlink()

    def _read(self) -> None:
        with os.fdopen(self._read_fd, "rb") as stream:
            for line in stream:
                self._lines.append((time.monotonic(), line))

    def events(self) -> list[tuple[float, JsonObject]]:
        return [(at, json.loads(line)) for at, line in self._lines if line.strip()]


def request_counts(cluster: ClusterInfo) -> Counter[str]:
    """The API server's requests so far by verb (`non-resource`: discovery, OpenAPI, /metrics)."""
    with cluster.client() as http:
        response = http.get("/metrics")
        response.raise_for_status()
    counts: Counter[str] = Counter()
    for line in response.text.splitlines():
        found = METRIC_LINE.match(line)
        if found:
            labels = dict(METRIC_LABEL.findall(found["labels"]))
            verb = labels.get("verb", "?") if labels.get("resource") else "non-resource"
            counts[verb] += int(float(found["value"]))
    return counts


@dataclass(frozen=True)
class Up:
    """One `pulumi up`: when it ran, what it logged (each event with its arrival) and the API requests meanwhile."""

    launched_at: float
    ended_at: float
    run: Run
    arrivals: tuple[float, ...]
    requests: Mapping[str, int]

    @property
    def seconds(self) -> float:
        return self.ended_at - self.launched_at

    def first(self, matches: Callable[[JsonObject], bool]) -> float | None:
        """When the first event that `matches` arrived."""
        return next((at for at, event in zip(self.arrivals, self.run.events, strict=True) if matches(event)), None)


def _pre_event_of(event: JsonObject, *, type_: str, name: str) -> bool:
    metadata = (event.get("resourcePreEvent") or {}).get("metadata") or {}
    return metadata.get("type") == type_ and str(metadata.get("urn", "")).endswith(f"::{name}")


def _diagnostic(event: JsonObject, starting: str) -> bool:
    return str((event.get("diagnosticEvent") or {}).get("message", "")).startswith(starting)


def _run_line(event: JsonObject) -> bool:
    return bool(RUN_LINE.search((event.get("diagnosticEvent") or {}).get("message", "")))


@dataclass
class Operator:
    """Plays PKO for the Stack: one `pulumi up` per new request value, one at a time; a value
    that arrives during an up is served by the next."""

    project: PulumiProject
    cluster: ClusterInfo
    requests: StackWatch
    scratch: Path
    refresh: bool = False
    served: int = 0
    _ups: int = 0

    def pending(self) -> bool:
        return self.requests.count() > self.served

    def up(self) -> Up:
        self.served = self.requests.count()
        self._ups += 1
        fifo = self.scratch / f"events-{self._ups}.fifo"
        before = request_counts(self.cluster)
        with EventFifo(fifo) as log:
            launched = time.monotonic()
            run = self.project.pulumi(
                "up", "--yes", "--skip-preview", *(("--refresh",) if self.refresh else ()), "--event-log", str(fifo)
            )
            ended = time.monotonic()
        requests = request_counts(self.cluster) - before
        stamped = log.events()
        return Up(
            launched,
            ended,
            replace(run, events=tuple(event for _, event in stamped)),
            tuple(at for at, _ in stamped),
            requests,
        )

    def serve_until_quiet(self) -> list[Up]:
        """Serve every request until none came for QUIET_SECONDS; the ups it ran."""
        ups: list[Up] = []
        for _ in range(MAX_ROUNDS):
            if not self.pending() and self.requests.wait_for(self.served + 1, QUIET_SECONDS) is None:
                return ups
            ups.append(self.up())
        raise RuntimeError(
            f"the Stack was not quiet after {MAX_ROUNDS} ups: the trigger requests a run after every run"
        )


# --- the Models, watched ---------------------------------------------------------------------


@dataclass
class ModelWatch:
    """Every version of a Model the watch delivered: (arrival, name, spec)."""

    seen: list[tuple[float, str, JsonObject]] = field(default_factory=list)
    condition: threading.Condition = field(default_factory=threading.Condition)

    def record(self, obj: Mapping[str, Any]) -> None:
        with self.condition:
            self.seen.append((time.monotonic(), obj["metadata"]["name"], obj.get("spec") or {}))
            self.condition.notify_all()

    def mark(self) -> int:
        with self.condition:
            return len(self.seen)

    def wait_for(self, name: str, shows: Callable[[JsonObject], bool], *, since: int, timeout: float) -> float | None:
        """When the first version of Model `name` after `since` that `shows` the change arrived; None after `timeout`."""
        deadline = time.monotonic() + timeout
        with self.condition:
            index = since
            while True:
                for at, seen, spec in self.seen[index:]:
                    if seen == name and shows(spec):
                        return at
                index = len(self.seen)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.condition.wait(left)


def watch_objects(
    access: KubeAccess,
    kind: ResourceKind,
    namespace: str,
    record: Callable[[JsonObject], None],
    stop: threading.Event,
    *,
    label_selector: str | None = None,
) -> None:
    """Record every version of the `kind` objects of `namespace` (those `label_selector`
    selects) until `stop`: a list, then a watch resumed where it stopped (bookmarks included),
    listed again only when the server no longer has that version."""
    with open_client(access) as client:
        version: str | None = None
        while not stop.is_set():
            try:
                if version is None:
                    listed = client.list_collection(kind, namespace=namespace, label_selector=label_selector)
                    for item in listed.items:
                        record(item)
                    version = listed.resource_version
                with client.watch(
                    kind,
                    namespace=namespace,
                    label_selector=label_selector,
                    resource_version=version,
                    timeout_seconds=300,
                ) as stream:
                    for event in stream:
                        version = event.resource_version or version
                        if event.type in (EventType.ADDED, EventType.MODIFIED):
                            record(event.object)
                        if stop.is_set():
                            return
            except KubeError:
                version = None


def watch_models(access: KubeAccess, namespace: str, into: ModelWatch, stop: threading.Event) -> None:
    """Follow the Models of `namespace` until `stop` (watch_objects)."""
    watch_objects(access, KUBEAI_MODEL, namespace, into.record, stop)


@contextmanager
def following(target: Callable[..., None], *arguments: Any) -> Iterator[None]:
    """`target(*arguments, stop)` in a daemon thread, told to stop on exit."""
    stop = threading.Event()
    threading.Thread(target=target, args=(*arguments, stop), daemon=True).start()
    try:
        yield
    finally:
        stop.set()


# --- the world -------------------------------------------------------------------------------


def load_world(cluster: ClusterInfo, admin: KubeClient, documents: list[JsonObject]) -> StackRef:
    """Every vendored upstream CRD (PKO's Stack among them; the world's agent-sandbox CRD is not
    vendored, so the program, reading the live cluster, sees it unserved), ours (as a user applies
    api/crds/ before the first up); the namespaces; every object with its status; the Stack."""
    install_crds(cluster, [VENDORED_CRDS, OWN_CRDS])
    ensure_stack_crd(cluster, admin)
    for namespace in (*NAMESPACES, *MORE_NAMESPACES):
        ensure_namespace(admin, namespace)
    load_demo(admin, documents)
    return create_stack(admin, SYSTEM_NAMESPACE)


def edit_targets(documents: Sequence[Mapping[str, Any]]) -> list[JsonObject]:
    """The CPU vLLM ModelActivations: each has a Model whose arguments carry maxNumSeqs. Pure."""
    targets = []
    for obj in documents:
        local = (obj.get("spec") or {}).get("local") or {}
        if (
            obj["kind"] == MODEL_ACTIVATION.kind
            and local.get("engine") == "VLLM"
            and local.get("computeTarget") == "cpu"
        ):
            targets.append(without_server_fields(obj))
    return targets


def edited(activation: Mapping[str, Any], max_num_seqs: int) -> JsonObject:
    """The whole activation as a user's manifest has it after the edit. Pure."""
    spec = dict(activation["spec"])
    spec["local"] = {**spec["local"], "maxNumSeqs": max_num_seqs}
    return {**activation, "spec": spec}


def converge(operator: Operator, admin: KubeClient) -> tuple[list[Up], bool]:
    """`pulumi up` and a pass of the platform's controllers, at least twice and until an up
    changes nothing and no controller writes (at most MAX_ROUNDS ups); then the Stack is served
    until quiet. The ups, and whether the last one changed nothing."""
    ups: list[Up] = []
    quiet = False
    while len(ups) < MAX_ROUNDS and not (len(ups) >= 2 and quiet):
        up = operator.up()
        ups.append(up)
        played = play_platform(admin)
        changed = len(changes(up.run))
        quiet = changed == 0 and played == 0
        progress(
            f"converge: up {len(ups)} took {up.seconds:.1f} s, {changed} changes; the controllers wrote {played} statuses"
        )
    for up in operator.serve_until_quiet():
        ups.append(up)
        progress(f"converge: the requested up took {up.seconds:.1f} s, {len(changes(up.run))} changes")
    return ups, quiet and not changes(ups[-1].run)


def edit_once(operator: Operator, admin: KubeClient, models: ModelWatch, activation: JsonObject, value: int) -> Edit:
    """Write one edit, serve its request, time it until its Model shows it; then serve the
    follow-up requests until the Stack is quiet."""
    name = activation["metadata"]["name"]
    model = model_name(name)
    argument = f"--max-num-seqs={value}"
    since = models.mark()
    expected = operator.requests.count() + 1
    edited_at = time.monotonic()
    admin.apply(MODEL_ACTIVATION, edited(activation, value), field_manager=LOADER)
    arrived = operator.requests.wait_for(expected, SETTLE_SECONDS)
    if arrived is None:
        raise RuntimeError(f"the edit of {name} gave no request on the Stack within {SETTLE_SECONDS:g} s")
    up = operator.up()
    applied_at = models.wait_for(
        model, lambda spec: argument in (spec.get("args") or ()), since=since, timeout=MODEL_SECONDS
    )
    if applied_at is None:
        tail = "\n".join(up.run.stdout.splitlines()[-30:])
        raise RuntimeError(f"Model {MODEL_NAMESPACE}/{model} never showed {argument} after the up:\n{tail}")
    follow_ups = operator.serve_until_quiet()
    model_resource = logical_name_of(kind="Model", namespace=MODEL_NAMESPACE, name=model)
    stack_name = operator.project.stack
    return Edit(
        activation=name,
        value=value,
        edited_at=edited_at,
        requested_at=arrived[0],
        launched_at=up.launched_at,
        program_started_at=up.first(
            lambda event: _diagnostic(event, REGISTERING.format(type=STACK_TYPE, name=f"magicstick-{stack_name}"))
        ),
        declared_at=up.first(_run_line),
        registered_at=up.first(lambda event: _diagnostic(event, PREPARED.format(type=MODEL_TYPE, name=model_resource))),
        model_step_at=up.first(lambda event: _pre_event_of(event, type_=MODEL_TYPE, name=model_resource)),
        applied_at=applied_at,
        up_seconds=up.seconds,
        follow_up_seconds=tuple(follow.seconds for follow in follow_ups),
        follow_up_changes=tuple(len(changes(follow.run)) for follow in follow_ups),
        requests=dict(up.requests),
    )


def measure(edits: int = EDITS, *, world: World = WORLD, refresh: bool = False) -> EditLatency:
    """Start the cluster, the trigger and the stack, converge, then time `edits` edits one by one."""
    load_before = os.getloadavg()
    documents = cluster_objects(world)
    targets = edit_targets(documents)
    with running_cluster() as cluster, tempfile.TemporaryDirectory(prefix="magicstick-edit-latency-") as scratch:
        root = Path(scratch)
        kubeconfig = root / "admin-kubeconfig.yaml"  # one copy: the cluster's helper rewrites its file on every call
        kubeconfig.write_text(cluster.kubeconfig_path(ADMIN_USER).read_text())
        access = KubeAccess(kubeconfig=str(kubeconfig))
        requests, models = StackWatch(), ModelWatch()
        with open_client(access) as admin:
            stack = load_world(cluster, admin, documents)
            project = PulumiProject.create(root / "pulumi")
            project.config_set({"magicstick:kubeconfig": str(kubeconfig)})
            operator = Operator(project=project, cluster=cluster, requests=requests, scratch=root, refresh=refresh)
            with (
                following(watch_stack, access, stack, requests),
                following(watch_models, access, MODEL_NAMESPACE, models),
                trigger_process(
                    kubeconfig, SYSTEM_NAMESPACE, target_namespaces=(MODEL_NAMESPACE,), quiet_ms=DEFAULT_QUIET_MS,
                    max_delay_ms=DEFAULT_MAX_DELAY_MS, resync_seconds=RESYNC_SECONDS, log=root / "trigger.log",
                ),
            ):  # fmt: skip
                launched = time.monotonic()
                first = requests.wait_for(1, SETTLE_SECONDS)
                if first is None:
                    raise RuntimeError(f"the trigger made no request at start:\n{(root / 'trigger.log').read_text()}")
                ups, converged = converge(operator, admin)
                timed = []
                for index in range(edits):
                    edit = edit_once(operator, admin, models, targets[index % len(targets)], FIRST_MAX_NUM_SEQS + index)
                    timed.append(edit)
                    progress(edit.line(index + 1, edits))
    return EditLatency(
        world=world,
        edits=tuple(timed),
        converge_seconds=tuple(up.seconds for up in ups),
        converge_changes=tuple(len(changes(up.run)) for up in ups),
        converged=converged,
        resources=len(ups[-1].run.operations()),
        refresh=refresh,
        trigger_start_seconds=first[0] - launched,
        load_before=load_before,
        load_after=os.getloadavg(),
    )


# --- the report ------------------------------------------------------------------------------

EXPLAINED: Final = {
    "total": "edit written -> the Model's spec shows it (watch)",
    "trigger": "edit written -> the new request on the Stack (watch)",
    "program": "program start -> the SDK sends the Model's registration",
    "program plan": "observe, plan, construct every resource (to the run line)",
    "program register": "the SDK resolves and serializes inputs, until the Model's",
    "engine": "CLI start -> program start, and Model registered -> applied",
    "engine start": "CLI, plugins, language host, until the program starts",
    "engine apply": "engine steps before it, provider check, diff, server-side apply",
    "other": "request seen -> CLI started (the PKO stand-in)",
}


def _row(label: str, values: Sequence[float], note: str) -> str:
    return f"{label:<22} {percentile(values, 50):>7.2f} {percentile(values, 95):>7.2f} {max(values):>7.2f}  {note}"


def report(result: EditLatency) -> str:
    world = result.world
    command = "pulumi up --yes --skip-preview" + (" --refresh" if result.refresh else "")
    lines = [
        f"edit latency: {world.activations} ModelActivations, {world.instances} AppInstances, {world.nodes} nodes "
        f"({result.resources} resources in the stack); real pulumi and pulumi-kubernetes, file backend, the live cluster",
        f"trigger: its real process, quiet {DEFAULT_QUIET_MS} ms, max delay {DEFAULT_MAX_DELAY_MS} ms; "
        f"its start request {result.trigger_start_seconds:.1f} s after launch",
        f"PKO played by the benchmark: one `{command}` per request, started when the request is seen; "
        "PKO's own pod start (workspace, source, plugins) is excluded",
        f"converge before the edits: {len(result.converge_seconds)} ups {_seconds_list(result.converge_seconds)}, "
        f"changes {list(result.converge_changes)}; "
        + ("the last changed nothing" if result.converged else "NOT converged: the last still changed something"),
        "",
        f"{'over ' + str(len(result.edits)) + ' edits':<22} {'p50 s':>7} {'p95 s':>7} {'max s':>7}",
        _row("total", result.values("total"), EXPLAINED["total"]),
    ]
    for split in SPLITS:
        lines.append(_row(f"  {split}", result.values(split), EXPLAINED[split]))
        lines += [_row(f"    {part}", result.values(part), EXPLAINED[part]) for part in PARTS.get(split, ())]
    ups = [edit.up_seconds for edit in result.edits]
    follow = [seconds for edit in result.edits for seconds in edit.follow_up_seconds]
    lines.append(_row("the edit's whole up", ups, "not in the total: it goes on after the Model"))
    if follow:
        changed = sum(sum(edit.follow_up_changes) for edit in result.edits)
        note = f"{len(follow)} runs the trigger requested after the edits' ups; they changed {changed} resources"
        lines.append(_row("follow-up ups", follow, note))
    verbs: Counter[str] = Counter()
    for edit in result.edits:
        verbs.update(edit.requests)
    per_up = ", ".join(f"{verb} {count / len(result.edits):.0f}" for verb, count in verbs.most_common())
    lines.append(
        f"API requests per edit's up (every client, /metrics apiserver_request_total; no audit log to single out the provider): {per_up}"
    )
    cpus = os.cpu_count() or 1
    busy = result.load_before[0] >= cpus
    lines.append(
        f"load: {cpus} CPUs, load average {result.load_before[0]:.1f} before the benchmark started its processes and "
        f"{result.load_after[0]:.1f} at the end (its own API server, etcd, trigger and engine count in it); "
        + (
            "the machine was busy before: the figures are not representative"
            if busy
            else "no other job kept the CPUs busy at the start"
        )
    )
    if len(result.edits) != EDITS:
        lines.append(f"only {len(result.edits)} edits were measured; the goal is stated over {EDITS}")
    verdict = "met" if result.goal_met else "NOT met"
    lines.append(
        f"goal 1 (edit -> applied p95 <= {GOAL_SECONDS:g} s over {EDITS} edits): {verdict} (p95 {result.p95:.1f} s)"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=EDITS, help=f"edits timed one by one (default {EDITS})")
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="every up with --refresh, as PKO runs it for deploy/stack.yaml's `refresh: true`",
    )
    parser.add_argument(
        "--pko",
        action="store_true",
        help="through the real Pulumi Kubernetes Operator on a real node instead (root; benchmarks/edit_latency_pko.py)",
    )
    options = parser.parse_args(argv)
    if options.edits < 1:
        parser.error("--edits must be at least 1")
    if options.pko:
        from benchmarks import edit_latency_pko  # the real node's parts load only for this mode

        edit_latency_pko.main(options.edits)
        return
    print(report(measure(options.edits, refresh=options.refresh)))


if __name__ == "__main__":
    main()
