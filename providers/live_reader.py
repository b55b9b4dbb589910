"""Read the snapshot from a live cluster: one paginated LIST per kind, nothing else.

Invariant 1, fail closed: a failed read of what every run needs raises SnapshotReadError naming
the kind and the server's answer, and the run stops before a single resource is declared. A
kind whose API is not served yet (a first install before the CRDs exist, or before Flux
installed KubeAI) is not a failure: discovery says so, and the kind reads as empty.

Run namespaces and target namespaces. Every run needs the system namespace, flux-system,
identity-system and `ai`, the default target namespace (`run_namespaces`): any failed read
there stops the run. A namespace that only some ModelActivations or AppInstances name as
`targetNamespace` is a target namespace: when the server refuses (403) a LIST there, the
namespace is recorded in the snapshot as unreadable (the namespace, the refused kind and verb,
the server's message), none of its objects is kept, even of kinds already listed, and no other
kind is listed there. Only the objects that target it are affected: planning degrades them and
removes nothing there, because nothing there was seen. Any other failure there (5xx, no answer)
still stops the run.

The Pulumi Kubernetes Operator Stack the program runs under (`pulumi.com/v1` Stack
`magicstick:stackName` in the system namespace) is one GET by name (`stack_read`), after the
LISTs: absent, or its CRD not served (a workstation run, PKO not installed), it is simply not
in the snapshot. Only its identity and status are kept (`operator_stack_view`): its spec, and
annotations such as kubectl's last-applied copy of it, hold stack configuration the plan never
reads. Any other failure of that GET (403, 5xx) stops the run, as every read in the system
namespace does.

Secrets are never read. NodeFeatures are read across namespaces: Node Feature Discovery keeps
them in its own namespace, which the installation chooses.

Direct runtimes (FreeToken, realtime vLLM-Omni; planning/models/direct.py) label every object
and Pod with RUNTIME_LABEL: in each target namespace their Deployments, Pods and ConfigMaps are
three more LISTs selected on that key. A Pod that carries both the KubeAI `model` label and
RUNTIME_LABEL is selected by two LISTs and kept once (`distinct`).

Probes, bounded per run (providers/ollama.py, ProbeLimits: one attempt, a short timeout, a few
Pods at once, a budget): the Ready Pods of Ollama Models are asked their tags and loaded models,
the Ready Pods of the realtime runtime their upstream `/health`, both through the API server's
pod proxy. A Pod that does not answer is that model's status, never a failed observation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from api.kinds import SETUP_NAMESPACE
from planning.hardware.runtime_adoption import KUBEAI_NAMESPACE
from planning.instances.guard import GUARD_SELECTOR
from planning.labels import MANAGED_BY, MANAGED_BY_VALUE
from planning.models.direct import RUNTIME_LABEL, DirectRuntimeKind
from planning.models.kubeai import MODEL_SERVER_PORT
from planning.settings import DEFAULT_STACK_NAME, FLUX_NAMESPACE
from planning.snapshot import HealthObservation, OllamaObservation, Snapshot, SnapshotError, UnreadableNamespace
from providers.kinds import (
    CONFIG_MAP,
    CRD,
    DEPLOYMENT,
    HELM_RELEASE,
    HTTP_ROUTE,
    KUBEAI_MODEL,
    KUSTOMIZATION,
    NODE,
    NODE_FEATURE,
    OPTIONAL_APIS,
    POD,
    REFERENCE_GRANT,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    SECURITY_POLICY,
    STACK,
    appliance_kinds_at,
)
from providers.kube import Forbidden, KubeAccess, KubeClient, KubeError, ResourceKind, open_client
from providers.ollama import ProbeLimits, ProbeTarget, failure_detail, probe_pods, proxy_path

MANAGED_SELECTOR: Final = f"{MANAGED_BY}={MANAGED_BY_VALUE}"
"""Objects the program created itself (the shared GPU claim)."""
GET: Final = "get"
"""The verb of the one read by name: the operator's Stack."""
LIST: Final = "list"
"""The verb of every read (RBAC's name for a GET of a collection)."""


class SnapshotReadError(Exception):
    """The cluster could not be read completely; the message names the kind and the server's answer."""


@dataclass(frozen=True)
class Read:
    """One LIST: a kind, in one namespace or (namespace None) across the cluster."""

    kind: ResourceKind
    namespace: str | None = None
    label_selector: str | None = None


