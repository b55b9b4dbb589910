"""What a user waits for after activating a model the appliance keeps in its model cache: from
the ModelActivation written to its first chat completion answered, on a real node.

The cluster is a test API server with kube-scheduler and the kube-controller-manager controllers
tests/node/node.py's NODE_CONTROLLERS names (the binding of claims to volumes among them), and one
real node (tests/node: kubelet, containerd, kube-proxy, CoreDNS) that imported the `kubeai` and
`ollama` images scripts/images/build.sh made. KubeAI's controller runs on it as a Pod, installed
as tests/node/kubeai_release.py installs its chart: `helm template` of the vendored chart with
the release values the program's stores give (tests/peers/kubeai_chart.py; the runtime profile
the program names for the example is among them, since helm-controller, which would render the
chart again when the program writes a profile, is not run here).

Then the model cache is seeded as an administrator seeds an offline appliance: the real Ollama
creates the tiny model (tests/support/tiny_model.py) as `tiny` in the appliance's Ollama cache
folder on this host, /var/lib/magicstick/model-cache/ollama. The program itself declares the
hostPath volume of that folder and its claim (the node is the cluster's one Linux node); the
benchmark creates neither. The folder is left in place afterwards: it is the appliance's cache,
which KubeAI's startup probe also writes its copy of the model into.

The world is the demo appliance (examples/demo/snapshot.yaml), loaded as benchmarks/edit_latency.py
loads it, but without its Node, NodeFeature, KubeAI Models and their Pods (the real node, KubeAI
and the kubelet write those here), and with the demo's own local models disabled: their Pods'
CPU requests (2 CPUs for the vLLM one, 1 for the Ollama one) would leave no room on a 2-CPU node
for the measured model's Pod (1 CPU). The reconcile trigger runs as its real process, and PKO is
played as benchmarks/edit_latency.py plays it: one `pulumi up --yes --skip-preview` (the real CLI
and pulumi-kubernetes, a file backend) per request on the Stack, started when the request is
seen; PKO's own part (its workspace pod) is not in the figures. The appliance is converged first
by edit_latency's `converge` (its progress lines say `edit latency:`): ups, with Flux,
helm-controller and Envoy Gateway, which do not run here, played between them
(tests/e2e/world.py `play_platform`); nothing is played after that.

Then examples/models/ollama-offline.yaml (ModelActivation `tiny-offline`,
`pvc://magicstick-model-cache-ollama?model=tiny`) is written by server-side apply, every
request the Stack shows from then on is served (as PKO would: the ups after the first compete
for the CPUs with the model's start), and watches stamp each step as it arrives:

- trigger: the ModelActivation written -> the run request seen on the Stack;
- program: the request seen -> KubeAI's Model created (the program's `pulumi up`);
- KubeAI: the Model created -> KubeAI's controller created its Pod;
- Pod start: the Pod created -> its `server` container running;
- model load: the container running -> the Pod Ready (KubeAI's Ollama startup probe copies the
  model from the cache to the Model's name);
- first answer: the Pod Ready -> a chat completion (`max_tokens` 8) answered by KubeAI's OpenAI
  endpoint, the controller Pod's port 8000.

Figures, never assertions; the goal line says whether the total is within 30 s. Figures taken
while the machine does something else are not representative: the output prints the load average.

Run from the repository root as root, after scripts/toolchain/build.sh and scripts/images/build.sh,
one real node at a time:

    flock /tmp/magicstick-node.lock venv/bin/python -m benchmarks.first_answer
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx
import yaml

from api.model_cache import host_path
from benchmarks.edit_latency import (
    SYSTEM_NAMESPACE,
    ModelWatch,
    Operator,
    Up,
    converge,
    durations,
    following,
    load_world,
    watch_models,
    watch_objects,
)
from benchmarks.reconcile_trigger import RESYNC_SECONDS, SETTLE_SECONDS, StackWatch, trigger_process, watch_stack
from planning.models.kubeai import model_name
from planning.models.model_url import parse_model_url
from providers.kinds import DEPLOYMENT, KUBEAI_MODEL, MODEL_ACTIVATION, NODE, NODE_FEATURE, POD
from providers.kube import KubeAccess, KubeClient
from services.reconcile_trigger.settings import DEFAULT_MAX_DELAY_MS, DEFAULT_QUIET_MS
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, install_crds, running_cluster
from tests.e2e.engine import REPO_ROOT, PulumiFailed, PulumiProject
from tests.e2e.lifecycle import changes
from tests.e2e.world import MODEL_NAMESPACE, demo_documents
from tests.images import KUBEAI_IMAGE, OLLAMA_IMAGE, local_image
from tests.live.world import ensure_namespace
from tests.node.kubeai_release import chart_objects, install, seed_model_cache
from tests.node.node import NODE_CONTROLLERS, RealNode, node_ip, running_node
from tests.node.rollout import deployment_ready, pod_states, wait_for
from tests.peers import helm
from tests.peers.kubeai_chart import RELEASE, RELEASE_NAMESPACE, render_release
from tests.support.vendored import VENDORED_CRDS

JsonObject = dict[str, Any]

ACTIVATION_FILE: Final = REPO_ROOT / "examples" / "models" / "ollama-offline.yaml"
CACHE_FOLDER: Final = Path(host_path("ollama"))
GOAL_SECONDS: Final = 30.0
KUBEAI_PORT: Final = 8000
SERVER_CONTAINER: Final = "server"
MODEL_POD_LABEL: Final = "model"
"""KubeAI labels each Pod of a Model `model: <Model name>`."""
USER: Final = "kubectl"
"""The field manager of `kubectl apply --server-side`."""
WRITTEN_ON_THE_NODE: Final = frozenset({NODE.kind, NODE_FEATURE.kind, KUBEAI_MODEL.kind, POD.kind})
"""The demo's kinds the real node, KubeAI and the kubelet write here."""
ROLLOUT_SECONDS: Final = 240.0
MODEL_SECONDS: Final = 600.0
"""The longest the program's up may take to create the Model."""
POD_SECONDS: Final = 120.0
START_SECONDS: Final = 300.0
LOAD_SECONDS: Final = 300.0
ANSWER_SECONDS: Final = 240.0
POLL_SECONDS: Final = 0.5
PARTS: Final = {
    "trigger": "ModelActivation written -> the run request seen on the Stack",
    "program": "request seen -> KubeAI Model created (the program's pulumi up)",
    "KubeAI": "Model created -> KubeAI's controller created its Pod",
    "Pod start": "Pod created -> the server container running",
    "model load": "container running -> Pod Ready (the startup probe copies the model)",
    "first answer": "Pod Ready -> chat completion answered by KubeAI's OpenAI endpoint",
}


