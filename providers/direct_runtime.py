"""Applying one direct runtime (FreeToken, realtime vLLM-Omni): its own objects, as a dynamic resource.

The inputs are the runtime (a DirectRuntimeKind value), its namespace, its objects (whole
bodies of a ConfigMap v1, a Service v1 and a Deployment apps/v1, in apply order) and the
field manager they are applied under. The outputs are the inputs, `applied` and `problem`.

Rules:
- `create` and `update` server-side apply each object in order under `fieldManager`, with
  `force` only when the body carries `pulumi.com/patchForce: "true"` (planning/objects.py
  OWNED_FORCE_ANNOTATION), as pulumi-kubernetes does: without it a field another manager owns
  is a conflict, not taken over. Applying an object that exists adopts it; applying it
  unchanged changes nothing (a converged run writes nothing new);
- `update` then deletes what the resource applied before and the new inputs no longer hold
  (an absent object is already deleted). `applied` lists what this resource applied and has
  not removed, in apply order; with the inputs' own objects it is everything the resource may
  have left in the cluster, so a removal cut short by a failure is made on a later run;
- the first failure stops the operation and becomes the `problem` output, never an exception
  (invariant 5; providers/outcomes.py). Its reason carries the runtime's prefix
  (`Realtime...`, `FreeToken...`; `runtime_problem`), its message names the object and keeps
  the server's Status:
    403                                     -> <Runtime>PermissionDenied, Temporary
    400, 422 (the body itself is refused)   -> <Runtime>ApiRejected, Permanent
    every other 4xx (404 namespace, 409)    -> <Runtime>ApiRejected, Temporary
    5xx, 429, no answer at all              -> <Runtime>ApiUnavailable, Temporary: the status
                                               writer shows the activation Starting, not Degraded
  A Temporary problem makes `diff` ask for the operation again on the next run, so an outage
  clears by itself once the API server answers;
- `diff` reports a change when the runtime, the objects or the field manager differ, or when a
  Temporary problem asks for a retry; another namespace replaces the resource, deleting the
  old objects first;
- `read` GETs every object the resource may own and keeps, in `objects` and `applied`, those
  that exist, so a refresh after someone deleted an object makes the next run apply it again;
  when none exists the resource is gone (empty id). A read the server refuses keeps the state
  and carries the problem. Content drift is not read back: the server's defaults would make
  every stored body differ (invariant 11); applying again is what repairs it;
- `delete` removes the Deployment first, then the Service, then the ConfigMap (the Pods stop
  before what they use goes); an absent object is success.

Delete failures raise. This follows providers/profile_store.py, the one other provider whose
resource stands for something lasting in the cluster: it raises when its entry may still be
there. Pod recovery and stale removal do nothing on delete because their resources are events.
A delete has no outputs to carry a problem, and returning normally would drop the resource from
the state while its Deployment keeps running, unowned and never removed. Raising
DirectRuntimeDeleteError (chained from the KubeError, which keeps the server's Status) leaves the
resource in the state, and the next run deletes it. The deliberate risk: a removal the API
server refuses fails that run's update.

Cluster access comes from the stack's configuration, never from the inputs: every method
builds its own client from `self.cluster_access()` (providers/cluster_access.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from api.vocabulary import ProblemReason
from planning.frozen import thaw
from planning.models.direct import (
    FIELD_MANAGER_INPUT,
    NAMESPACE_INPUT,
    OBJECTS_INPUT,
    RUNTIME_INPUT,
    DirectRuntimeInputs,
    DirectRuntimeKind,
)
from planning.objects import OWNED_FORCE_ANNOTATION
from providers.cluster_access import ClusterResourceProvider, without_legacy_access
from providers.kinds import CONFIG_MAP, DEPLOYMENT, SERVICE
from providers.kube import KubeClient, KubeConnectionError, KubeError, NotFound, ResourceKind, open_client
from providers.outcomes import PERMANENT_CODES, Persistence, Problem, retry_requested, with_problem
from providers.pulumi_values import is_unknown, restore_integers

"""Not in providers/kinds.py yet: the program reads no Service, only direct runtimes write them."""
RUNTIME_KINDS: Final = {kind.kind: kind for kind in (CONFIG_MAP, SERVICE, DEPLOYMENT)}
"""The kinds a direct runtime is made of, by kind name (an `applied` identity starts with it)."""
DELETE_ORDER: Final = (DEPLOYMENT.kind, SERVICE.kind, CONFIG_MAP.kind)
"""The workload goes first, so its Pods never run without their Service or configuration."""

APPLIED_OUTPUT: Final = "applied"
CHANGING_INPUTS: Final = (RUNTIME_INPUT, OBJECTS_INPUT, FIELD_MANAGER_INPUT)
"""Inputs whose change is an update in place; a change of NAMESPACE_INPUT replaces."""

FORCED: Final = "true"
"""The value of OWNED_FORCE_ANNOTATION that asks for a forced apply."""
UNAVAILABLE_CODES: Final = frozenset({429})
"""Besides every 5xx: answers that say "not now" rather than "not this"."""
_DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class DirectRuntimeDeleteError(Exception):
    """The API server refused or did not answer a deletion; the resource stays in the state.

    Chained from the KubeError, which keeps the server's Status.
    """


@dataclass(frozen=True)
class RuntimeReasons:
    """The three problems of one runtime's API failures."""

    denied: ProblemReason
    rejected: ProblemReason
    unavailable: ProblemReason