@dataclass(frozen=True)
class LiveObjects:
    """What one observation LISTed: raw objects, and the target namespaces the server refused."""

    objects: list[dict[str, Any]]
    unreadable: tuple[UnreadableNamespace, ...] = ()
    served_apis: tuple[str, ...] = ()
    """OPTIONAL_APIS the cluster serves, as `<plural>.<group>/<version>` (Snapshot.served_apis)."""


DEFAULT_MODEL_NAMESPACE = "ai"
MODEL_POD_SELECTOR = "model"
"""KubeAI labels every model Pod with `model: <Model name>`; the selector keeps other Pods out."""
KUBEAI_CONFIG_SELECTOR: Final = "app.kubernetes.io/name=kubeai,app.kubernetes.io/instance=kubeai"
"""The labels KubeAI's chart gives its objects: selects its configuration (runtime adoption)."""
RUNTIME_SELECTOR: Final = RUNTIME_LABEL
"""Direct runtimes label every object and Pod with RUNTIME_LABEL; selecting on the key keeps other objects out."""

Served = dict[tuple[str, str], frozenset[str] | None]
"""Discovery answers of one observation: the plurals served per (group, version); None: not served."""


def run_namespaces(system_namespace: str, gateway_namespace: str | None = None) -> frozenset[str]:
    """The namespaces every run needs: a failed read in one of them stops the run. Pure."""
    return frozenset(
        {
            system_namespace,
            gateway_namespace or system_namespace,
            FLUX_NAMESPACE,
            SETUP_NAMESPACE,
            DEFAULT_MODEL_NAMESPACE,
        }
    )


def namespace_reads(namespace: str) -> tuple[Read, ...]:
    """The LISTs of one target namespace, in a fixed order. Pure.

    KubeAI Models, their Pods and ReferenceGrants, then the Deployments, Pods and ConfigMaps
    of direct runtimes: six LISTs, whatever the namespace holds.
    """
    return (
        Read(KUBEAI_MODEL, namespace),
        Read(POD, namespace, MODEL_POD_SELECTOR),
        Read(REFERENCE_GRANT, namespace),
        Read(DEPLOYMENT, namespace, RUNTIME_SELECTOR),
        Read(POD, namespace, RUNTIME_SELECTOR),
        Read(CONFIG_MAP, namespace, RUNTIME_SELECTOR),
    )


def gateway_reads(namespace: str) -> tuple[Read, ...]:
    """The LISTs of the gateway namespace: the instances' routes and policies, and the access
    guard's Deployment (selected by its component label). Pure."""
    return (Read(HTTP_ROUTE, namespace), Read(SECURITY_POLICY, namespace), Read(DEPLOYMENT, namespace, GUARD_SELECTOR))


def reads(
    system_namespace: str,
    model_namespaces: Iterable[str] = (DEFAULT_MODEL_NAMESPACE,),
    gateway_namespace: str | None = None,
) -> tuple[Read, ...]:
    """Every LIST one observation makes, in a fixed order.

    KubeAI Models, their Pods, ReferenceGrants and the objects of direct runtimes are read in
    each namespace a ModelActivation or an AppInstance targets (`namespace_reads`); their number
    grows with namespaces, never with objects. The Gateway routes and policies, and the access
    guard, live in the gateway namespace (`gateway_reads`; by default the system namespace),
    beside the shared Gateway; every run needs it.
    """
    per_namespace = tuple(read for namespace in sorted(set(model_namespaces)) for read in namespace_reads(namespace))
    return (
        Read(CRD),
        Read(NODE),
        Read(NODE_FEATURE),
        *(Read(kind, namespace) for kind, namespace in appliance_kinds_at(system_namespace)),
        Read(KUSTOMIZATION, FLUX_NAMESPACE),
        Read(CONFIG_MAP, FLUX_NAMESPACE),
        Read(CONFIG_MAP, system_namespace),
        Read(HELM_RELEASE, system_namespace),
        Read(HELM_RELEASE, FLUX_NAMESPACE),
        Read(CONFIG_MAP, KUBEAI_NAMESPACE, KUBEAI_CONFIG_SELECTOR),
        *gateway_reads(gateway_namespace or system_namespace),
        Read(RESOURCE_SLICE),
        Read(RESOURCE_CLAIM, DEFAULT_MODEL_NAMESPACE, MANAGED_SELECTOR),
    ) + per_namespace