def progress(line: str) -> None:
    print(f"first answer: {line}", file=sys.stderr, flush=True)


# --- the world -------------------------------------------------------------------------------


def activation_manifest() -> JsonObject:
    manifest: JsonObject = yaml.safe_load(ACTIVATION_FILE.read_text())
    return manifest


def node_world(documents: Sequence[JsonObject]) -> list[JsonObject]:
    """The demo without what the node writes, its local models disabled. Pure."""
    return [_disabled_if_local(d) for d in documents if d["kind"] not in WRITTEN_ON_THE_NODE]


def _disabled_if_local(obj: JsonObject) -> JsonObject:
    spec = obj.get("spec") or {}
    if obj["kind"] != MODEL_ACTIVATION.kind or spec.get("type") != "local":
        return obj
    return {**obj, "spec": {**spec, "enabled": False}}


def install_kubeai(node: RealNode, cluster: ClusterInfo, workdir: Path) -> None:
    """KubeAI's chart with the local images, applied in its namespace and rolled out."""
    install_crds(cluster, [VENDORED_CRDS / "kubeai" / "kubeai.org_models.yaml"])
    ensure_namespace(node.admin, RELEASE_NAMESPACE)
    release = render_release(workdir / "kubeai-release", template=helm.template)
    install(node.admin, chart_objects(release, kubeai=local_image(KUBEAI_IMAGE), ollama=local_image(OLLAMA_IMAGE)))
    wait_for(node, DEPLOYMENT, RELEASE_NAMESPACE, RELEASE, deployment_ready, ROLLOUT_SECONDS)


# --- the model's Pods, watched ---------------------------------------------------------------


