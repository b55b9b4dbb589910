"""Benchmark of the dashboard: the overview page's server time at 200 models and 50 instances,
and how long a status change takes to reach an open page.

It starts its own kube-apiserver (build it first with scripts/toolchain/build.sh) with the
upstream CRDs, and the dashboard world of tests/services/dashboard/world.py: the program's CRDs,
the role RBAC, the admission policy and the dashboard's ServiceAccount as they ship, a test
issuer, and the dashboard as its console script, acting as that ServiceAccount (which can do
nothing but impersonate the signed-in user). As the API server's admin it creates
Appliance/local, 200 local CPU ModelActivations and 50 AppInstances, and writes a status on each
through /status as the program would (phase, reason, message, conditions, all of the current
generation), so the page renders real statuses. Then, signed in as a viewer:

1. Overview: N renders of `GET /` one after the other (N = 50, `--small` 10), after
   WARM_UP renders not counted (the token's first verification, the connections). The server's
   time is the `Server-Timing: app;dur=<ms>` header the dashboard sets on every response
   (services/dashboard/app.py, ServerTiming): from the request's arrival to the start of the
   response, so the sign-in, the six API reads as the user and the Jinja2 render are all in it.
   Prints p50, p95 and max, the client's round trip beside it, the page's size, and the
   in-process medians of the page's two parts: the API reads as operations.overview does them
   (over the dashboard's own kubeconfig, impersonating the viewer), and the render of that
   view by the page's template. Goal: p95 at most 100 ms.
2. Live status: opens the page's stream, /api/v1/stream, waits for `ready` and for the first
   summary of every object created, then N times (N = 20, `--small` 5) writes a new phase on
   one model through /status and times from just before the write to the arrival of the
   `status` event with that model's key (`ModelActivation/<name>`), the new phase and the
   write's resourceVersion. A change that gives no such event within SETTLE_SECONDS counts as
   infinitely late. Goal: p95 at most 1 s.
3. Overview among open streams: N renders of `GET /` (as in 1) with no stream open, then with
   STREAMS (200) streams open at once, spread over as many viewers as the dashboard's per-user
   bound needs (services/dashboard/hub.py STREAMS_PER_USER: 16 each, so 13 viewers), every
   stream having said `ready` and sent the first summary of every object, and the dashboard
   being quiet again (under 5% of a core: the streams' start is done). Beside each series, the
   dashboard's own CPU time per render (/proc), which the machine's other load does not change.
   Then M times (M = 5, `--small` 2) a status change, timed until it has reached every one of
   those streams. Goal: the overview's p95 with the streams open within 2x of its p95 with none
   (issue 42: with 100 streams open, a plain request took 18 s and failed).

The benchmark (its HTTP clients, the stream's reader) runs on the same machine as the dashboard
and the API server and shares their cores; the load average is printed at the start and at the
end. Figures are printed, nothing is asserted. Run from the repository root:

    venv/bin/python -m benchmarks.dashboard [--small] [--renders 50] [--changes 20] [--models 200] [--instances 50] [--streams 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

import httpx

from providers.kinds import APP_INSTANCE, APPLIANCE, HOST_OPERATION, MODEL_ACTIVATION, MODULE_ACTIVATION
from providers.kube import KubeAccess, KubeClient, ResourceKind, open_client
from services.dashboard import operations
from services.dashboard.cluster import RuntimeRequests
from services.dashboard.hub import STREAMS_PER_USER
from services.dashboard.identity import identity_of
from services.dashboard.pages import TEMPLATES
from services.dashboard.settings import DEFAULT_USER_PREFIX, ClaimNames
from services.dashboard.summaries import summary_of
from tests.cluster.apiserver import install_crds, running_cluster, upstream_crd_paths
from tests.services.dashboard.world import NAMESPACE, ROLES, TOKEN_HEADER, World, running_world

API_VERSION: Final = "appliance.magicstick.dev/v1alpha1"
MODELS: Final = 200
INSTANCES: Final = 50
RENDERS: Final = 50
SMALL_RENDERS: Final = 10
CHANGES: Final = 20
SMALL_CHANGES: Final = 5
WARM_UP: Final = 3
OVERVIEW_GOAL_MS: Final = 100.0
CHANGE_GOAL_MS: Final = 1000.0
GOAL_PERCENTILE: Final = 95
ROLE: Final = "viewer"
PROGRAM: Final = "benchmark-program"
"""The field manager of the status writes: the benchmark plays the program."""
LOADER: Final = "benchmark-loader"
STREAMS: Final = 200
CROWD_CHANGES: Final = 5
SMALL_CROWD_CHANGES: Final = 2
CROWD_GOAL_RATIO: Final = 2.0
"""The overview's p95 with STREAMS streams open may be at most this many times its p95 with none."""
QUIET_SHARE: Final = 0.05
QUIET_WINDOW_SECONDS: Final = 0.5
SETTLE_SECONDS: Final = 10.0
"""The longest one status change may take to reach the stream before it counts as missed."""
STREAM_START_SECONDS: Final = 60.0
"""The longest the stream may take to say `ready` and send the first summary of every object."""
TRANSITION_TIME: Final = "2026-01-01T00:00:00Z"
SERVER_TIMING: Final = re.compile(r"(?:^|,)\s*app\s*;(?:[^,]*;)?\s*dur=([0-9.]+)")