def _list(client: KubeClient, read: Read, served: Served) -> list[dict[str, Any]]:
    """The objects of one read; [] when its kind is not served. Raises KubeError."""
    kind = read.kind
    key = (kind.group, kind.version)
    if key not in served:
        served[key] = client.served_resources(kind.group, kind.version)
    resources = served[key]
    if resources is None or kind.plural not in resources:
        return []
    return client.list(kind, namespace=read.namespace, label_selector=read.label_selector)


def _read_error(read: Read, error: KubeError) -> SnapshotReadError:
    where = f" in namespace {read.namespace}" if read.namespace else ""
    return SnapshotReadError(f"reading {read.kind.kind} ({read.kind.api_version}){where} failed: {error.detail}")


def read_objects(client: KubeClient, plan: Iterable[Read], served: Served | None = None) -> list[dict[str, Any]]:
    """Raw objects of every served kind in `plan`. Raises SnapshotReadError on any failure."""
    known: Served = {} if served is None else served
    objects: list[dict[str, Any]] = []
    for read in plan:
        try:
            objects.extend(_list(client, read, known))
        except KubeError as error:
            raise _read_error(read, error) from error
    return objects


def refused_read(read: Read, error: Forbidden) -> UnreadableNamespace:
    """The record of a LIST the server refused in a target namespace. Pure."""
    kind = read.kind
    return UnreadableNamespace(
        namespace=read.namespace or "",
        api_version=kind.api_version,
        kind=kind.kind,
        resource=f"{kind.plural}.{kind.group}" if kind.group else kind.plural,
        verb=LIST,
        message=error.detail,
    )


def read_target_namespace(client: KubeClient, namespace: str, served: Served) -> LiveObjects:
    """Every object of one target namespace, or none and why: the first LIST the server refused.

    Only a 403 is recorded; any other failure raises SnapshotReadError (invariant 1).
    """
    objects: list[dict[str, Any]] = []
    for read in namespace_reads(namespace):
        try:
            objects.extend(_list(client, read, served))
        except Forbidden as error:
            return LiveObjects(objects=[], unreadable=(refused_read(read, error),))
        except KubeError as error:
            raise _read_error(read, error) from error
    return LiveObjects(objects=objects)


def model_namespaces(objects: Iterable[dict[str, Any]], system_namespace: str) -> tuple[str, ...]:
    """The namespaces the ModelActivations and AppInstances of `system_namespace` target (default `ai`)."""
    found = {DEFAULT_MODEL_NAMESPACE}
    for obj in objects:
        if (
            obj.get("kind") in ("ModelActivation", "AppInstance")
            and obj["metadata"].get("namespace") == system_namespace
        ):
            target = (obj.get("spec") or {}).get("targetNamespace")
            if isinstance(target, str) and target:
                found.add(target)
    return tuple(sorted(found))


def ollama_pods(objects: Iterable[dict[str, Any]]) -> tuple[ProbeTarget, ...]:
    """The Ready Pods whose controller is a KubeAI Model of engine OLlama, in the order listed. Pure."""
    listed = list(objects)
    ollama_models = {
        (o["metadata"]["namespace"], o["metadata"].get("uid"))
        for o in listed
        if o.get("kind") == "Model" and (o.get("spec") or {}).get("engine") == "OLlama"
    }
    targets = []
    for pod in listed:
        if pod.get("kind") != "Pod" or not _ready(pod):
            continue
        namespace = pod["metadata"]["namespace"]
        owners = {
            (namespace, o.get("uid")) for o in pod["metadata"].get("ownerReferences") or () if o.get("controller")
        }
        if owners & ollama_models:
            targets.append(ProbeTarget(namespace=namespace, pod=pod["metadata"]["name"]))
    return tuple(targets)


def observe_ollama(
    access: KubeAccess,
    objects: Iterable[dict[str, Any]],
    *,
    limits: ProbeLimits = ProbeLimits(),
    port: int | None = MODEL_SERVER_PORT,
) -> tuple[OllamaObservation, ...]:
    """Tags and memory of every Ready Pod of an Ollama Model, through the API server's pod proxy.

    Bounded by `limits` (one attempt per request, a timeout, a budget for the run). A Pod that
    does not answer is not a failed observation of the cluster: it is Unreachable, or
    NotObserved when the budget ran out, and becomes that model's status.
    """
    return probe_pods(access, ollama_pods(objects), limits=limits, port=port)


HEALTH_PATH: Final = "health"
"""The upstream health endpoint of the realtime runtime (vLLM-Omni), relative to its port."""
HEALTH_PORT_NAME: Final = "http"
"""The container port the realtime runtime serves on, and its Service targets by name."""