REASONS: Final = {
    DirectRuntimeKind.REALTIME: RuntimeReasons(
        denied=ProblemReason.REALTIME_PERMISSION_DENIED,
        rejected=ProblemReason.REALTIME_API_REJECTED,
        unavailable=ProblemReason.REALTIME_API_UNAVAILABLE,
    ),
    DirectRuntimeKind.FREETOKEN: RuntimeReasons(
        denied=ProblemReason.FREETOKEN_PERMISSION_DENIED,
        rejected=ProblemReason.FREETOKEN_API_REJECTED,
        unavailable=ProblemReason.FREETOKEN_API_UNAVAILABLE,
    ),
}


def runtime_problem(runtime: DirectRuntimeKind, error: KubeError, *, action: str, identity: str) -> Problem:
    """The problem of `action` ("apply", "delete", "read") on the object `identity` failing with `error`. Pure.

    The message names the operation and the object, then the server's Status as it said it.
    """
    reasons = REASONS[runtime]
    message = f"{action} {identity}: {error.detail}"
    if isinstance(error, KubeConnectionError) or error.code >= 500 or error.code in UNAVAILABLE_CODES:
        return Problem(reasons.unavailable, message)
    if error.code == 403:
        return Problem(reasons.denied, message)
    if error.code in PERMANENT_CODES:
        return Problem(reasons.rejected, message, Persistence.PERMANENT)
    return Problem(reasons.rejected, message)


@dataclass(frozen=True)
class ObjectRef:
    """Where one object of a runtime lives; `identity` is `<Kind>/<namespace>/<name>`."""

    kind: ResourceKind
    namespace: str
    name: str

    @property
    def identity(self) -> str:
        return f"{self.kind.kind}/{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, identity: str) -> ObjectRef:
        """The object an `applied` identity names. Pure."""
        kind, namespace, name = identity.split("/", 2)
        return cls(kind=RUNTIME_KINDS[kind], namespace=namespace, name=name)


@dataclass(frozen=True)
class RuntimeObject:
    """One body to apply, and where it goes."""

    ref: ObjectRef
    body: Mapping[str, Any]

    @property
    def forced(self) -> bool:
        """Whether the apply takes over fields another manager owns (OWNED_FORCE_ANNOTATION)."""
        annotations = self.body["metadata"].get("annotations") or {}
        return annotations.get(OWNED_FORCE_ANNOTATION) == FORCED


@dataclass(frozen=True)
class RuntimeInputs:
    """The inputs of one DirectRuntime resource, as `check` normalised them."""

    runtime: DirectRuntimeKind
    namespace: str
    objects: tuple[RuntimeObject, ...]
    field_manager: str

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> RuntimeInputs:
        """The runtime the plan declared (DirectRuntimeInputs.to_inputs), each object placed."""
        planned = DirectRuntimeInputs.from_inputs(
            {**props, OBJECTS_INPUT: restore_integers(props.get(OBJECTS_INPUT) or [])}
        )
        namespace = planned.namespace
        objects = tuple(
            RuntimeObject(ref=_ref_of(body, namespace), body=_placed(thaw(body), namespace)) for body in planned.objects
        )
        return cls(runtime=planned.runtime, namespace=namespace, objects=objects, field_manager=planned.field_manager)

    @property
    def identities(self) -> tuple[str, ...]:
        return tuple(obj.ref.identity for obj in self.objects)

    @property
    def resource_id(self) -> str:
        """`<runtime label>/<namespace>/<name>`: the Deployment's name, else the last object's."""
        names = [obj.ref.name for obj in self.objects if obj.ref.kind is DEPLOYMENT] or [
            obj.ref.name for obj in self.objects
        ]
        return f"{self.runtime.label}/{self.namespace}/{names[-1] if names else ''}"


