"""Ollama inside KubeAI model Pods: the model-name alias and the memory the models use.

Every request reaches Ollama through the API server's pod proxy
(/api/v1/namespaces/{ns}/pods/{pod}:{port}/proxy/{path}), so the program needs no network
route to Pods: it works from a workstation exactly as it does in-cluster. Its identity needs
`get` (GET) and `create` (POST) on `pods/proxy` in the model namespace.

Rules:
- the alias is checked on every Ready model Pod the caller names, one by one, in order;
- a Pod that already lists the alias is left alone; a Pod that lists the source tag gets the
  alias through /api/copy; a Pod that lists neither is still downloading and waits. Running
  the check again changes nothing that is already right: idempotent by construction;
- names compare as Ollama prints them: a name without a tag means `:latest`;
- a Pod the API server no longer knows (404) is reported gone, not failed: it left between
  observation and now;
- a 5xx, whether the proxy could not reach the Pod or Ollama failed, raises
  OllamaUnavailable carrying the server's text; any other failure keeps its KubeError type
  (a Pod without a usable IP is refused with 400 "address not allowed");
- one Pod that fails does not stop the others: the alias pass records it (`AliasResult.failed`,
  with the server's Status) and goes on; the OllamaAlias provider returns it as its `problem`
  (providers/outcomes.py), never raises it, and tries again on the next run.

Bounded probes (issue #11, point 5): a dead Pod must not slow every run. Every request to a
Pod is one attempt with a short timeout (ProbeLimits: PROBE_TIMEOUT_SECONDS, PROBE_ATTEMPTS);
an observation asks its Pods in parallel (PROBE_PARALLELISM at once) within a budget for the
whole run (PROBE_BUDGET_SECONDS). A Pod that did not answer in time is Unreachable; a Pod the
budget left unasked or unanswered is NotObserved this run. Neither fails the observation.

The inputs of an OllamaAlias name the Pods, the source and the alias, nothing else: each
method builds its own client from the cluster access the stack's configuration names
(providers/cluster_access.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Final, NotRequired, Self, TypedDict, cast
from urllib.parse import quote

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from api.vocabulary import ProblemReason
from planning.conditions import rfc3339
from planning.models.plan import AliasRequest
from planning.provider_wire import PROBLEM_OUTPUT
from planning.snapshot import OllamaObservation, OllamaProbe
from providers.cluster_access import ClusterResourceProvider, without_legacy_access
from providers.kube import (
    ConnectionFailure,
    KubeAccess,
    KubeClient,
    KubeConnectionError,
    KubeError,
    NotFound,
    ServerError,
    open_client,
)
from providers.outcomes import Problem, retry_requested, with_problem

OLLAMA_PORT: Final = 11434
"""Ollama's own default port. KubeAI's Ollama Pods set OLLAMA_HOST to their declared port
(8000 in KubeAI's engine code); pass `port=None` to use the first port the Pod declares."""

DEFAULT_TAG: Final = "latest"
MEMORY_SOURCE: Final = "ollama /api/ps"
MIB: Final = 1024 * 1024

PROBE_TIMEOUT_SECONDS: Final = 3.0
"""Bound of one request to a Pod through the pod proxy (connect, send, answer). Ollama answers
/api/tags and /api/ps from memory in milliseconds; three seconds is a hung Pod."""
PROBE_ATTEMPTS: Final = 1
"""One attempt per request per run: the next run is the retry (every five minutes in-cluster)."""
PROBE_BUDGET_SECONDS: Final = 15.0
"""What one observation spends on all Ollama Pods together; the rest is NotObserved this run."""
PROBE_PARALLELISM: Final = 8
"""Pods asked at once. Each costs one connection to the API server, which proxies it."""


@dataclass(frozen=True)
class ProbeLimits:
    """How much one run spends asking Ollama Pods. The defaults are the production limits."""

    timeout_seconds: float = PROBE_TIMEOUT_SECONDS
    attempts: int = PROBE_ATTEMPTS
    budget_seconds: float = PROBE_BUDGET_SECONDS
    parallelism: int = PROBE_PARALLELISM

    def __post_init__(self) -> None:
        if self.parallelism < 1:
            raise ValueError(f"ProbeLimits.parallelism must be at least 1, not {self.parallelism}")

    def access(self, access: KubeAccess) -> KubeAccess:
        """`access` with this timeout and number of attempts for every request. Pure."""
        return replace(
            access, timeout_seconds=self.timeout_seconds, retry=replace(access.retry, attempts=self.attempts)
        )


class OllamaApi(StrEnum):
    TAGS = "api/tags"
    COPY = "api/copy"
    PS = "api/ps"


class AliasState(StrEnum):
    ALIASED = "Aliased"
    SOURCE_PRESENT = "SourcePresent"
    WAITING_FOR_SOURCE = "WaitingForSource"


class OllamaUnavailable(ServerError):
    """A 5xx through the pod proxy: the API server could not reach the Pod, or Ollama failed."""


class TagModel(TypedDict):
    name: str
    model: NotRequired[str]
    size: NotRequired[int]
    digest: NotRequired[str]


class TagsBody(TypedDict):
    models: list[TagModel]


class LoadedModel(TypedDict):
    name: str
    size: int
    size_vram: NotRequired[int]
    model: NotRequired[str]
    expires_at: NotRequired[str]


class PsBody(TypedDict):
    models: list[LoadedModel]


class MemoryUsage(TypedDict):
    """ModelActivation.status.memoryUsage."""

    ramMi: int
    vramMi: int
    totalMi: int
    source: str
    sampledAt: str
    replicas: int


def normalise_name(name: str) -> str:
    """`name` as Ollama prints it: a name without a tag gets `:latest`. Pure.

    The tag is looked for after the last `/`, so a registry host with a port is not a tag.
    """
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:{DEFAULT_TAG}"


def proxy_path(namespace: str, pod: str, path: str, *, port: int | None = OLLAMA_PORT) -> str:
    """The API server path that proxies `path` to `port` of `pod`. Pure.

    `port=None` leaves the port out: the API server then dials the first container port the
    Pod declares.
    """
    target = quote(pod) if port is None else f"{quote(pod)}:{port}"
    return f"/api/v1/namespaces/{quote(namespace)}/pods/{target}/proxy/{path.lstrip('/')}"


def _request(
    client: KubeClient, method: str, namespace: str, pod: str, api: OllamaApi, *, port: int | None, body: Any = None
) -> dict[str, Any]:
    path = proxy_path(namespace, pod, api, port=port)
    try:
        return client.request(method, path, body=body, content_type=None if body is None else "application/json")
    except ServerError as error:
        raise OllamaUnavailable(
            method=error.method, path=error.path, code=error.code, reason=error.reason, message=error.message
        ) from error


def list_tags(client: KubeClient, namespace: str, pod: str, *, port: int | None = OLLAMA_PORT) -> frozenset[str]:
    """Every model name the Ollama of `pod` lists, normalised (see `normalise_name`)."""
    body = cast(TagsBody, _request(client, "GET", namespace, pod, OllamaApi.TAGS, port=port))
    return frozenset(normalise_name(model["name"]) for model in body.get("models") or ())


def copy_model(
    client: KubeClient, namespace: str, pod: str, source: str, destination: str, *, port: int | None = OLLAMA_PORT
) -> None:
    """Make `destination` a second name of `source` in the Ollama of `pod` (no data is copied)."""
    _request(
        client, "POST", namespace, pod, OllamaApi.COPY, port=port, body={"source": source, "destination": destination}
    )


def alias_state(tags: frozenset[str], *, source: str, alias: str) -> AliasState:
    """Where one Pod stands, from the tags it lists. Pure."""
    if normalise_name(alias) in tags:
        return AliasState.ALIASED
    if normalise_name(source) in tags:
        return AliasState.SOURCE_PRESENT
    return AliasState.WAITING_FOR_SOURCE


@dataclass(frozen=True)
class PodFailure:
    """A request to one Pod that failed, with the server's Status (code 0: no answer came)."""

    pod: str
    error: KubeError

    @property
    def detail(self) -> str:
        return f"Pod {self.pod}: {failure_detail(self.error)}"


def failure_detail(error: KubeError) -> str:
    """The failure of one proxied request in words, keeping the server's Status. Pure.

    A timeout names the pod proxy, not the API server's address: the API server took the
    request, the Pod did not answer it.
    """
    if isinstance(error, KubeConnectionError) and error.failure is ConnectionFailure.TIMEOUT:
        return f"{error.method} {_ollama_path(error.path)} through the API server's pod proxy: {error.cause}"
    return f"{error.method} {_ollama_path(error.path)}: {error.detail}"


def _ollama_path(path: str) -> str:
    """`api/tags` from a pod proxy path; other paths unchanged."""
    return path.split("/proxy/", 1)[-1] if "/proxy/" in path else path


@dataclass(frozen=True)
class AliasResult:
    """The alias on each named Pod.

    After `observe_alias`, a Pod that lists the source but not the alias is in none of these:
    `ensure_alias` would copy it.
    """

    aliased: tuple[str, ...]
    """Pods that list the alias now, including those it was just copied to."""
    copied: tuple[str, ...]
    """Pods where this call created the alias."""
    waiting: tuple[str, ...]
    """Pods that list neither the alias nor the source: the model is still downloading."""
    gone: tuple[str, ...]
    """Pods the API server no longer knows."""
    failed: tuple[PodFailure, ...] = ()
    """Pods whose request failed (no answer, 5xx, refused): tried again on the next run."""

    def complete(self, pods: Iterable[str]) -> bool:
        """True when every one of `pods` lists the alias."""
        return set(pods) <= set(self.aliased)


def _alias_pass(
    client: KubeClient, namespace: str, pods: Sequence[str], source: str, alias: str, *, port: int | None, copy: bool
) -> AliasResult:
    aliased: list[str] = []
    copied: list[str] = []
    waiting: list[str] = []
    gone: list[str] = []
    failed: list[PodFailure] = []
    for pod in pods:
        try:
            state, copied_now = _alias_one(client, namespace, pod, source, alias, port=port, copy=copy)
        except NotFound:
            gone.append(pod)
            continue
        except KubeError as error:
            failed.append(PodFailure(pod, error))
            continue
        if copied_now:
            copied.append(pod)
        if state is AliasState.ALIASED or copied_now:
            aliased.append(pod)
        elif state is AliasState.WAITING_FOR_SOURCE:
            waiting.append(pod)
    return AliasResult(
        aliased=tuple(aliased), copied=tuple(copied), waiting=tuple(waiting), gone=tuple(gone), failed=tuple(failed)
    )


def _alias_one(
    client: KubeClient, namespace: str, pod: str, source: str, alias: str, *, port: int | None, copy: bool
) -> tuple[AliasState, bool]:
    """Where `pod` stands, and whether this call copied the alias to it; raises the KubeError of a failed request."""
    state = alias_state(list_tags(client, namespace, pod, port=port), source=source, alias=alias)
    if state is not AliasState.SOURCE_PRESENT or not copy:
        return state, False
    copy_model(client, namespace, pod, normalise_name(source), normalise_name(alias), port=port)
    return state, True


def ensure_alias(
    client: KubeClient, namespace: str, pods: Sequence[str], source: str, alias: str, *, port: int | None = OLLAMA_PORT
) -> AliasResult:
    """Give every one of `pods` the name `alias` for the model `source`, where the source is there."""
    return _alias_pass(client, namespace, pods, source, alias, port=port, copy=True)


def observe_alias(
    client: KubeClient, namespace: str, pods: Sequence[str], source: str, alias: str, *, port: int | None = OLLAMA_PORT
) -> AliasResult:
    """Where the alias stands on every one of `pods`, changing nothing."""
    return _alias_pass(client, namespace, pods, source, alias, port=port, copy=False)


@dataclass(frozen=True)
class MemorySample:
    """What the models loaded in one Pod's Ollama occupy, summed over those models, in bytes."""

    pod: str
    size_bytes: int
    vram_bytes: int

    @property
    def total_mi(self) -> int:
        return _mib(self.size_bytes)

    @property
    def vram_mi(self) -> int:
        return _mib(self.vram_bytes)

    @property
    def ram_mi(self) -> int:
        return self.total_mi - self.vram_mi


def _mib(size_bytes: int) -> int:
    """Bytes to MiB, rounded to the nearest; ramMi is totalMi - vramMi so the parts add up."""
    return (size_bytes + MIB // 2) // MIB


def memory_sample(
    client: KubeClient, namespace: str, pod: str, *, port: int | None = OLLAMA_PORT
) -> MemorySample | None:
    """The memory of the models `pod` has loaded (GET /api/ps); None when it lists none."""
    body = cast(PsBody, _request(client, "GET", namespace, pod, OllamaApi.PS, port=port))
    models = body.get("models") or ()
    if not models:
        return None
    size = sum(int(model.get("size") or 0) for model in models)
    vram = sum(int(model.get("size_vram") or 0) for model in models)
    return MemorySample(pod=pod, size_bytes=size, vram_bytes=min(vram, size))


def memory_usage(samples: Iterable[MemorySample | None], now: datetime) -> MemoryUsage | None:
    """status.memoryUsage from the samples of the Ready Pods; None (clear it) when none sampled. Pure.

    A None entry is a Pod that listed no loaded model; it does not count as a replica.
    """
    present = [sample for sample in samples if sample is not None]
    if not present:
        return None
    total_mi = _mib(sum(sample.size_bytes for sample in present))
    vram_mi = _mib(sum(sample.vram_bytes for sample in present))
    return MemoryUsage(
        ramMi=total_mi - vram_mi,
        vramMi=vram_mi,
        totalMi=total_mi,
        source=MEMORY_SOURCE,
        sampledAt=rfc3339(now),
        replicas=len(present),
    )


@dataclass(frozen=True)
class ProbeTarget:
    """One Ready Pod of an Ollama Model to ask."""

    namespace: str
    pod: str


def probe_pods(
    access: KubeAccess,
    targets: Sequence[ProbeTarget],
    *,
    limits: ProbeLimits = ProbeLimits(),
    port: int | None = OLLAMA_PORT,
) -> tuple[OllamaObservation, ...]:
    """What every target answers to /api/tags and /api/ps, one observation per target, in order.

    Targets are asked `limits.parallelism` at a time, each request once, bounded by
    `limits.timeout_seconds`; whatever is not answered within `limits.budget_seconds` is
    NotObserved, and no further request is started. Never raises for one Pod.
    """
    if not targets:
        return ()
    stop = threading.Event()
    with open_client(limits.access(access)) as client:
        pool = ThreadPoolExecutor(max_workers=limits.parallelism, thread_name_prefix="ollama-probe")
        try:
            futures = [pool.submit(_probe, client, target, port=port, stop=stop) for target in targets]
            done, _ = wait(futures, timeout=limits.budget_seconds)
        finally:
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
        return tuple(
            _observation(future, target, done, limits) for future, target in zip(futures, targets, strict=True)
        )


def _observation(
    future: Future[OllamaObservation | None], target: ProbeTarget, done: set[Future[Any]], limits: ProbeLimits
) -> OllamaObservation:
    answered = future.result() if future in done else None
    if answered is not None:
        return answered
    message = f"not observed this run: the Ollama probes of one run have a budget of {limits.budget_seconds:g} s"
    return OllamaObservation(namespace=target.namespace, pod=target.pod, error=message, probe=OllamaProbe.NOT_OBSERVED)


def _probe(
    client: KubeClient, target: ProbeTarget, *, port: int | None, stop: threading.Event
) -> OllamaObservation | None:
    """One Pod's answers; None when the budget ran out before it was asked everything."""
    namespace, pod = target.namespace, target.pod
    try:
        if stop.is_set():
            return None
        tags = list_tags(client, namespace, pod, port=port)
        if stop.is_set():
            return None
        sample = memory_sample(client, namespace, pod, port=port)
    except KubeError as error:
        return OllamaObservation(
            namespace=namespace, pod=pod, error=failure_detail(error), probe=OllamaProbe.UNREACHABLE
        )
    return OllamaObservation(
        namespace=namespace,
        pod=pod,
        tags=tags,
        ram_mi=sample.ram_mi if sample else None,
        vram_mi=sample.vram_mi if sample else None,
        total_mi=sample.total_mi if sample else None,
    )


REQUIRED_PROPERTIES: Final = ("namespace", "source", "alias")
REPLACING_PROPERTIES: Final = ("namespace",)
UPDATING_PROPERTIES: Final = ("pods", "source", "alias", "port")


@dataclass(frozen=True)
class AliasTarget(AliasRequest):
    """The inputs of one OllamaAlias resource (AliasRequest.to_inputs), as `OllamaAliasProvider.check`
    leaves them; inputs without a port name Ollama's own."""

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Any]) -> Self:
        return super().from_inputs({**inputs, "port": inputs.get("port") or OLLAMA_PORT})

    def outputs(self, props: Mapping[str, Any], result: AliasResult) -> dict[str, Any]:
        """Full outputs: the inputs, where the alias stands, and the `problem` of the Pods that failed."""
        outputs = {**without_legacy_access(props), "aliased": sorted(result.aliased), "waiting": sorted(result.waiting)}
        return with_problem(outputs, alias_problem(result))