@dataclass(frozen=True)
class HealthTarget:
    """One Ready Pod of the realtime runtime to ask, and the container port it serves on."""

    namespace: str
    pod: str
    port: int


def realtime_pods(objects: Iterable[dict[str, Any]]) -> tuple[HealthTarget, ...]:
    """The Ready Pods labelled as the realtime runtime that declare a port named `http`, in the order listed. Pure.

    The port is that of the first container that declares one; a Pod without one is not asked.
    """
    targets = []
    for pod in objects:
        if pod.get("kind") != "Pod" or not _ready(pod):
            continue
        metadata = pod["metadata"]
        if (metadata.get("labels") or {}).get(RUNTIME_LABEL) != DirectRuntimeKind.REALTIME.label:
            continue
        port = _named_port(pod, HEALTH_PORT_NAME)
        if port is not None:
            targets.append(HealthTarget(namespace=metadata["namespace"], pod=metadata["name"], port=port))
    return tuple(targets)


def _named_port(pod: dict[str, Any], name: str) -> int | None:
    for container in (pod.get("spec") or {}).get("containers") or ():
        for port in container.get("ports") or ():
            number = port.get("containerPort")
            if port.get("name") == name and isinstance(number, int) and not isinstance(number, bool):
                return number
    return None


def observe_health(
    access: KubeAccess, objects: Iterable[dict[str, Any]], *, limits: ProbeLimits = ProbeLimits()
) -> tuple[HealthObservation, ...]:
    """What every Ready realtime Pod answers on `/health`, through the API server's pod proxy.

    Bounded as the Ollama probes are (`limits`, `within_budget`). A 2xx is healthy; any other
    answer, or none, is unhealthy with the status or the cause in `error`. A Pod not answered
    within the budget has no observation: it was not read this run.
    """
    targets = realtime_pods(objects)
    if not targets:
        return ()
    with open_client(limits.access(access)) as client:
        answers = within_budget(
            [_health_probe(client, target) for target in targets], limits=limits, name="health-probe"
        )
    return tuple(answer for answer in answers if answer is not None)


def _health_probe(client: KubeClient, target: HealthTarget) -> Callable[[], HealthObservation]:
    def ask() -> HealthObservation:
        path = proxy_path(target.namespace, target.pod, HEALTH_PATH, port=target.port)
        try:
            client.request("GET", path)
        except KubeError as error:
            return HealthObservation(
                namespace=target.namespace, pod=target.pod, healthy=False, error=failure_detail(error)
            )
        except ValueError:
            # A 2xx whose body is not JSON (plain text, as some servers answer /health): the
            # status is the answer.
            pass
        return HealthObservation(namespace=target.namespace, pod=target.pod, healthy=True)

    return ask


T = TypeVar("T")


def within_budget(asks: Sequence[Callable[[], T]], *, limits: ProbeLimits, name: str) -> tuple[T | None, ...]:
    """Run `asks`, `limits.parallelism` at a time, for at most `limits.budget_seconds` together.

    One result per ask, in order; None for an ask not finished within the budget. An ask not
    started when the budget runs out is never started. Each ask bounds its own requests
    (`ProbeLimits.access`) and never raises for one Pod.
    """
    if not asks:
        return ()
    stop = threading.Event()

    def unless_stopped(ask: Callable[[], T]) -> T | None:
        return None if stop.is_set() else ask()

    pool = ThreadPoolExecutor(max_workers=limits.parallelism, thread_name_prefix=name)
    try:
        futures = [pool.submit(unless_stopped, ask) for ask in asks]
        done, _ = wait(futures, timeout=limits.budget_seconds)
    finally:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
    return tuple(future.result() if future in done else None for future in futures)


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
    )


@dataclass(frozen=True)
class NamedRead:
    """One GET of an object by name: its kind, namespace and name."""

    kind: ResourceKind
    namespace: str
    name: str


def stack_read(system_namespace: str, stack_name: str = DEFAULT_STACK_NAME) -> NamedRead:
    """The GET of the operator's Stack. Pure."""
    return NamedRead(STACK, system_namespace, stack_name)


_STACK_METADATA: Final = ("name", "namespace", "uid", "generation", "resourceVersion", "creationTimestamp", "labels")


