"""Edit -> applied through the real Pulumi Kubernetes Operator on a real node (`edit_latency.py --pko`).

The world is the demo appliance on a test API server with one real node (tests/node: kubelet,
containerd, kube-proxy, CoreDNS), installed as tests/node/pko.py installs it: PKO v2.9.0 from
its quickstart manifest, then `kubectl apply -k deploy/` with the images scripts/images/build.sh
made. The reconcile trigger is deploy/'s Deployment; PKO's workspace pod runs the program with
`pulumi up --refresh` (deploy/stack.yaml). Nothing is played.

Each edit sets `spec.local.maxNumSeqs` of the demo's CPU vLLM activation to a new value by
server-side apply, then the benchmark waits until the Stack is quiet again (no new Update for a
while, the last one succeeded) before the next. Splits, from watches stamped when their events
arrive and the workspace pod's log (the kubelet stamps each line):

- trigger: the edit written -> the new request on the Stack;
- PKO scheduling: the request -> PKO's Update object for it created;
- workspace: the Update created -> the agent in the workspace pod selected the stack for it
  (the operator's gRPC call reaching the pod; its `selected a stack` log line);
- program and engine: -> the Model's spec shows the edit: the CLI's start, the refresh, the
  program and the engine's apply, together (the workspace's output reaches the log only at the
  end of a run; benchmarks/edit_latency.py splits the same CLI, program and engine).

Needs root (the node), `scripts/toolchain/build.sh` and `scripts/images/build.sh`. Figures, never
assertions; the goal line says whether p95 is within 10 s.

    venv/bin/python -m benchmarks.edit_latency --pko [--edits 10]
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from benchmarks.reconcile_trigger import percentile
from providers.kinds import APPLIANCE_KINDS, KUBEAI_MODEL, STACK
from providers.kube import KubeAccess, KubeClient, ResourceKind, open_client
from services.reconcile_trigger.stack import RECONCILIATION_REQUEST
from tests.cluster.apiserver import ADMIN_USER, running_cluster
from tests.images import OPERATOR_IMAGE, WORKSPACE_IMAGE, local_image
from tests.node.node import NODE_CONTROLLERS, RealNode, node_ip, running_node
from tests.node.pko import PROGRAM_NAMESPACE, STACK_NAME, WORKSPACE_POD, install_and_run, succeeded

EDITS: Final = 10
GOAL_SECONDS: Final = 10.0
EDITED: Final = "qwen2505bcpu"
MODEL_NAMESPACE: Final = "ai"
FIRST_MAX_NUM_SEQS: Final = 2
QUIET_SECONDS: Final = 8.0
"""No new Update for this long, and the last one succeeded: the Stack is quiet."""
EDIT_SECONDS: Final = 300.0
SPLITS: Final = ("trigger", "PKO scheduling", "workspace", "program and engine")
UPDATE = ResourceKind(group="auto.pulumi.com", version="v1alpha1", kind="Update", plural="updates", namespaced=True)
MODEL_ACTIVATION = APPLIANCE_KINDS["ModelActivation"]
SELECTED: Final = "selected a stack"
LOG_LINE: Final = re.compile(r"^(?P<time>\S+) (?:stdout|stderr) [FP] (?P<text>.*)$")
JsonObject = dict[str, Any]


def progress(line: str) -> None:
    print(f"edit latency (PKO): {line}", flush=True, file=sys.stderr)


@dataclass
class Seen:
    """Objects as watches delivered them, each stamped with time.time() on arrival."""

    events: list[tuple[float, JsonObject]] = field(default_factory=list)
    condition: threading.Condition = field(default_factory=threading.Condition)

    def record(self, obj: JsonObject) -> None:
        with self.condition:
            self.events.append((time.time(), obj))
            self.condition.notify_all()

    def first(self, matches: Callable[[JsonObject], bool], *, since: float, timeout: float) -> float | None:
        """When the first object after `since` that `matches` arrived (waiting for it)."""
        deadline = time.monotonic() + timeout
        with self.condition:
            while True:
                found = next((at for at, obj in self.events if at >= since and matches(obj)), None)
                if found is not None:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self.condition.wait(remaining)

    def last_at(self) -> float:
        with self.condition:
            return self.events[-1][0] if self.events else 0.0


def _watch(access: KubeAccess, kind: ResourceKind, namespace: str, into: Seen, stop: threading.Event) -> None:
    with open_client(access) as client:
        while not stop.is_set():
            version = client.list_collection(kind, namespace=namespace).resource_version
            with (
                contextlib.suppress(Exception),
                client.watch(kind, namespace=namespace, resource_version=version, timeout_seconds=30) as stream,
            ):
                for event in stream:
                    into.record(event.object)
                    if stop.is_set():
                        return


@contextlib.contextmanager
def _watching(access: KubeAccess, kinds: Sequence[tuple[ResourceKind, str, Seen]]) -> Iterator[None]:
    stop = threading.Event()
    threads = [
        threading.Thread(target=_watch, args=(access, kind, namespace, seen, stop), daemon=True)
        for kind, namespace, seen in kinds
    ]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()


@dataclass(frozen=True)
class PkoEdit:
    value: int
    edited_at: float
    requested_at: float | None
    update_at: float | None
    selected_at: float | None
    applied_at: float | None

    @property
    def total(self) -> float | None:
        return None if self.applied_at is None else self.applied_at - self.edited_at

    def splits(self) -> dict[str, float]:
        points = (self.edited_at, self.requested_at, self.update_at, self.selected_at, self.applied_at)
        if any(point is None for point in points):
            return {}
        moments = [float(point) for point in points if point is not None]
        return {
            name: max(0.0, later - earlier) for name, earlier, later in zip(SPLITS, moments, moments[1:], strict=False)
        }


def _selected_times(node: RealNode) -> list[float]:
    """When the agent logged `selected a stack`, from every log file of the workspace pod."""
    times = []
    for path in node.pod_logs.glob(f"{PROGRAM_NAMESPACE}_{WORKSPACE_POD}_*/*/*.log"):
        for line in path.read_text(errors="replace").splitlines():
            match = LOG_LINE.match(line)
            if match and SELECTED in match["text"]:
                times.append(datetime.fromisoformat(match["time"].replace("Z", "+00:00")).timestamp())
    return sorted(times)


def _edit(admin: KubeClient, value: int) -> None:
    activation = admin.get(MODEL_ACTIVATION, EDITED, PROGRAM_NAMESPACE)
    spec = {**activation["spec"], "local": {**(activation["spec"].get("local") or {}), "maxNumSeqs": value}}
    body = {
        "apiVersion": activation["apiVersion"],
        "kind": activation["kind"],
        "metadata": {"name": EDITED, "namespace": PROGRAM_NAMESPACE},
        "spec": spec,
    }
    admin.apply(MODEL_ACTIVATION, body, field_manager="kubectl", force=False)


def _wait_quiet(admin: KubeClient, updates: Seen) -> None:
    deadline = time.monotonic() + EDIT_SECONDS
    while time.monotonic() < deadline:
        stack = admin.get(STACK, STACK_NAME, PROGRAM_NAMESPACE)
        if succeeded(stack) and time.time() - updates.last_at() >= QUIET_SECONDS and _update_finished(admin):
            return
        time.sleep(0.5)
    raise RuntimeError("the Stack did not become quiet")


def _update_finished(admin: KubeClient) -> bool:
    """No Update of the Stack is still running (each has a Complete condition once it ended)."""
    for update in admin.list(UPDATE, namespace=PROGRAM_NAMESPACE):
        conditions = {c.get("type"): c.get("status") for c in (update.get("status") or {}).get("conditions") or ()}
        if conditions.get("Complete") != "True":
            return False
    return True


def _time_edit(node: RealNode, value: int, stacks: Seen, updates: Seen, models: Seen) -> PkoEdit:
    edited_at = time.time()
    _edit(node.admin, value)
    before = {
        ((obj.get("metadata") or {}).get("annotations") or {}).get(RECONCILIATION_REQUEST)
        for at, obj in stacks.events
        if at < edited_at
    }
    requested_at = stacks.first(
        lambda s: ((s.get("metadata") or {}).get("annotations") or {}).get(RECONCILIATION_REQUEST) not in before,
        since=edited_at,
        timeout=EDIT_SECONDS,
    )
    update_at = (
        None if requested_at is None else updates.first(lambda _: True, since=requested_at, timeout=EDIT_SECONDS)
    )
    applied_at = models.first(
        lambda m: (
            m["metadata"]["name"] == EDITED and f"--max-num-seqs={value}" in (m.get("spec") or {}).get("args", ())
        ),
        since=edited_at,
        timeout=EDIT_SECONDS,
    )
    selected_at = None
    if update_at is not None and applied_at is not None:
        selected_at = next((at for at in _selected_times(node) if update_at - 1.0 <= at <= applied_at), None)
    return PkoEdit(value, edited_at, requested_at, update_at, selected_at, applied_at)


def measure(edits: int = EDITS) -> tuple[list[PkoEdit], float, tuple[float, float, float]]:
    load_before = os.getloadavg()
    images = {name: local_image(name) for name in (OPERATOR_IMAGE, WORKSPACE_IMAGE, "reconcile-trigger")}
    with (
        tempfile.TemporaryDirectory(prefix="magicstick-pko-latency-") as scratch,
        running_cluster(controllers=NODE_CONTROLLERS, scheduler=True, address=node_ip()) as cluster,
    ):
        root = Path(scratch)
        with running_node(cluster, root, images=tuple(images.values())) as node:
            started = time.monotonic()
            install_and_run(
                node,
                cluster,
                operator=images[OPERATOR_IMAGE],
                workspace=images[WORKSPACE_IMAGE],
                trigger=images["reconcile-trigger"],
                state=root / "state",
            )
            first_update = time.monotonic() - started
            kubeconfig = root / "admin.yaml"
            kubeconfig.write_text(cluster.kubeconfig_path(ADMIN_USER).read_text())
            access = KubeAccess(kubeconfig=str(kubeconfig))
            stacks, updates, models = Seen(), Seen(), Seen()
            timed = []
            with _watching(
                access,
                (
                    (STACK, PROGRAM_NAMESPACE, stacks),
                    (UPDATE, PROGRAM_NAMESPACE, updates),
                    (KUBEAI_MODEL, MODEL_NAMESPACE, models),
                ),
            ):
                _wait_quiet(node.admin, updates)
                for index in range(edits):
                    edit = _time_edit(node, FIRST_MAX_NUM_SEQS + index, stacks, updates, models)
                    timed.append(edit)
                    parts = ", ".join(f"{name} {seconds:.2f}" for name, seconds in edit.splits().items())
                    progress(
                        f"edit {index + 1}/{edits} maxNumSeqs={edit.value}: applied after {edit.total if edit.total is None else round(edit.total, 2)} s ({parts})"
                    )
                    _wait_quiet(node.admin, updates)
    return timed, first_update, load_before


def report(edits: Sequence[PkoEdit], first_update: float, load_before: tuple[float, float, float]) -> str:
    complete = [edit for edit in edits if edit.splits()]
    lines = [
        "edit latency through the Pulumi Kubernetes Operator v2.9.0 on a real node: the demo appliance, deploy/ as shipped "
        "(refresh: true), the real trigger, operator, workspace pod, CLI, language host and provider",
        f"install -> the Stack's first update succeeded: {first_update:.0f} s (operator rollout, workspace pod start, first up)",
        "",
        f"{'over ' + str(len(complete)) + ' edits':<22} {'p50 s':>7} {'p95 s':>7} {'max s':>7}",
    ]
    if len(complete) != len(edits):
        lines.append(
            f"{len(edits) - len(complete)} edits were not seen through to the Model within {EDIT_SECONDS:.0f} s"
        )
    if complete:
        totals = [edit.total or 0.0 for edit in complete]
        lines.append(_row("total", totals))
        for split in SPLITS:
            lines.append(_row(f"  {split}", [edit.splits()[split] for edit in complete]))
        p95 = percentile(totals, 95)
        verdict = "met" if p95 <= GOAL_SECONDS else "NOT met"
        pko = percentile([edit.splits()["PKO scheduling"] + edit.splits()["workspace"] for edit in complete], 95)
        lines.append(
            f"goal 1 (edit -> applied p95 <= {GOAL_SECONDS:g} s): {verdict} (p95 {p95:.1f} s; PKO's scheduling and workspace call p95 {pko:.1f} s of it)"
        )
    cpus = os.cpu_count() or 1
    lines.append(
        f"load: {cpus} CPUs, load average {load_before[0]:.1f} before the benchmark"
        + ("; the machine was busy: not representative" if load_before[0] >= cpus else "")
    )
    return "\n".join(lines)


def _row(label: str, values: Sequence[float]) -> str:
    return f"{label:<22} {percentile(values, 50):>7.2f} {percentile(values, 95):>7.2f} {max(values):>7.2f}"


def main(edits: int) -> None:
    print(report(*measure(edits)))
