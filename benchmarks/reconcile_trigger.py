"""Benchmark of the reconcile trigger: change-to-request latency, requests per burst, and churn.

It starts its own kube-apiserver (build it first with scripts/toolchain/build.sh), installs
the program's CRDs, the upstream ones and PKO's Stack, creates a Stack, and runs the trigger as
its real process (`python -m services.reconcile_trigger.main`, the console script's module). The
benchmark watches the Stack itself and times when each new `pulumi.com/reconciliation-request`
value arrives.

With the default timing (a quiet period of 500 ms, a maximum delay of 2 s):

1. Latency: one ModelActivation spec edit at a time; from just before the write to the moment
   the new request value is seen on the Stack. Prints p50, p95 and max (goal: p95 at most 1 s).
2. Burst: N changes (ConfigMap updates) spread evenly over S seconds; prints how many requests
   they gave once things settled (goal for 1,000 in 10 s: at most 10).

Then, with a second trigger process:

3. Churn: a model Pod crash-loops, restarting every 10 s for 10 minutes (the kubelet writes its
   status twice a restart: running again, then back-off), and halfway through a ModelActivation
   spec edit comes. Prints how many runs were requested during the 10 minutes (goal: at most
   20) and the edit's latency to its request (goal: at most 1 s). Ten minutes is too long to
   wait for by default: every duration of the scenario and of the trigger's timing (quiet
   period, maximum delay, resync interval) is divided by the time scale (`--time-scale`,
   default 10: a restart every second for a minute, the goals' 1 s becoming 100 ms), which the
   output states; `--real-time` runs it at scale 1.

Printed figures, nothing asserted. Run from the repository root:

    venv/bin/python -m benchmarks.reconcile_trigger [--singles 50] [--burst 1000] [--burst-seconds 10] [--time-scale 10 | --real-time]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from api.crdgen import load_committed_crds
from providers.kinds import CONFIG_MAP, MODEL_ACTIVATION, POD
from providers.kube import KubeAccess, KubeClient, KubeError, open_client
from services.reconcile_trigger.stack import RECONCILIATION_REQUEST, STACK, StackRef
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds, running_cluster, upstream_crd_paths
from tests.deploy.program_identity import ensure_namespaces
from tests.live.world import ensure_namespace
from tests.services.reconcile_trigger.world import (
    KUBELET,
    LOADER,
    config_map,
    crash_looping,
    create_stack,
    ensure_stack_crd,
    model_activation,
    model_pod,
    restarted,
    write_status,
)
from tests.support.processes import stop_process
from tests.support.vendored import REPOSITORY_ROOT as REPO_ROOT

NAMESPACE = "bench-trigger"
DEFAULT_TIME_SCALE = 10
RESTART_SECONDS = 10.0
"""The crash loop's period at the real scale."""
CHURN_MINUTES = 10.0
RESYNC_SECONDS = 300
"""PKO's resyncFrequencySeconds (deploy/stack.yaml), the trigger's --resync-seconds."""
SETTLE_SECONDS = 30.0
"""The longest one request may take to show up before the benchmark gives up on it."""
POLL = 0.005