def operator_stack_view(stack: dict[str, Any]) -> dict[str, Any]:
    """The Stack as the snapshot keeps it: identity, kept metadata and status, no spec. Pure."""
    metadata = stack.get("metadata") or {}
    view: dict[str, Any] = {
        "apiVersion": stack.get("apiVersion", STACK.api_version),
        "kind": stack.get("kind", STACK.kind),
        "metadata": {key: metadata[key] for key in _STACK_METADATA if key in metadata},
    }
    if "status" in stack:
        view["status"] = stack["status"]
    return view


def read_operator_stack(client: KubeClient, read: NamedRead, served: Served) -> list[dict[str, Any]]:
    """The operator's Stack (`operator_stack_view`), or [] when it or its API is absent.

    Raises SnapshotReadError on any other failure.
    """
    kind = read.kind
    key = (kind.group, kind.version)
    try:
        if key not in served:
            served[key] = client.served_resources(kind.group, kind.version)
        resources = served[key]
        if resources is None or kind.plural not in resources:
            return []
        found = client.get_or_none(kind, read.name, read.namespace)
    except KubeError as error:
        raise SnapshotReadError(
            f"reading {kind.kind} ({kind.api_version}) {read.name} in namespace {read.namespace} failed: {error.detail}"
        ) from error
    return [] if found is None else [operator_stack_view(found)]


def read_live_objects(
    client: KubeClient,
    system_namespace: str,
    gateway_namespace: str | None = None,
    *,
    stack_name: str = DEFAULT_STACK_NAME,
) -> LiveObjects:
    """Everything one observation reads: the fixed kinds, the run namespaces, the target
    namespaces, then the operator's Stack."""
    served: Served = {}
    objects = read_objects(client, reads(system_namespace, (), gateway_namespace), served)
    needed = run_namespaces(system_namespace, gateway_namespace)
    targets = model_namespaces(objects, system_namespace)
    run_reads = [read for namespace in targets if namespace in needed for read in namespace_reads(namespace)]
    objects += read_objects(client, run_reads, served)
    unreadable: list[UnreadableNamespace] = []
    for namespace in (n for n in targets if n not in needed):
        found = read_target_namespace(client, namespace, served)
        objects += found.objects
        unreadable += found.unreadable
    objects += read_operator_stack(client, stack_read(system_namespace, stack_name), served)
    return LiveObjects(objects=distinct(objects), unreadable=tuple(unreadable), served_apis=served_apis(client, served))


def api_name(kind: ResourceKind) -> str:
    """`<plural>.<group>/<version>`: how Snapshot.served_apis names a built-in API. Pure."""
    return f"{kind.plural}.{kind.group}/{kind.version}"


def served_apis(client: KubeClient, served: Served) -> tuple[str, ...]:
    """The OPTIONAL_APIS the cluster serves, asking discovery for a group/version not asked yet."""
    found = []
    for kind in OPTIONAL_APIS:
        key = (kind.group, kind.version)
        if key not in served:
            try:
                served[key] = client.served_resources(kind.group, kind.version)
            except KubeError as error:
                raise SnapshotReadError(f"discovery of {kind.group}/{kind.version} failed: {error.detail}") from error
        resources = served[key]
        if resources is not None and kind.plural in resources:
            found.append(api_name(kind))
    return tuple(found)


def distinct(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """`objects` with each object once, first copy kept, in order. Pure.

    Two LISTs can select one object: a Pod with both the `model` label and RUNTIME_LABEL, a
    runtime's ConfigMap in a target namespace that is also the system namespace.
    """
    seen: set[tuple[str, str, str, str]] = set()
    kept = []
    for obj in objects:
        metadata = obj["metadata"]
        key = (obj["apiVersion"], obj["kind"], metadata.get("namespace") or "", metadata["name"])
        if key not in seen:
            seen.add(key)
            kept.append(obj)
    return kept


def read_snapshot(
    access: KubeAccess,
    *,
    system_namespace: str,
    gateway_namespace: str | None = None,
    probes: ProbeLimits = ProbeLimits(),
    stack_name: str = DEFAULT_STACK_NAME,
) -> Snapshot:
    """One observation of the live cluster. Raises SnapshotReadError when what every run needs cannot be read."""
    with open_client(access) as client:
        live = read_live_objects(client, system_namespace, gateway_namespace, stack_name=stack_name)
    ollama = observe_ollama(access, live.objects, limits=probes)
    health = observe_health(access, live.objects, limits=probes)
    try:
        return Snapshot.from_objects(
            live.objects, ollama=ollama, unreadable=live.unreadable, health=health, served_apis=live.served_apis
        )
    except SnapshotError as error:
        raise SnapshotReadError(f"the cluster returned an unreadable object: {error}") from error