@dataclass
class PodWatch:
    """Every version of the watched Pods, with the time it arrived (time.monotonic())."""

    seen: list[tuple[float, JsonObject]] = field(default_factory=list)
    condition: threading.Condition = field(default_factory=threading.Condition)

    def record(self, pod: JsonObject) -> None:
        with self.condition:
            self.seen.append((time.monotonic(), pod))
            self.condition.notify_all()

    def first(self, holds: Callable[[JsonObject], bool], timeout: float) -> float | None:
        """When the first version for which `holds` arrived; None after `timeout`."""
        deadline = time.monotonic() + timeout
        with self.condition:
            while True:
                found = next((at for at, pod in self.seen if holds(pod)), None)
                left = deadline - time.monotonic()
                if found is not None or left <= 0:
                    return found
                self.condition.wait(left)


def watch_pods(access: KubeAccess, namespace: str, selector: str, into: PodWatch, stop: threading.Event) -> None:
    """Follow the Pods of `namespace` that `selector` selects until `stop` (watch_objects)."""
    watch_objects(access, POD, namespace, into.record, stop, label_selector=selector)


def server_running(pod: JsonObject) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return any(s.get("name") == SERVER_CONTAINER and "running" in (s.get("state") or {}) for s in statuses)


def pod_ready(pod: JsonObject) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


# --- PKO, played while the model starts ------------------------------------------------------


@dataclass
class Served:
    """The ups run for the Stack's requests, and the ones that failed."""

    ups: list[Up] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def _serve(operator: Operator, served: Served, stop: threading.Event) -> None:
    while not stop.is_set():
        if not operator.pending() and operator.requests.wait_for(operator.served + 1, POLL_SECONDS) is None:
            continue
        try:
            served.ups.append(operator.up())
        except PulumiFailed as failed:
            served.failures.append(str(failed))


@contextmanager
def serving(operator: Operator) -> Iterator[Served]:
    """One up per new request, in a thread, as PKO runs them; on exit the running up is let finish."""
    served, stop = Served(), threading.Event()
    thread = threading.Thread(target=_serve, args=(operator, served, stop), daemon=True)
    thread.start()
    try:
        yield served
    finally:
        stop.set()
        thread.join()


# --- the answer ------------------------------------------------------------------------------


def kubeai_pod(admin: KubeClient) -> JsonObject:
    """The Pod of KubeAI's controller."""
    (pod,) = [
        p
        for p in admin.list(POD, namespace=RELEASE_NAMESPACE)
        if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == RELEASE
    ]
    return pod


def kubeai_address(admin: KubeClient) -> str:
    return f"http://{kubeai_pod(admin)['status']['podIP']}:{KUBEAI_PORT}"


def ask(address: str, model: str) -> JsonObject:
    """A chat completion through KubeAI's OpenAI endpoint; its answer."""
    with httpx.Client(base_url=address, timeout=ANSWER_SECONDS) as client:
        response = client.post(
            "/openai/v1/chat/completions",
            json={"model": model, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8},
        )
    if response.status_code != 200:
        raise RuntimeError(f"KubeAI answered the chat completion with {response.status_code}: {response.text}")
    answer: JsonObject = response.json()
    return answer


# --- one activation, timed -------------------------------------------------------------------


@dataclass(frozen=True)
class Moments:
    """Each step of the activation as the watches saw it arrive (time.monotonic())."""

    written_at: float
    requested_at: float
    created_at: float
    pod_at: float
    running_at: float
    ready_at: float
    answered_at: float

    def parts(self) -> dict[str, float]:
        """PARTS, adding up to the total."""
        points = (self.requested_at, self.created_at, self.pod_at, self.running_at, self.ready_at)
        return dict(zip(PARTS, durations(self.written_at, points, self.answered_at), strict=True))

    @property
    def total(self) -> float:
        return self.answered_at - self.written_at