def _ref_of(body: Mapping[str, Any], namespace: str) -> ObjectRef:
    metadata = body["metadata"]
    return ObjectRef(
        kind=RUNTIME_KINDS[body["kind"]], namespace=metadata.get("namespace") or namespace, name=metadata["name"]
    )


def _placed(body: Mapping[str, Any], namespace: str | None) -> dict[str, Any]:
    """`body` with its namespace set (the runtime's, when it names none). Pure."""
    metadata = body["metadata"]
    return {**body, "metadata": {**metadata, "namespace": metadata.get("namespace") or namespace}}


def owned_identities(props: Mapping[str, Any]) -> list[str]:
    """What a resource with outputs `props` may have left in the cluster: `applied`, then the
    objects' identities, each once. Pure."""
    planned = RuntimeInputs.from_props(props).identities
    applied = [identity for identity in props.get(APPLIED_OUTPUT) or () if isinstance(identity, str)]
    return list(dict.fromkeys([*applied, *planned]))


def in_delete_order(identities: Iterable[str]) -> list[str]:
    """`identities` Deployment first, then Service, then ConfigMap; stable within a kind. Pure."""
    return sorted(identities, key=lambda identity: DELETE_ORDER.index(identity.split("/", 1)[0]))


@dataclass(frozen=True)
class Stopped:
    """The object an operation stopped at, and the server's answer (or the lack of one)."""

    action: str
    identity: str
    error: KubeError

    def problem(self, runtime: DirectRuntimeKind) -> Problem:
        return runtime_problem(runtime, self.error, action=self.action, identity=self.identity)


def apply_objects(client: KubeClient, planned: RuntimeInputs) -> tuple[list[str], Stopped | None]:
    """Apply every object in order; the identities applied, and where the first failure stopped the rest."""
    applied: list[str] = []
    for obj in planned.objects:
        try:
            client.apply(obj.ref.kind, obj.body, field_manager=planned.field_manager, force=obj.forced)
        except KubeError as error:
            return applied, Stopped("apply", obj.ref.identity, error)
        applied.append(obj.ref.identity)
    return applied, None


def remove_objects(client: KubeClient, identities: Iterable[str]) -> tuple[list[str], Stopped | None]:
    """Delete `identities` in DELETE_ORDER; the ones gone (absent counts), and where a failure stopped the rest."""
    removed: list[str] = []
    for identity in in_delete_order(identities):
        ref = ObjectRef.parse(identity)
        try:
            client.delete(ref.kind, ref.name, ref.namespace)
        except NotFound:
            pass
        except KubeError as error:
            return removed, Stopped("delete", identity, error)
        removed.append(identity)
    return removed, None


def existing_identities(client: KubeClient, identities: Iterable[str]) -> tuple[list[str], Stopped | None]:
    """The identities whose object exists now, in the given order; or where a read failed."""
    present: list[str] = []
    for identity in identities:
        ref = ObjectRef.parse(identity)
        try:
            found = client.get_or_none(ref.kind, ref.name, ref.namespace)
        except KubeError as error:
            return present, Stopped("read", identity, error)
        if found is not None:
            present.append(identity)
    return present, None


def _outputs(
    props: Mapping[str, Any], planned: RuntimeInputs, applied: Sequence[str], problem: Problem | None
) -> dict[str, Any]:
    outputs = {
        **without_legacy_access(props),
        OBJECTS_INPUT: [dict(obj.body) for obj in planned.objects],
        APPLIED_OUTPUT: list(applied),
    }
    return with_problem(outputs, problem)


