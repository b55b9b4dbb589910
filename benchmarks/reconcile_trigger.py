"""Benchmark of the reconcile trigger: change-to-request latency, and requests per burst.

It starts its own kube-apiserver (build it first with scripts/toolchain/build.sh), installs
the program's CRDs, the upstream ones and PKO's Stack, creates a Stack, and runs the trigger as
its real process (`python -m services.reconcile_trigger.main`, the console script's module) with
its default timing (a quiet period of 500 ms, a maximum delay of 2 s). The benchmark watches the
Stack itself and times when each new `pulumi.com/reconciliation-request` value arrives.

1. Latency: one ModelActivation spec edit at a time; from just before the write to the moment
   the new request value is seen on the Stack. Prints p50, p95 and max (goal: p95 at most 1 s).
2. Burst: N changes (ConfigMap updates) spread evenly over S seconds; prints how many requests
   they gave once things settled (goal for 1,000 in 10 s: at most 10).

Printed figures, nothing asserted. Run from the repository root:

    venv/bin/python -m benchmarks.reconcile_trigger [--singles 50] [--burst 1000] [--burst-seconds 10]
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from api.crdgen import load_committed_crds
from providers.kinds import CONFIG_MAP, MODEL_ACTIVATION
from providers.kube import KubeAccess, KubeClient, KubeError, open_client
from services.reconcile_trigger.stack import RECONCILIATION_REQUEST, STACK, StackRef
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds, running_cluster, upstream_crd_paths
from tests.deploy.program_identity import ensure_namespaces
from tests.services.reconcile_trigger.world import LOADER, config_map, create_stack, ensure_stack_crd, model_activation
from tests.support.vendored import REPOSITORY_ROOT as REPO_ROOT

NAMESPACE = "bench-trigger"
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
                with client.watch(STACK, namespace=stack.namespace, resource_version=version, timeout_seconds=60) as stream:
                    for event in stream:
                        metadata = event.object.get("metadata") or {}
                        if metadata.get("name") == stack.name and RECONCILIATION_REQUEST in (metadata.get("annotations") or {}):
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


def start_process(kubeconfig: Path, namespace: str, *, quiet_ms: int, max_delay_ms: int, log: Path) -> subprocess.Popen[bytes]:
    environment = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    flags = [
        f"--stack-namespace={namespace}", f"--system-namespace={namespace}", f"--target-namespaces={namespace}",
        f"--quiet-ms={quiet_ms}", f"--max-delay-ms={max_delay_ms}",
    ]  # fmt: skip
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "services.reconcile_trigger.main", *flags], cwd=REPO_ROOT, env=environment, stdout=sink, stderr=subprocess.STDOUT
        )


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


def burst(admin: KubeClient, namespace: str, watch: StackWatch, count: int, seconds: float, *, settle: float) -> tuple[int, float]:
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


def run(
    cluster: ClusterInfo,
    *,
    namespace: str = NAMESPACE,
    singles_count: int = 50,
    burst_count: int = 1000,
    burst_seconds: float = 10.0,
    quiet_ms: int = 500,
    max_delay_ms: int = 2000,
    out: Callable[[str], None] = print,
) -> None:
    """Both measurements on `cluster` (CRDs installed), in `namespace` (created if absent)."""
    access = KubeAccess(kubeconfig=cluster.kubeconfig_path(ADMIN_USER).read_text())
    stop = threading.Event()
    watch = StackWatch()
    with open_client(access) as admin, tempfile.TemporaryDirectory() as scratch:
        kubeconfig = Path(scratch) / "kubeconfig.yaml"  # the trigger's own copy: the helper rewrites its file on every call
        kubeconfig.write_text(access.kubeconfig or "")
        ensure_namespaces(admin, (namespace, "flux-system", "identity-system"))
        stack = create_stack(admin, namespace)
        follower = threading.Thread(target=watch_stack, args=(access, stack, watch, stop), daemon=True)
        follower.start()
        launched = time.monotonic()
        process = start_process(kubeconfig, namespace, quiet_ms=quiet_ms, max_delay_ms=max_delay_ms, log=Path(scratch) / "trigger.log")
        try:
            first = watch.wait_for(1, SETTLE_SECONDS)
            if first is None:
                raise RuntimeError(f"the trigger made no request at start:\n{(Path(scratch) / 'trigger.log').read_text()}")
            out(f"trigger: quiet {quiet_ms} ms, max delay {max_delay_ms} ms; its start request {first[0] - launched:.1f} s after launch")
            latencies = singles(admin, namespace, watch, singles_count)
            out(
                f"latency, change to request on the Stack, {len(latencies)} single changes: "
                f"p50 {percentile(latencies, 50) * 1000:.0f} ms, p95 {percentile(latencies, 95) * 1000:.0f} ms, "
                f"max {max(latencies) * 1000:.0f} ms (goal p95 <= 1000 ms)"
            )
            requests, elapsed = burst(admin, namespace, watch, burst_count, burst_seconds, settle=(quiet_ms + max_delay_ms) / 1000 + 0.5)
            goal = max(1, math.ceil(burst_seconds))
            out(f"burst: {burst_count} changes in {elapsed:.1f} s gave {requests} requests (goal <= {goal}, one a second)")
            out(f"trigger resident memory: {resident_mib(process.pid):.0f} MiB")
        finally:
            stop.set()
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--singles", type=int, default=50, help="single changes timed one by one")
    parser.add_argument("--burst", type=int, default=1000, help="changes in the burst")
    parser.add_argument("--burst-seconds", type=float, default=10.0, help="over how long the burst is spread")
    arguments = parser.parse_args(argv)
    with running_cluster() as cluster, tempfile.TemporaryDirectory() as scratch:
        for crd in load_committed_crds():
            (Path(scratch) / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd))
        install_crds(cluster, [Path(scratch), *upstream_crd_paths()])
        with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as admin:
            ensure_stack_crd(cluster, admin)
        run(cluster, singles_count=arguments.singles, burst_count=arguments.burst, burst_seconds=arguments.burst_seconds)


if __name__ == "__main__":
    main()
