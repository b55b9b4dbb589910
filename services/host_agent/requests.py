"""A HostOperation as the agent sees it, and the bindings it re-checks before claiming it. Pure.

Order of the checks (the first that fails decides): the operation is this node's (node UID),
its spec.requestID is carried by no operation that came before it (else DuplicateRequestID:
never run), its spec is valid (the API's own rules, checked again), it is for this boot (else
Stale: never run), the disruption is acknowledged, and a plan-bound action names the plan this
host publishes now (else PlanChanged). Action-specific rules (consent, advertised choices, the
network Secret) are the action's own `check`.

A request ID is unique among the HostOperations of the agent's namespace, whichever node they
are bound to. No admission rule can see other objects, so every node's agent decides it, from
the same list, alike: the operation that keeps a request ID is the one an agent already claimed
(it has a status that is not this refusal: a claim is never taken back), else the earliest by
creationTimestamp, then by name (creationTimestamp counts whole seconds).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from api.hostoperations import PLAN_BOUND_ACTIONS, TERMINAL_PHASES, HostOperationReason, HostOperationSpec, HostPhase
from api.validation import SpecError, parse_spec
from services.host_agent.journal import Outcome


@dataclass(frozen=True)
class HostOperation:
    namespace: str
    name: str
    uid: str
    generation: int
    created: str
    """metadata.creationTimestamp as the API server writes it (RFC 3339, whole seconds, UTC), so
    the text orders as the time does."""
    annotations: dict[str, str]
    raw_spec: dict[str, Any]
    status: dict[str, Any]
    spec: HostOperationSpec | None
    spec_error: SpecError | None

    @classmethod
    def from_object(cls, obj: dict[str, Any]) -> HostOperation:
        metadata = obj.get("metadata") or {}
        raw_spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        spec: HostOperationSpec | None = None
        error: SpecError | None = None
        try:
            parsed = parse_spec("HostOperation", raw_spec)
            assert isinstance(parsed, HostOperationSpec)
            spec = parsed
        except SpecError as problem:
            error = problem
        status = obj.get("status")
        return cls(
            namespace=str(metadata.get("namespace") or ""),
            name=str(metadata.get("name") or ""),
            uid=str(metadata.get("uid") or ""),
            generation=int(metadata.get("generation") or 1),
            created=str(metadata.get("creationTimestamp") or ""),
            annotations=dict(metadata.get("annotations") or {}),
            raw_spec=dict(raw_spec or {}),
            status=dict(status) if isinstance(status, dict) else {},
            spec=spec,
            spec_error=error,
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def action(self) -> str:
        return str(self.raw_spec.get("action") or "")

    @property
    def node_uid(self) -> str:
        return str(self.raw_spec.get("nodeUID") or "")

    @property
    def request_id(self) -> str:
        return str(self.raw_spec.get("requestID") or "")

    @property
    def phase(self) -> str | None:
        phase = self.status.get("phase")
        return phase if isinstance(phase, str) else None

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def claimed(self) -> bool:
        """An agent has written its status, other than refusing it as a duplicate."""
        return self.phase is not None and self.status.get("reason") != HostOperationReason.DUPLICATE_REQUEST_ID


def request_id_holders(operations: Iterable[HostOperation]) -> dict[str, HostOperation]:
    """The operation that keeps each request ID: claimed first, then the earliest created, then
    by name. `operations`: every HostOperation of the namespace, of every node. Pure."""
    holders: dict[str, HostOperation] = {}
    for operation in sorted(operations, key=lambda op: (not op.claimed, op.created, op.name)):
        if operation.request_id:
            holders.setdefault(operation.request_id, operation)
    return holders


def duplicate_problem(operation: HostOperation, holders: Mapping[str, HostOperation]) -> Outcome | None:
    """Why `operation` must be refused for its request ID, or None. Pure."""
    holder = holders.get(operation.request_id)
    if holder is None or holder.key == operation.key:
        return None
    return failed(
        HostOperationReason.DUPLICATE_REQUEST_ID,
        f"spec.requestID {operation.request_id} is already carried by HostOperation {holder.key}, which came first: "
        "a request ID names one request, so this one is never run; make a new request with a request ID of its own",
    )


def failed(reason: HostOperationReason, message: str) -> Outcome:
    return Outcome(phase=HostPhase.FAILED, reason=reason.value, message=message)


def binding_problem(operation: HostOperation, *, boot_id: str, plans: dict[str, str]) -> Outcome | None:
    """Why this node's agent must refuse `operation` now, or None. `plans`: the planId this host
    publishes per plan-bound action. Pure."""
    if operation.spec_error is not None or operation.spec is None:
        error = operation.spec_error or SpecError("spec", "must be an object")
        return failed(HostOperationReason.REJECTED, f"{error.field}: {error.rule}")
    spec = operation.spec
    if spec.boot_id != boot_id:
        return failed(
            HostOperationReason.STALE,
            f"spec.bootID {spec.boot_id} is not this node's boot {boot_id}: the request was made for another boot and is never run",
        )
    if not spec.acknowledge_disruption:
        return failed(HostOperationReason.REJECTED, "spec.acknowledgeDisruption: must be true")
    if spec.action in PLAN_BOUND_ACTIONS:
        current = plans.get(spec.action)
        if current is None:
            return failed(
                HostOperationReason.NOT_SUPPORTED, f"spec.action: this host publishes no plan for {spec.action}"
            )
        if spec.plan_id != current:
            return failed(
                HostOperationReason.PLAN_CHANGED,
                f"spec.planId {spec.plan_id} is not the host's current {spec.action} plan {current}: make a new request against it",
            )
    return None