class DirectRuntimeProvider(ClusterResourceProvider):
    """Applies the objects of one direct runtime; API failures become its `problem`."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = without_legacy_access(news)
        failures = _scalar_failures(inputs)
        objects = inputs.get(OBJECTS_INPUT)
        if is_unknown(objects):
            return CheckResult(inputs, failures)
        namespace = inputs.get(NAMESPACE_INPUT)
        valid_namespace = isinstance(namespace, str) and all(f.property != NAMESPACE_INPUT for f in failures)
        object_failures = _object_failures(objects, namespace if valid_namespace else None)
        failures += [CheckFailure(OBJECTS_INPUT, reason) for reason in object_failures]
        if failures or is_unknown(namespace):
            return CheckResult(inputs, failures)
        normalised = [_placed(body, namespace) for body in restore_integers(objects)]
        return CheckResult({**inputs, OBJECTS_INPUT: normalised}, [])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [NAMESPACE_INPUT] if olds.get(NAMESPACE_INPUT) != news.get(NAMESPACE_INPUT) else []
        changed = [p for p in CHANGING_INPUTS if olds.get(p) != news.get(p)]
        changes = bool(replaces or changed) or retry_requested(olds)
        return DiffResult(changes=changes, replaces=replaces, delete_before_replace=True)

    def create(self, props: dict[str, Any]) -> CreateResult:
        planned = RuntimeInputs.from_props(props)
        with open_client(self.cluster_access()) as client:
            applied, stopped = apply_objects(client, planned)
        problem = None if stopped is None else stopped.problem(planned.runtime)
        return CreateResult(id_=planned.resource_id, outs=_outputs(props, planned, applied, problem))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        planned = RuntimeInputs.from_props(news)
        dropped = [identity for identity in owned_identities(olds) if identity not in planned.identities]
        with open_client(self.cluster_access()) as client:
            applied, stopped = apply_objects(client, planned)
            removed, stopped = remove_objects(client, dropped) if stopped is None else ([], stopped)
        kept = [identity for identity in dropped if identity not in removed]
        problem = None if stopped is None else stopped.problem(planned.runtime)
        return UpdateResult(outs=_outputs(news, planned, [*applied, *kept], problem))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        planned = RuntimeInputs.from_props(props)
        with open_client(self.cluster_access()) as client:
            present, stopped = existing_identities(client, owned_identities(props))
        if stopped is not None:
            return ReadResult(
                id_=id_, outs=with_problem(without_legacy_access(props), stopped.problem(planned.runtime))
            )
        if not present:
            return ReadResult(id_="", outs={})
        objects = [dict(obj.body) for obj in planned.objects if obj.ref.identity in present]
        outputs = {**without_legacy_access(props), OBJECTS_INPUT: objects, APPLIED_OUTPUT: present}
        return ReadResult(id_=id_, outs=outputs)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        planned = RuntimeInputs.from_props(props)
        with open_client(self.cluster_access()) as client:
            _removed, stopped = remove_objects(client, owned_identities(props))
        if stopped is not None:
            raise DirectRuntimeDeleteError(stopped.problem(planned.runtime).message) from stopped.error


def _scalar_failures(inputs: Mapping[str, Any]) -> list[CheckFailure]:
    failures: list[CheckFailure] = []
    runtime = inputs.get(RUNTIME_INPUT)
    if not is_unknown(runtime) and runtime not in {kind.value for kind in DirectRuntimeKind}:
        allowed = ", ".join(kind.value for kind in DirectRuntimeKind)
        failures.append(CheckFailure(RUNTIME_INPUT, f"runtime must be one of {allowed}, not {runtime!r}"))
    namespace = inputs.get(NAMESPACE_INPUT)
    if not is_unknown(namespace) and not (
        isinstance(namespace, str) and len(namespace) <= 63 and _DNS_LABEL.match(namespace)
    ):
        failures.append(CheckFailure(NAMESPACE_INPUT, f"namespace {namespace!r} is not a DNS-1123 label"))
    manager = inputs.get(FIELD_MANAGER_INPUT)
    if not is_unknown(manager) and not (isinstance(manager, str) and manager):
        failures.append(CheckFailure(FIELD_MANAGER_INPUT, "fieldManager must be a non-empty string"))
    return failures


def _object_failures(objects: Any, namespace: str | None) -> list[str]:
    """Why `objects` is not a list of runtime bodies in `namespace`, one reason per fault. Pure."""
    if not isinstance(objects, list) or not objects:
        return ["objects must be a non-empty list of Kubernetes objects"]
    reasons: list[str] = []
    seen: set[tuple[str, str]] = set()
    for index, body in enumerate(objects):
        reason = _body_failure(body, namespace)
        if reason is not None:
            reasons.append(f"objects[{index}]: {reason}")
            continue
        key = (body["kind"], body["metadata"]["name"])
        if key in seen:
            reasons.append(f"objects[{index}]: {body['kind']} {body['metadata']['name']!r} is listed twice")
        seen.add(key)
    return reasons


def _body_failure(body: Any, namespace: str | None) -> str | None:
    if not isinstance(body, Mapping) or not isinstance(body.get("metadata"), Mapping):
        return "must be a Kubernetes object with metadata"
    kind = RUNTIME_KINDS.get(str(body.get("kind")))
    if kind is None or body.get("apiVersion") != kind.api_version:
        expected = ", ".join(f"{k.kind} {k.api_version}" for k in RUNTIME_KINDS.values())
        return f"{body.get('kind')} {body.get('apiVersion')} is not a kind of a direct runtime ({expected})"
    metadata = body["metadata"]
    if not isinstance(metadata.get("name"), str) or not metadata["name"]:
        return f"{kind.kind} has no metadata.name"
    placed = metadata.get("namespace")
    if placed is not None and namespace is not None and placed != namespace:
        return f"{kind.kind} {metadata['name']!r} is in namespace {placed!r}, not the runtime's {namespace!r}"
    return None