def alias_problem(result: AliasResult) -> Problem | None:
    """The `problem` of an alias pass: None when no Pod failed; Temporary, so the next run tries again. Pure.

    The reason is that of the first Pod that failed; the message names every one, with the
    server's Status.
    """
    if not result.failed:
        return None
    return Problem(_reason(result.failed[0].error), "; ".join(failure.detail for failure in result.failed))


def _reason(error: KubeError) -> ProblemReason:
    if isinstance(error, OllamaUnavailable):
        return ProblemReason.OLLAMA_UNREACHABLE
    if isinstance(error, KubeConnectionError):
        timed_out = error.failure is ConnectionFailure.TIMEOUT
        return ProblemReason.OLLAMA_UNREACHABLE if timed_out else ProblemReason.CLUSTER_UNREACHABLE
    return ProblemReason.OLLAMA_ALIAS_REFUSED


def _check_failures(news: Mapping[str, Any]) -> list[CheckFailure]:
    failures = [
        CheckFailure(p, f"{p} must be a non-empty string") for p in REQUIRED_PROPERTIES if not _text(news.get(p))
    ]
    pods = news.get("pods")
    if not isinstance(pods, (list, tuple)) or not all(_text(pod) for pod in pods):
        failures.append(CheckFailure("pods", "pods must be a list of Pod names"))
    port = news.get("port", OLLAMA_PORT)
    if isinstance(port, bool) or not isinstance(port, (int, float)) or port != int(port) or not 0 < port < 65536:
        failures.append(CheckFailure("port", "port must be a whole number from 1 to 65535"))
    return failures


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