# Pure parts: what the figures mean, and how the answers are read ------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile of `values`, interpolated between ranks as statistics.quantiles'
    inclusive method (and numpy's default) does; an infinite value (a missed sample) stays
    infinite. NaN for no values. Pure."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    fraction = rank - low
    if fraction == 0 or low + 1 >= len(ordered):
        return ordered[low]
    below, above = ordered[low], ordered[low + 1]
    if math.isinf(above):
        return math.inf
    return below + (above - below) * fraction


@dataclass(frozen=True)
class Spread:
    """p50, p95 and max of a series of milliseconds; `missed` counts the infinite ones."""

    count: int
    p50: float
    p95: float
    max: float
    missed: int

    def text(self) -> str:
        missed = f", {self.missed} missed" if self.missed else ""
        return f"p50 {_ms(self.p50)}, p95 {_ms(self.p95)}, max {_ms(self.max)} over {self.count}{missed}"


def spread(values_ms: Sequence[float]) -> Spread:
    """The Spread of `values_ms`. Pure."""
    return Spread(
        count=len(values_ms),
        p50=percentile(values_ms, 50),
        p95=percentile(values_ms, 95),
        max=max(values_ms, default=math.nan),
        missed=sum(1 for value in values_ms if math.isinf(value)),
    )


def _ms(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "never"
    return f"{value:.1f} ms" if value < 10 else f"{value:.0f} ms"


@dataclass(frozen=True)
class Verdict:
    goal: str
    met: bool
    figures: str

    def line(self) -> str:
        return f"goal ({self.goal}): {'met' if self.met else 'NOT met'} ({self.figures})"


def verdict(goal: str, figures: Spread, bound_ms: float) -> Verdict:
    """Met when the series has samples and its p95 is at most `bound_ms`. Pure."""
    met = figures.count > 0 and figures.p95 <= bound_ms
    return Verdict(goal=f"{goal}: p{GOAL_PERCENTILE} <= {bound_ms:g} ms", met=met, figures=figures.text())


def verdicts(
    overview_ms: Sequence[float], change_ms: Sequence[float], *, models: int = MODELS, instances: int = INSTANCES
) -> list[Verdict]:
    """The two goals of issue 29's Performance bullet, from the server times of the overview's
    renders and the latencies of the status changes. Pure."""
    return [
        verdict(
            f"the overview renders on the server at {models} models and {instances} instances",
            spread(overview_ms),
            OVERVIEW_GOAL_MS,
        ),
        verdict("a status change reaches an open page", spread(change_ms), CHANGE_GOAL_MS),
    ]


def crowd_verdict(idle_ms: Sequence[float], crowded_ms: Sequence[float], *, streams: int = STREAMS) -> Verdict:
    """Met when both series have samples and the p95 with `streams` streams open is at most
    CROWD_GOAL_RATIO times the p95 with none. Pure."""
    idle, crowded = spread(idle_ms), spread(crowded_ms)
    ratio = crowded.p95 / idle.p95 if idle.count and crowded.count and idle.p95 > 0 else math.nan
    met = idle.count > 0 and crowded.count > 0 and crowded.p95 <= CROWD_GOAL_RATIO * idle.p95
    figures = f"p95 {_ms(crowded.p95)} with the streams open, {_ms(idle.p95)} with none: {ratio:.2f}x"
    return Verdict(
        goal=f"the overview with {streams} streams open: p{GOAL_PERCENTILE} within {CROWD_GOAL_RATIO:g}x of none",
        met=met,
        figures=figures,
    )


def stream_users(streams: int, per_user: int = STREAMS_PER_USER) -> list[str]:
    """The viewer each of `streams` streams signs in as: as few viewers as the per-user bound
    allows, each filled in turn. Pure."""
    return [f"crowd-viewer-{index // per_user:02d}" for index in range(streams)]


def server_duration_ms(header: str | None) -> float | None:
    """The `app` metric's duration in a Server-Timing header (`app;dur=12.3`, among others or
    alone); None when absent. Pure."""
    if not header:
        return None
    found = SERVER_TIMING.search(header)
    return float(found.group(1)) if found else None


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    data: str


@dataclass
class EventParser:
    """Server-sent events from the stream's lines, as the EventSource standard reads them:
    `event:` and `data:` fields (data lines joined by newlines), a comment line (`:`, the pings)
    ignored, a blank line ending the event; the event type defaults to `message`."""

    _event: str = ""
    _data: list[str] = field(default_factory=list)

    def feed(self, line: str) -> ServerSentEvent | None:
        """The event `line` completes, if any. Pure (of the parser's own state)."""
        line = line.rstrip("\r")
        if not line:
            if not self._data and not self._event:
                return None
            completed = ServerSentEvent(event=self._event or "message", data="\n".join(self._data))
            self._event, self._data = "", []
            return completed
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


def is_change(event: ServerSentEvent, *, key: str, phase: str, resource_version: str) -> bool:
    """Whether `event` is the `status` event of the change written: the object's key, its new
    phase and the resourceVersion the write returned. Pure."""
    if event.event != "status":
        return False
    try:
        data = json.loads(event.data)
    except ValueError:
        return False
    return (
        isinstance(data, dict)
        and data.get("key") == key
        and data.get("phase") == phase
        and data.get("resourceVersion") == resource_version
    )


def model_activation(name: str) -> dict[str, Any]:
    """A local CPU ModelActivation of the catalogued preset qwen2505bcpu (vLLM). Pure."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelActivation",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"type": "local", "local": {"preset": "qwen2505bcpu", "engine": "VLLM", "computeTarget": "cpu"}},
    }


def app_instance(name: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "AppInstance",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"application": "openclaw"},
    }


def appliance() -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Appliance",
        "metadata": {"name": operations.APPLIANCE_NAME, "namespace": NAMESPACE},
        "spec": {"profile": "ai-workstation"},
    }


def status_of(obj: Mapping[str, Any], phase: str, *, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The /status apply body the program would write for `obj` in `phase`: every condition and
    the status itself of the object's current generation, Ready True only in phase Ready. Pure."""
    generation = int(obj["metadata"].get("generation") or 1)
    ready = phase == "Ready"
    message = "serving" if ready else f"{phase.lower()}: waiting for the workload"
    conditions = [
        {"type": "Accepted", "status": "True", "reason": "Planned", "message": "the request is valid and planned",
         "observedGeneration": generation, "lastTransitionTime": TRANSITION_TIME},
        {"type": "Ready", "status": "True" if ready else "False", "reason": "Ready" if ready else phase, "message": message,
         "observedGeneration": generation, "lastTransitionTime": TRANSITION_TIME},
    ]  # fmt: skip
    metadata = {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"]}
    status = {
        "phase": phase,
        "reason": "Ready" if ready else phase,
        "message": message,
        "observedGeneration": generation,
        "conditions": conditions,
        **(extra or {}),
    }
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": metadata, "status": status}


def initial_phase(index: int) -> str:
    """Most objects Ready, every tenth Starting, as on a busy appliance. Pure."""
    return "Starting" if index % 10 == 9 else "Ready"


def other_phase(phase: str) -> str:
    """The phase a status change writes next. Pure."""
    return "Starting" if phase == "Ready" else "Ready"


# The cluster side -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Populated:
    models: dict[str, str]
    """Each model's name and its phase now."""
    keys: frozenset[str]
    """The summary key of every object written, as the stream sends them."""


def _created_with_status(
    admin: KubeClient, kind: ResourceKind, body: Mapping[str, Any], phase: str, extra: Mapping[str, Any] | None = None
) -> None:
    created = admin.create(kind, body, field_manager=LOADER)
    admin.apply(kind, status_of(created, phase, extra=extra), field_manager=PROGRAM, subresource="status")


def populate(admin: KubeClient, *, models: int, instances: int) -> Populated:
    """Appliance/local, `models` ModelActivations and `instances` AppInstances, each with a status."""
    _created_with_status(admin, APPLIANCE, appliance(), "Ready")
    phases: dict[str, str] = {}
    for index in range(models):
        name, phase = f"bench-model-{index:03d}", initial_phase(index)
        _created_with_status(
            admin, MODEL_ACTIVATION, model_activation(name), phase, {"memoryRequiredMi": 1536 + 8 * index}
        )
        phases[name] = phase
    instance_names = [f"bench-app-{index:03d}" for index in range(instances)]
    for index, name in enumerate(instance_names):
        _created_with_status(
            admin, APP_INSTANCE, app_instance(name), initial_phase(index), {"url": f"https://{name}.example.local/"}
        )
    keys = {
        f"Appliance/{operations.APPLIANCE_NAME}",
        *(f"ModelActivation/{name}" for name in phases),
        *(f"AppInstance/{name}" for name in instance_names),
    }
    return Populated(models=phases, keys=frozenset(keys))


# 1. The overview ------------------------------------------------------------------------------


@dataclass(frozen=True)
class OverviewRuns:
    server_ms: list[float]
    client_ms: list[float]
    page_bytes: int


def overview_renders(client: httpx.Client, count: int) -> OverviewRuns:
    """`count` renders of GET / after WARM_UP, one after the other; the server's and the client's times."""
    for _ in range(WARM_UP):
        client.get("/").raise_for_status()
    server, round_trips, size = [], [], 0
    for _ in range(count):
        started = time.perf_counter()
        answer = client.get("/")
        round_trips.append((time.perf_counter() - started) * 1000)
        answer.raise_for_status()
        duration = server_duration_ms(answer.headers.get("server-timing"))
        if duration is None:
            raise RuntimeError("the dashboard sent no Server-Timing header (services/dashboard/app.py, ServerTiming)")
        server.append(duration)
        size = len(answer.content)
    return OverviewRuns(server_ms=server, client_ms=round_trips, page_bytes=size)


@dataclass(frozen=True)
class Parts:
    reads_ms: float
    """operations.overview: every read of the page, one after the other."""
    read_ms: dict[str, float]
    """Each of those reads alone."""
    render_ms: float
    requests: int


def _median_ms(work: Callable[[], object], repeats: int) -> float:
    work()
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def overview_parts(kubeconfig: Path, repeats: int) -> Parts:
    """The page's parts in this process, as the dashboard does them: the API reads
    (operations.overview over the dashboard's kubeconfig, impersonating the viewer), each read
    alone, and the render of that view by overview.html. Medians over `repeats`, after one of each."""
    identity = identity_of({"sub": ROLES[ROLE], "roles": [ROLE]}, names=ClaimNames(), user_prefix=DEFAULT_USER_PREFIX)
    template = TEMPLATES.get_template("overview.html")
    with open_client(KubeAccess(kubeconfig=str(kubeconfig))) as kube:
        impersonated = kube.impersonating(identity.kubernetes_user, identity.kubernetes_groups)
        requests = RuntimeRequests(impersonated, namespace=NAMESPACE)
        view = operations.overview(requests, stack_name="magicstick")
        before = impersonated.requests
        operations.overview(requests, stack_name="magicstick")
        per_render = impersonated.requests - before
        reads = _median_ms(lambda: operations.overview(requests, stack_name="magicstick"), repeats)
        each: dict[str, Callable[[], object]] = {
            "Events": requests.events,
            "Appliance/local": lambda: requests.get_or_none(APPLIANCE, operations.APPLIANCE_NAME),
        }
        for kind in (MODULE_ACTIVATION, MODEL_ACTIVATION, APP_INSTANCE, HOST_OPERATION):
            each[kind.plural] = partial(requests.list, kind)
        read = {name: _median_ms(work, repeats) for name, work in each.items()}

    def render() -> str:
        return template.render(request=None, identity=identity, summary_of=summary_of, title="Overview", view=view)

    return Parts(reads_ms=reads, read_ms=read, render_ms=_median_ms(render, repeats), requests=per_render)


# 2. Live status -------------------------------------------------------------------------------


class Stream:
    """The page's event stream, read on a thread of its own; every event with its arrival time
    (time.monotonic())."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client
        self._events: list[tuple[float, ServerSentEvent]] = []
        self._condition = threading.Condition()
        self._socket: socket.socket | None = None
        self._stopping = threading.Event()
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._read, name="benchmark-stream", daemon=True)

    def __enter__(self) -> Stream:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopping.set()
        if self._socket is not None:
            try:
                self._socket.shutdown(socket.SHUT_RDWR)  # wakes the reader's blocked read
            except OSError:
                pass
        self._thread.join(timeout=10)

    def _read(self) -> None:
        parser = EventParser()
        try:
            with self._client.stream("GET", "/api/v1/stream", timeout=httpx.Timeout(15, read=None)) as response:
                response.raise_for_status()
                network = response.extensions.get("network_stream")
                self._socket = network.get_extra_info("socket") if network is not None else None
                for line in response.iter_lines():
                    event = parser.feed(line)
                    if event is not None:
                        arrived = time.monotonic()
                        with self._condition:
                            self._events.append((arrived, event))
                            self._condition.notify_all()
        except (httpx.HTTPError, OSError) as error:
            if not self._stopping.is_set():
                self.failure = error
        finally:
            with self._condition:
                self._condition.notify_all()

    def count(self) -> int:
        with self._condition:
            return len(self._events)

    def wait_for(
        self, matches: Callable[[ServerSentEvent], bool], *, start: int, timeout: float
    ) -> tuple[int, float] | None:
        """(index, arrival time) of the first event from index `start` on that `matches`; None after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        index = start
        with self._condition:
            while True:
                while index < len(self._events):
                    arrived, event = self._events[index]
                    if matches(event):
                        return index, arrived
                    index += 1
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return None
                self._condition.wait(left)

    def wait_for_keys(self, keys: frozenset[str], *, start: int, timeout: float) -> bool:
        """Whether a `status` event of every key in `keys` arrived within `timeout` seconds."""
        missing = set(keys)

        def seen(event: ServerSentEvent) -> bool:
            if event.event == "status":
                missing.discard(json.loads(event.data).get("key"))
            return not missing

        return self.wait_for(seen, start=start, timeout=timeout) is not None


def status_changes(admin: KubeClient, stream: Stream, populated: Populated, count: int) -> list[float]:
    """Latency in ms of `count` status changes, each on another model, one after the other."""
    names = sorted(populated.models)
    step = max(1, len(names) // max(1, count))
    latencies = []
    for index in range(count):
        name = names[(index * step) % len(names)]
        phase = other_phase(populated.models[name])
        current = admin.get(MODEL_ACTIVATION, name, NAMESPACE)
        body = status_of(
            current, phase, extra={"memoryRequiredMi": (current.get("status") or {}).get("memoryRequiredMi")}
        )
        start = stream.count()
        started = time.monotonic()
        written = admin.apply(MODEL_ACTIVATION, body, field_manager=PROGRAM, subresource="status")
        version = str(written["metadata"]["resourceVersion"])
        populated.models[name] = phase
        found = stream.wait_for(
            partial(is_change, key=f"ModelActivation/{name}", phase=phase, resource_version=version),
            start=start,
            timeout=SETTLE_SECONDS,
        )
        latencies.append((found[1] - started) * 1000 if found is not None else math.inf)
    return latencies


# 3. The overview among open streams -------------------------------------------------------------


class CrowdStream:
    """One of many open streams, read on the benchmark's event loop: the keys it has had a
    status of, and when each (key, resourceVersion) arrived."""

    def __init__(self, user: str, token: str, keys: frozenset[str], changed: asyncio.Condition) -> None:
        self.user = user
        self._token = token
        self._missing = set(keys)
        self._changed = changed
        self.started = asyncio.Event()
        """Set once the stream said `ready` and sent every key's first summary (or failed)."""
        self.arrived: dict[tuple[str, str], float] = {}
        self.failure: str | None = None

    async def read(self, client: httpx.AsyncClient) -> None:
        parser = EventParser()
        try:
            async with client.stream("GET", "/api/v1/stream", headers={TOKEN_HEADER: self._token}) as response:
                if response.status_code != 200:
                    await response.aread()
                    self.failure = f"{response.status_code} {response.text[:200]}"
                    return
                async for line in response.aiter_lines():
                    event = parser.feed(line)
                    if event is not None and event.event == "status":
                        await self._seen(json.loads(event.data))
                self.failure = "the stream ended"
        except httpx.HTTPError as error:
            self.failure = f"{type(error).__name__}: {error}"
        finally:
            self.started.set()

    async def _seen(self, data: dict[str, Any]) -> None:
        key = str(data.get("key"))
        self.arrived[(key, str(data.get("resourceVersion")))] = time.monotonic()
        self._missing.discard(key)
        if not self._missing:
            self.started.set()
        async with self._changed:
            self._changed.notify_all()


@dataclass(frozen=True)
class CrowdRuns:
    users: int
    started_ms: float
    """From opening the streams to the last one's last first summary."""
    settled_ms: float
    """From then until the dashboard was quiet (QUIET_SHARE of a core)."""
    idle: OverviewRuns
    crowded: OverviewRuns
    idle_cpu_ms: float | None
    crowded_cpu_ms: float | None
    """The dashboard's CPU time per render (with the warm-up renders), without and with the
    streams open: what the machine's other load does not change."""
    fan_out_ms: list[float]
    """Each status change: from the write to its arrival on the last of the streams."""


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system) process `pid` has used so far; None without /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured_renders(client: httpx.Client, count: int, pid: int) -> tuple[OverviewRuns, float | None]:
    """overview_renders, and the dashboard's (process `pid`) CPU milliseconds per render."""
    before = cpu_seconds(pid)
    runs = overview_renders(client, count)
    after = cpu_seconds(pid)
    per_render = (after - before) * 1000 / (count + WARM_UP) if before is not None and after is not None else None
    return runs, per_render


async def quiet(pid: int) -> float:
    """Milliseconds until process `pid` uses less than QUIET_SHARE of a core over QUIET_WINDOW_SECONDS
    (at most SETTLE_SECONDS; at once without /proc): what the streams' start left to do is done."""
    started = time.monotonic()
    while time.monotonic() - started < SETTLE_SECONDS:
        before = cpu_seconds(pid)
        await asyncio.sleep(QUIET_WINDOW_SECONDS)
        after = cpu_seconds(pid)
        if before is None or after is None or after - before < QUIET_SHARE * QUIET_WINDOW_SECONDS:
            break
    return (time.monotonic() - started) * 1000


async def crowd(world: World, populated: Populated, *, streams: int, renders: int, changes: int) -> CrowdRuns:
    """Figure 3 (the module's docstring)."""
    pid = world.dashboard.process.pid
    with world.dashboard.client(ROLE) as client:
        idle, idle_cpu = await asyncio.to_thread(measured_renders, client, renders, pid)
        users = stream_users(streams)
        changed = asyncio.Condition()
        crowd = [
            CrowdStream(user, world.dashboard.keys.token(sub=user, roles=[ROLE]), populated.keys, changed)
            for user in users
        ]
        limits = httpx.Limits(max_connections=streams + 8, max_keepalive_connections=8)
        async with httpx.AsyncClient(
            base_url=world.dashboard.url, limits=limits, timeout=httpx.Timeout(15, read=None)
        ) as streaming:
            opened = time.monotonic()
            readers = [asyncio.create_task(each.read(streaming)) for each in crowd]
            try:
                await asyncio.wait_for(asyncio.gather(*(each.started.wait() for each in crowd)), STREAM_START_SECONDS)
                failed = [f"{each.user}: {each.failure}" for each in crowd if each.failure is not None]
                if failed:
                    raise RuntimeError(f"{len(failed)} of {streams} streams failed, the first: {failed[0]}")
                started_ms = (time.monotonic() - opened) * 1000
                settled_ms = await quiet(pid)
                crowded, crowded_cpu = await asyncio.to_thread(measured_renders, client, renders, pid)
                fan_out = [await _fanned_out(world.admin, populated, crowd, changed, index) for index in range(changes)]
            finally:
                for reader in readers:
                    reader.cancel()
                await asyncio.gather(*readers, return_exceptions=True)
    return CrowdRuns(
        users=len(set(users)),
        started_ms=started_ms,
        settled_ms=settled_ms,
        idle=idle,
        crowded=crowded,
        idle_cpu_ms=idle_cpu,
        crowded_cpu_ms=crowded_cpu,
        fan_out_ms=fan_out,
    )


async def _fanned_out(
    admin: KubeClient, populated: Populated, crowd: Sequence[CrowdStream], changed: asyncio.Condition, index: int
) -> float:
    """Milliseconds from one status write to its arrival on the last stream (infinite when one
    misses it by SETTLE_SECONDS)."""
    names = sorted(populated.models)
    name = names[-1 - index % len(names)]
    phase = other_phase(populated.models[name])

    def write() -> str:
        current = admin.get(MODEL_ACTIVATION, name, NAMESPACE)
        body = status_of(
            current, phase, extra={"memoryRequiredMi": (current.get("status") or {}).get("memoryRequiredMi")}
        )
        return str(
            admin.apply(MODEL_ACTIVATION, body, field_manager=PROGRAM, subresource="status")["metadata"][
                "resourceVersion"
            ]
        )

    started = time.monotonic()
    version = await asyncio.to_thread(write)
    populated.models[name] = phase
    wanted = (f"ModelActivation/{name}", version)

    def everywhere() -> bool:
        return all(wanted in each.arrived for each in crowd)

    try:
        async with changed:
            await asyncio.wait_for(changed.wait_for(everywhere), SETTLE_SECONDS)
    except TimeoutError:
        return math.inf
    return (max(each.arrived[wanted] for each in crowd) - started) * 1000


# The run --------------------------------------------------------------------------------------


def run(
    world: World,
    workdir: Path,
    *,
    models: int,
    instances: int,
    renders: int,
    changes: int,
    streams: int = STREAMS,
    crowd_changes: int = CROWD_CHANGES,
    out: Callable[[str], None] = print,
) -> list[Verdict]:
    started = time.monotonic()
    populated = populate(world.admin, models=models, instances=instances)
    out(
        f"created Appliance/local, {models} ModelActivations and {instances} AppInstances with their statuses in {time.monotonic() - started:.1f} s"
    )
    with world.dashboard.client(ROLE) as client:
        runs = overview_renders(client, renders)
        server, client_side = spread(runs.server_ms), spread(runs.client_ms)
        out(
            f"overview GET / as a {ROLE}, {renders} renders after {WARM_UP} not counted, page {runs.page_bytes / 1024:.0f} KiB:"
        )
        out(f"  server (Server-Timing app;dur): {server.text()}")
        out(f"  client round trip:              {client_side.text()}")
        parts = overview_parts(workdir / "dashboard.kubeconfig", max(renders, 5))
        split = ", ".join(f"{name} {ms:.1f}" for name, ms in parts.read_ms.items())
        out(
            f"  in-process medians of its parts: the API reads {parts.reads_ms:.1f} ms ({parts.requests} requests as the {ROLE}; "
            f"alone, ms: {split}), the render of overview.html {parts.render_ms:.1f} ms"
        )
        with Stream(client) as stream:
            opened = time.monotonic()
            ready = stream.wait_for(lambda event: event.event == "ready", start=0, timeout=STREAM_START_SECONDS)
            if ready is None:
                raise RuntimeError(f"the stream did not say ready within {STREAM_START_SECONDS:g} s ({stream.failure})")
            if not stream.wait_for_keys(populated.keys, start=ready[0] + 1, timeout=STREAM_START_SECONDS):
                raise RuntimeError(
                    f"the stream did not send every object's summary within {STREAM_START_SECONDS:g} s ({stream.failure})"
                )
            out(
                f"stream /api/v1/stream as a {ROLE}: ready after {(ready[1] - opened) * 1000:.0f} ms, the first summary of all "
                f"{len(populated.keys)} objects after {(time.monotonic() - opened) * 1000:.0f} ms"
            )
            latencies = status_changes(world.admin, stream, populated, changes)
        out(
            f"status change (write to /status) -> its event on the open stream, {changes} changes: {spread(latencies).text()}"
        )
    crowded = asyncio.run(crowd(world, populated, streams=streams, renders=renders, changes=crowd_changes))
    viewers = f"{crowded.users} viewers, at most {STREAMS_PER_USER} streams each (the dashboard's per-user bound)"
    out(
        f"overview GET / as a {ROLE} with {streams} streams open ({viewers}; all ready with every summary after "
        f"{crowded.started_ms:.0f} ms, the dashboard quiet {crowded.settled_ms:.0f} ms later):"
    )
    for label, figures, cpu in (
        ("no stream open", crowded.idle, crowded.idle_cpu_ms),
        (f"{streams} streams open", crowded.crowded, crowded.crowded_cpu_ms),
    ):
        used = f"; the dashboard's CPU {cpu:.0f} ms per render" if cpu is not None else ""
        out(
            f"  {label + ':':20} server {spread(figures.server_ms).text()}; client round trip {spread(figures.client_ms).text()}{used}"
        )
    out(
        f"status change -> its event on every one of the {streams} streams, {crowd_changes} changes: {spread(crowded.fan_out_ms).text()}"
    )
    found = [
        *verdicts(runs.server_ms, latencies, models=models, instances=instances),
        crowd_verdict(crowded.idle.server_ms, crowded.crowded.server_ms, streams=streams),
    ]
    for each in found:
        out(each.line())
    if (models, instances) != (MODELS, INSTANCES):
        out(
            f"(the overview goal is stated at {MODELS} models and {INSTANCES} instances; judged here at {models} and {instances})"
        )
    return found


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--small",
        action="store_true",
        help=f"{SMALL_RENDERS} renders and {SMALL_CHANGES} changes (what .ci/run prints)",
    )
    parser.add_argument(
        "--renders", type=int, help=f"overview renders timed (default {RENDERS}, --small {SMALL_RENDERS})"
    )
    parser.add_argument(
        "--changes", type=int, help=f"status changes timed (default {CHANGES}, --small {SMALL_CHANGES})"
    )
    parser.add_argument("--models", type=int, default=MODELS, help="ModelActivations created")
    parser.add_argument("--instances", type=int, default=INSTANCES, help="AppInstances created")
    parser.add_argument(
        "--streams",
        type=int,
        default=STREAMS,
        help=f"streams open at once for the overview among streams (default {STREAMS})",
    )
    options = parser.parse_args(argv)
    renders = options.renders if options.renders is not None else SMALL_RENDERS if options.small else RENDERS
    changes = options.changes if options.changes is not None else SMALL_CHANGES if options.small else CHANGES
    crowd_changes = SMALL_CROWD_CHANGES if options.small else CROWD_CHANGES
    if renders < 1 or changes < 1 or options.models < 1 or options.instances < 0 or options.streams < 1:
        parser.error("--renders, --changes, --models and --streams must be at least 1, --instances at least 0")
    print(f"dashboard benchmark: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    with running_cluster() as cluster, tempfile.TemporaryDirectory(prefix="dashboard-benchmark-") as scratch:
        install_crds(cluster, upstream_crd_paths())
        with contextmanager(running_world)(cluster, Path(scratch)) as world:
            run(
                world,
                Path(scratch),
                models=options.models,
                instances=options.instances,
                renders=renders,
                changes=changes,
                streams=options.streams,
                crowd_changes=crowd_changes,
            )
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