@dataclass
class StackWatch:
    """Every new request value the Stack shows, with the time it arrived (time.monotonic)."""

    seen: list[tuple[float, str]] = field(default_factory=list)
    condition: threading.Condition = field(default_factory=threading.Condition)

    def record(self, value: str) -> None:
        with self.condition:
            if not self.seen or self.seen[-1][1] != value:
                self.seen.append((time.monotonic(), value))
                self.condition.notify_all()

    def count(self) -> int:
        with self.condition:
            return len(self.seen)

    def wait_for(self, count: int, timeout: float) -> tuple[float, str] | None:
        """The `count`-th value (1-based) once it arrived; None after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self.condition:
            while len(self.seen) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.condition.wait(left)
            return self.seen[count - 1]

    def arrivals(self) -> list[float]:
        with self.condition:
            return [at for at, _ in self.seen]

    def quiet_for(self, seconds: float, timeout: float) -> None:
        """Return once no new value arrived for `seconds` (at most `timeout`)."""
        deadline = time.monotonic() + timeout
        with self.condition:
            while time.monotonic() < deadline:
                last = self.seen[-1][0] if self.seen else 0.0
                left = last + seconds - time.monotonic()
                if left <= 0:
                    return
                self.condition.wait(min(left, deadline - time.monotonic()))


def watch_stack(access: KubeAccess, stack: StackRef, into: StackWatch, stop: threading.Event) -> None:
    """Follow the Stack's request annotation until `stop` (the benchmark's own watch)."""
    with open_client(access) as client:
        while not stop.is_set():
            listed = client.list_collection(STACK, namespace=stack.namespace)
            version = listed.resource_version
            try:
                with client.watch(
                    STACK, namespace=stack.namespace, resource_version=version, timeout_seconds=60
                ) as stream:
                    for event in stream:
                        metadata = event.object.get("metadata") or {}
                        if metadata.get("name") == stack.name and RECONCILIATION_REQUEST in (
                            metadata.get("annotations") or {}
                        ):
                            into.record(metadata["annotations"][RECONCILIATION_REQUEST])
                        if stop.is_set():
                            return
            except KubeError:
                continue


def percentile(values: Sequence[float], p: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def resident_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) / 1024


@contextlib.contextmanager
def trigger_process(
    kubeconfig: Path,
    namespace: str,
    *,
    quiet_ms: int,
    max_delay_ms: int,
    resync_seconds: int,
    log: Path,
    target_namespaces: Sequence[str] = (),
) -> Iterator[subprocess.Popen[bytes]]:
    """The trigger as its real process; SIGTERM at the end (then SIGKILL after a bound).

    `namespace` holds the Stack and is the system namespace; the models' namespaces are
    `target_namespaces` (default: `namespace` too)."""
    environment = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    targets = ",".join(target_namespaces) or namespace
    flags = [
        f"--stack-namespace={namespace}", f"--system-namespace={namespace}", f"--target-namespaces={targets}",
        f"--quiet-ms={quiet_ms}", f"--max-delay-ms={max_delay_ms}", f"--resync-seconds={resync_seconds}",
        "--probe-address=127.0.0.1:0",
    ]  # fmt: skip
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.reconcile_trigger.main", *flags],
            cwd=REPO_ROOT,
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        stop_process(process, grace_seconds=10)


def singles(admin: KubeClient, namespace: str, watch: StackWatch, count: int) -> list[float]:
    """Latency of `count` single ModelActivation edits, one after the other."""
    admin.apply(MODEL_ACTIVATION, model_activation(namespace, "bench"), field_manager=LOADER)
    watch.quiet_for(1.0, SETTLE_SECONDS)
    latencies = []
    for index in range(count):
        body = model_activation(namespace, "bench")
        body["spec"]["enabled"] = index % 2 == 1
        expected = watch.count() + 1
        started = time.monotonic()
        admin.apply(MODEL_ACTIVATION, body, field_manager=LOADER)
        arrived = watch.wait_for(expected, SETTLE_SECONDS)
        if arrived is None:
            raise RuntimeError(f"change {index} gave no request within {SETTLE_SECONDS:g} s")
        latencies.append(arrived[0] - started)
    return latencies


def burst(
    admin: KubeClient, namespace: str, watch: StackWatch, count: int, seconds: float, *, settle: float
) -> tuple[int, float]:
    """(requests, the burst's real duration) for `count` ConfigMap updates spread over `seconds`."""
    before = watch.count()
    interval = seconds / count
    started = time.monotonic()
    for index in range(count):
        wait = started + index * interval - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        admin.apply(CONFIG_MAP, config_map(namespace, "bench-burst", {"n": str(index)}), field_manager=LOADER)
    elapsed = time.monotonic() - started
    watch.wait_for(before + 1, SETTLE_SECONDS)
    watch.quiet_for(settle, SETTLE_SECONDS)
    return watch.count() - before, elapsed


@dataclass(frozen=True)
class ChurnScenario:
    """A crash-looping Pod and a spec edit halfway, at the real scale; `scale` divides every duration."""

    scale: float = DEFAULT_TIME_SCALE
    minutes: float = CHURN_MINUTES
    restart_seconds: float = RESTART_SECONDS
    quiet_ms: int = 500
    max_delay_ms: int = 2000
    resync_seconds: int = RESYNC_SECONDS

    def scaled(self, seconds: float) -> float:
        return seconds / self.scale

    @property
    def trigger_flags(self) -> tuple[int, int, int]:
        """--quiet-ms, --max-delay-ms and --resync-seconds at this scale (whole numbers, at least 1)."""
        return (
            max(1, round(self.quiet_ms / self.scale)),
            max(1, round(self.max_delay_ms / self.scale)),
            max(1, round(self.resync_seconds / self.scale)),
        )


@dataclass(frozen=True)
class ChurnResult:
    restarts: int
    runs: int
    """Requests that reached the Stack during the scenario's duration."""
    edit_latency: float | None
    """From the edit's write to the next request on the Stack; None when none came in time."""


def churn(admin: KubeClient, namespace: str, watch: StackWatch, scenario: ChurnScenario) -> ChurnResult:
    """Play the crash loop (two status writes a restart) and the edit halfway; count the runs."""
    pod = admin.apply(POD, model_pod(namespace, "bench-crash-0", "bench"), field_manager=LOADER)
    admin.apply(MODEL_ACTIVATION, model_activation(namespace, "bench-edit"), field_manager=LOADER)
    quiet, _, _ = scenario.trigger_flags
    watch.quiet_for(10 * quiet / 1000 + 0.5, SETTLE_SECONDS)
    period = scenario.scaled(scenario.restart_seconds)
    duration = scenario.scaled(scenario.minutes * 60)
    started = time.monotonic()
    edit_at: float | None = None
    restarts = 0
    while (now := time.monotonic()) < started + duration:
        if edit_at is None and now >= started + duration / 2:
            body = model_activation(namespace, "bench-edit")
            body["spec"]["enabled"] = False
            admin.apply(MODEL_ACTIVATION, body, field_manager=LOADER)
            edit_at = time.monotonic()
        restarts += 1
        write_status(admin, POD, pod, restarted(restarts), field_manager=KUBELET)
        pause(started + (restarts - 0.5) * period)
        write_status(admin, POD, pod, crash_looping(restarts), field_manager=KUBELET)
        pause(started + restarts * period)
    ended = time.monotonic()
    arrivals = watch.arrivals()
    runs = sum(1 for at in arrivals if started <= at <= ended)
    after_edit = [at for at in arrivals if edit_at is not None and at >= edit_at]
    return ChurnResult(
        restarts=restarts,
        runs=runs,
        edit_latency=after_edit[0] - edit_at if after_edit and edit_at is not None else None,
    )


def pause(until: float) -> None:
    """The scenario's own pace: a real kubelet writes on its clock, not on the trigger's."""
    wait = until - time.monotonic()
    if wait > 0:
        time.sleep(wait)


def run(
    cluster: ClusterInfo,
    *,
    namespace: str = NAMESPACE,
    singles_count: int = 50,
    burst_count: int = 1000,
    burst_seconds: float = 10.0,
    quiet_ms: int = 500,
    max_delay_ms: int = 2000,
    scenario: ChurnScenario = ChurnScenario(),
    out: Callable[[str], None] = print,
) -> None:
    """The three measurements on `cluster` (CRDs installed), in `namespace` (created if absent)."""
    access = KubeAccess(kubeconfig=cluster.kubeconfig_path(ADMIN_USER).read_text())
    stop = threading.Event()
    watch = StackWatch()
    with open_client(access) as admin, tempfile.TemporaryDirectory() as scratch:
        kubeconfig = (
            Path(scratch) / "kubeconfig.yaml"
        )  # the trigger's own copy: the helper rewrites its file on every call
        kubeconfig.write_text(access.kubeconfig or "")
        ensure_namespaces(admin, ("flux-system", "identity-system"))
        ensure_namespace(admin, namespace)  # with its default ServiceAccount: it holds a Pod
        stack = create_stack(admin, namespace)
        follower = threading.Thread(target=watch_stack, args=(access, stack, watch, stop), daemon=True)
        follower.start()
        try:
            log = Path(scratch) / "trigger.log"
            launched = time.monotonic()
            with trigger_process(
                kubeconfig,
                namespace,
                quiet_ms=quiet_ms,
                max_delay_ms=max_delay_ms,
                resync_seconds=RESYNC_SECONDS,
                log=log,
            ) as process:
                first = watch.wait_for(1, SETTLE_SECONDS)
                if first is None:
                    raise RuntimeError(f"the trigger made no request at start:\n{log.read_text()}")
                out(
                    f"trigger: quiet {quiet_ms} ms, max delay {max_delay_ms} ms; its start request {first[0] - launched:.1f} s after launch"
                )
                latencies = singles(admin, namespace, watch, singles_count)
                out(
                    f"latency, change to request on the Stack, {len(latencies)} single changes: "
                    f"p50 {percentile(latencies, 50) * 1000:.0f} ms, p95 {percentile(latencies, 95) * 1000:.0f} ms, "
                    f"max {max(latencies) * 1000:.0f} ms (goal p95 <= 1000 ms)"
                )
                requests, elapsed = burst(
                    admin, namespace, watch, burst_count, burst_seconds, settle=(quiet_ms + max_delay_ms) / 1000 + 0.5
                )
                goal = max(1, math.ceil(burst_seconds))
                out(
                    f"burst: {burst_count} changes in {elapsed:.1f} s gave {requests} requests (goal <= {goal}, one a second)"
                )
                out(f"trigger resident memory: {resident_mib(process.pid):.0f} MiB")
            report_churn(
                admin,
                namespace,
                watch,
                scenario,
                kubeconfig=kubeconfig,
                log=Path(scratch) / "churn-trigger.log",
                out=out,
            )
        finally:
            stop.set()


def report_churn(
    admin: KubeClient,
    namespace: str,
    watch: StackWatch,
    scenario: ChurnScenario,
    *,
    kubeconfig: Path,
    log: Path,
    out: Callable[[str], None],
) -> None:
    quiet, max_delay, resync = scenario.trigger_flags
    scale = f"time scale 1/{scenario.scale:g}" if scenario.scale != 1 else "real time"
    out(
        f"churn, at {scale}: a Pod restarting every {scenario.scaled(scenario.restart_seconds):g} s for "
        f"{scenario.scaled(scenario.minutes * 60):g} s (really every {scenario.restart_seconds:g} s for {scenario.minutes:g} min), "
        f"a ModelActivation edit halfway; trigger quiet {quiet} ms, max delay {max_delay} ms, resync {resync} s"
    )
    before = watch.count()
    with trigger_process(kubeconfig, namespace, quiet_ms=quiet, max_delay_ms=max_delay, resync_seconds=resync, log=log):
        if watch.wait_for(before + 1, SETTLE_SECONDS) is None:
            raise RuntimeError(f"the churn trigger made no request at start:\n{log.read_text()}")
        result = churn(admin, namespace, watch, scenario)
    goal_ms = 1000 / scenario.scale
    latency = f"{result.edit_latency * 1000:.0f} ms" if result.edit_latency is not None else "none"
    runs_goal = math.floor(20 * scenario.minutes / CHURN_MINUTES)
    out(
        f"churn: {result.restarts} restarts ({2 * result.restarts} status writes) gave {result.runs} runs (goal <= {runs_goal})"
    )
    out(
        f"churn: the edit's request came {latency} after the write (goal <= {goal_ms:g} ms at this scale, 1 s in real time)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--singles", type=int, default=50, help="single changes timed one by one")
    parser.add_argument("--burst", type=int, default=1000, help="changes in the burst")
    parser.add_argument("--burst-seconds", type=float, default=10.0, help="over how long the burst is spread")
    scale = parser.add_mutually_exclusive_group()
    scale.add_argument(
        "--time-scale",
        type=float,
        default=DEFAULT_TIME_SCALE,
        help="the churn scenario's durations are divided by this",
    )
    scale.add_argument("--real-time", action="store_true", help="run the churn scenario at the real scale (10 minutes)")
    arguments = parser.parse_args(argv)
    if not arguments.real_time and arguments.time_scale < 1:
        parser.error("--time-scale must be at least 1")
    with running_cluster() as cluster, tempfile.TemporaryDirectory() as scratch:
        for crd in load_committed_crds():
            (Path(scratch) / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd))
        install_crds(cluster, [Path(scratch), *upstream_crd_paths()])
        with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as admin:
            ensure_stack_crd(cluster, admin)
        scenario = ChurnScenario(scale=1 if arguments.real_time else arguments.time_scale)
        run(
            cluster,
            singles_count=arguments.singles,
            burst_count=arguments.burst,
            burst_seconds=arguments.burst_seconds,
            scenario=scenario,
        )


if __name__ == "__main__":
    main()