class OllamaAliasProvider(ClusterResourceProvider):
    """Keeps the KubeAI model name as an Ollama alias of its registry source on every Ready Pod.

    Outputs add `aliased` and `waiting` (sorted Pod names) and `problem` (providers/outcomes.py):
    a Pod that did not answer or refused is OllamaUnreachable or OllamaAliasRefused with the
    server's message, never an exception. While `aliased` is not every Pod, or a problem is
    stored, `diff` reports a change, so the next run tries again; a converged run changes
    nothing. Every request is one attempt bounded by PROBE_TIMEOUT_SECONDS.
    """

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = without_legacy_access(news)
        failures = _check_failures(inputs)
        if failures:
            return CheckResult(inputs, failures)
        normalised = {
            **inputs,
            "pods": sorted(set(inputs["pods"])),
            "source": normalise_name(inputs["source"]),
            "alias": normalise_name(inputs["alias"]),
            "port": int(inputs.get("port", OLLAMA_PORT)),
        }
        return CheckResult(normalised, [])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [p for p in REPLACING_PROPERTIES if olds.get(p) != news.get(p)]
        changed = replaces + [p for p in UPDATING_PROPERTIES if olds.get(p) != news.get(p)]
        if set(olds.get("aliased") or ()) != set(news.get("pods") or ()):
            changed.append("aliased")
        # State written before the `problem` output existed is updated once, as the runtime
        # profile's is: a missing output reads as unknown in every preview.
        if retry_requested(olds) or PROBLEM_OUTPUT not in olds:
            changed.append(PROBLEM_OUTPUT)
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        target = AliasTarget.from_inputs(props)
        result = self._ensure(target)
        return CreateResult(id_=f"{target.namespace}/{target.alias}", outs=target.outputs(props, result))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        target = AliasTarget.from_inputs(news)
        return UpdateResult(outs=target.outputs(news, self._ensure(target)))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        target = AliasTarget.from_inputs(props)
        with open_client(ProbeLimits().access(self.cluster_access())) as client:
            result = observe_alias(client, target.namespace, target.pods, target.source, target.alias, port=target.port)
        return ReadResult(id_=id_, outs=target.outputs(props, result))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None

    def _ensure(self, target: AliasTarget) -> AliasResult:
        with open_client(ProbeLimits().access(self.cluster_access())) as client:
            return ensure_alias(client, target.namespace, target.pods, target.source, target.alias, port=target.port)