def _arrived(at: float | None, what: str, node: RealNode, model: str, served: Served) -> float:
    """`at`, or an error saying what did not happen and what the Model, the Pods, KubeAI and the ups show."""
    if at is not None:
        return at
    found = node.admin.get_or_none(KUBEAI_MODEL, model, MODEL_NAMESPACE)
    controller = node.log_tail(RELEASE_NAMESPACE, kubeai_pod(node.admin)["metadata"]["name"], lines=40)
    raise RuntimeError(
        f"{what} did not come in time.\nModel {MODEL_NAMESPACE}/{model}: "
        f"{'not created' if found is None else found.get('status')}\n"
        f"Pods of {MODEL_NAMESPACE}:\n{pod_states(node, MODEL_NAMESPACE)}\nKubeAI's controller:\n{controller}\n"
        f"ups served: {len(served.ups)}, failed: {len(served.failures)}\n" + "\n".join(served.failures)
    )


def activate(
    node: RealNode, operator: Operator, models: ModelWatch, pods: PodWatch, activation: JsonObject
) -> tuple[Moments, JsonObject, Served]:
    """Write the activation, serve the Stack's requests until the model answered; the moments,
    the answer and the ups run meanwhile."""
    model = model_name(activation["metadata"]["name"])
    since, before = models.mark(), operator.requests.count()
    with serving(operator) as served:
        written_at = time.monotonic()
        node.admin.apply(MODEL_ACTIVATION, activation, field_manager=USER, force=False)
        requested = operator.requests.wait_for(before + 1, SETTLE_SECONDS)
        requested_at = _arrived(None if requested is None else requested[0], "a run request", node, model, served)
        created = models.wait_for(model, lambda _: True, since=since, timeout=MODEL_SECONDS)
        created_at = _arrived(created, "the Model's creation", node, model, served)
        pod_at = _arrived(pods.first(lambda _: True, POD_SECONDS), "the Pod's creation", node, model, served)
        running_at = _arrived(pods.first(server_running, START_SECONDS), "the server running", node, model, served)
        ready_at = _arrived(pods.first(pod_ready, LOAD_SECONDS), "the Pod Ready", node, model, served)
        answer = ask(kubeai_address(node.admin), model)
        answered_at = time.monotonic()
    moments = Moments(written_at, requested_at, created_at, pod_at, running_at, ready_at, answered_at)
    return moments, answer, served


@dataclass(frozen=True)
class FirstAnswer:
    """One run of the benchmark."""

    activation: str
    url: str
    moments: Moments
    answer: JsonObject
    served: Served
    converge_ups: tuple[Up, ...]
    converged: bool
    load_before: tuple[float, float, float]
    load_at_write: tuple[float, float, float]
    load_after: tuple[float, float, float]

    @property
    def goal_met(self) -> bool:
        return self.moments.total <= GOAL_SECONDS


def measure() -> FirstAnswer:
    """Start the cluster, the node and KubeAI, seed the cache, then time the activation on the node."""
    load_before = os.getloadavg()
    activation = activation_manifest()
    with (
        tempfile.TemporaryDirectory(prefix="magicstick-first-answer-") as scratch,
        running_cluster(controllers=NODE_CONTROLLERS, scheduler=True, address=node_ip()) as cluster,
    ):
        root = Path(scratch)
        with running_node(cluster, root, images=(local_image(KUBEAI_IMAGE), local_image(OLLAMA_IMAGE))) as node:
            progress("the node is Ready; installing KubeAI")
            install_kubeai(node, cluster, root)
            progress(f"KubeAI rolled out; seeding {CACHE_FOLDER}")
            seed_model_cache(root, parse_model_url(activation["spec"]["local"]["url"]).query["model"])
            return measure_on_node(node, cluster, root, activation, load_before)


def admin_kubeconfig(cluster: ClusterInfo, root: Path) -> Path:
    """One copy of the admin's kubeconfig: the cluster's helper rewrites its file on every call."""
    kubeconfig = root / "admin-kubeconfig.yaml"
    kubeconfig.write_text(cluster.kubeconfig_path(ADMIN_USER).read_text())
    return kubeconfig


def measure_on_node(
    node: RealNode, cluster: ClusterInfo, root: Path, activation: JsonObject, load_before: tuple[float, float, float]
) -> FirstAnswer:
    """Load the world, start the trigger and the watches, converge, then activate the model."""
    kubeconfig = admin_kubeconfig(cluster, root)
    access = KubeAccess(kubeconfig=str(kubeconfig))
    stack = load_world(cluster, node.admin, node_world(demo_documents()))
    project = PulumiProject.create(root / "pulumi")
    project.config_set({"magicstick:kubeconfig": str(kubeconfig)})
    requests, models, pods = StackWatch(), ModelWatch(), PodWatch()
    operator = Operator(project=project, cluster=cluster, requests=requests, scratch=root)
    selector = f"{MODEL_POD_LABEL}={model_name(activation['metadata']['name'])}"
    trigger_log = root / "trigger.log"
    with (
        following(watch_stack, access, stack, requests),
        following(watch_models, access, MODEL_NAMESPACE, models),
        following(watch_pods, access, MODEL_NAMESPACE, selector, pods),
        trigger_process(
            kubeconfig,
            SYSTEM_NAMESPACE,
            target_namespaces=(MODEL_NAMESPACE,),
            quiet_ms=DEFAULT_QUIET_MS,
            max_delay_ms=DEFAULT_MAX_DELAY_MS,
            resync_seconds=RESYNC_SECONDS,
            log=trigger_log,
        ),
    ):
        if requests.wait_for(1, SETTLE_SECONDS) is None:
            raise RuntimeError(f"the trigger made no request at start:\n{trigger_log.read_text()}")
        ups, converged = converge(operator, node.admin)
        load_at_write = os.getloadavg()
        progress(f"converged; writing ModelActivation {activation['metadata']['name']}")
        moments, answer, served = activate(node, operator, models, pods, activation)
    return FirstAnswer(
        activation=activation["metadata"]["name"],
        url=activation["spec"]["local"]["url"],
        moments=moments,
        answer=answer,
        served=served,
        converge_ups=tuple(ups),
        converged=converged,
        load_before=load_before,
        load_at_write=load_at_write,
        load_after=os.getloadavg(),
    )


# --- the report ------------------------------------------------------------------------------


def _seconds_list(values: Sequence[float]) -> str:
    return ", ".join(f"{value:.1f} s" for value in values)


def report(result: FirstAnswer) -> str:
    parts = result.moments.parts()
    ups = result.served.ups
    lines = [
        f"first answer: ModelActivation {result.activation} ({result.url}, Ollama on CPU), the model already in "
        f"the model cache {CACHE_FOLDER}; a real node (kubelet, containerd), KubeAI's controller and Ollama as Pods",
        f"trigger: its real process, quiet {DEFAULT_QUIET_MS} ms, max delay {DEFAULT_MAX_DELAY_MS} ms; PKO played: "
        "one `pulumi up --yes --skip-preview` per request (the real CLI and pulumi-kubernetes), PKO's pod start excluded",
        f"converge before: {len(result.converge_ups)} ups ({_seconds_list([up.seconds for up in result.converge_ups])}); "
        + ("the last changed nothing" if result.converged else "NOT converged: the last still changed something"),
        "",
    ]
    lines += [f"{name:<14} {seconds:>7.2f} s  {PARTS[name]}" for name, seconds in parts.items()]
    lines.append(f"{'total':<14} {result.moments.total:>7.2f} s  ModelActivation written -> first chat completion")
    if ups:
        lines.append(
            f"ups served meanwhile: {len(ups)} ({_seconds_list([up.seconds for up in ups])}), changing "
            f"{sum(len(changes(up.run)) for up in ups)} resources; the first created the Model and went on after it"
        )
    if result.served.failures:
        lines.append(f"ups that failed meanwhile: {len(result.served.failures)}")
    usage = result.answer.get("usage") or {}
    lines.append(
        f"answer: {result.answer.get('object')} of model {result.answer.get('model')}, "
        f"{usage.get('completion_tokens')} completion tokens"
    )
    cpus = os.cpu_count() or 1
    lines.append(
        f"load: {cpus} CPUs, load average {result.load_before[0]:.1f} before the benchmark started its processes, "
        f"{result.load_at_write[0]:.1f} when the activation was written (after the convergence's ups), "
        f"{result.load_after[0]:.1f} at the end"
        + ("; the machine was busy before: the figures are not representative" if result.load_before[0] >= cpus else "")
    )
    verdict = "met" if result.goal_met else "not met"
    lines.append(f"goal: at most {GOAL_SECONDS:g} s: {verdict} (total {result.moments.total:.1f} s)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.parse_args(argv)
    print(report(measure()))


if __name__ == "__main__":
    main()
