"""One local activation served by a direct runtime (FreeToken or realtime vLLM-Omni): what is
declared and what its status says.

Order: runtime resolution (catalog, spec rules) -> modules and host-operation deferral ->
placement on a node -> the runtime's objects -> its lifecycle (rollout, health, catalog).
Memory estimates are reported, never enforced, for these runtimes: the contract makes them
advisory for realtime, and FreeToken exists to serve models larger than their GPU; the Pod's
RAM request (systemMemoryMi) is the explicit budget and node capacity is checked where the
node is known. Invariant 6: whenever the new spec is refused or waits, the runtime that runs
stays declared as observed, with its catalog entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from api.model_runtimes import RUNTIME_STATUS_FIELD
from api.validation import SpecError
from api.vocabulary import Phase
from catalogs import Catalogs
from planning.conditions import status_update
from planning.hardware.capacity import AcceleratorCapacity
from planning.hardware.memory import HostMemory
from planning.intent import Parsed
from planning.models.direct import (
    ClaimBinding,
    DirectRuntime,
    DirectRuntimeKind,
    catalog_entry,
    kept_runtime,
    runtime_name,
    runtime_state,
    service_object,
)
from planning.models.freetoken import FreeTokenImageNotSet, FreeTokenPlan, Unplaceable, plan_freetoken
from planning.models.realtime import ImmutableField, RealtimeImageNotSet, RealtimePlan, plan_realtime
from planning.models.resolve import ResolvedLocalModel, resolve_local
from planning.objects import StatusUpdate
from planning.reasons import Reason
from planning.settings import PlanSettings
from planning.snapshot import Snapshot

REFUSAL_REASONS: dict[type[SpecError], Reason] = {
    FreeTokenImageNotSet: Reason.RUNTIME_IMAGE_NOT_SET,
    RealtimeImageNotSet: Reason.RUNTIME_IMAGE_NOT_SET,
    ImmutableField: Reason.IMMUTABLE_FIELD,
}


@dataclass(frozen=True)
class DirectOutcome:
    runtime: DirectRuntime | None
    catalog_entries: tuple[dict[str, Any], ...]
    status: StatusUpdate


def direct_kind(parsed: Parsed[Any], catalogs: Catalogs) -> DirectRuntimeKind | None:
    """The direct runtime a local activation asks for, or None for a KubeAI engine. Pure."""
    local = parsed.valid_spec.local
    if local.realtime is not None:
        return DirectRuntimeKind.REALTIME
    engine = catalogs.engines.get(local.engine)
    return DirectRuntimeKind.FREETOKEN if engine is not None and not engine.uses_kubeai else None


def kept_direct(
    snapshot: Snapshot, namespace: str, activation: str, catalogs: Catalogs, settings: PlanSettings
) -> DirectRuntime | None:
    """The direct runtime of `activation` as it runs, whichever kind it is (the spec may be
    unreadable); None when none runs. Pure."""
    for kind, port in (
        (DirectRuntimeKind.REALTIME, catalogs.runtimes.realtime.port),
        (DirectRuntimeKind.FREETOKEN, catalogs.runtimes.freetoken.port),
    ):
        service = service_object(kind, activation, namespace, port=port, field_manager=settings.field_manager)
        kept = kept_runtime(snapshot, kind, namespace, activation, service)
        if kept is not None:
            return kept
    return None


def plan_direct(
    *,
    kind: DirectRuntimeKind,
    parsed: Parsed[Any],
    waiting: tuple[Phase, Reason, str] | None,
    snapshot: Snapshot,
    capacity: tuple[AcceleratorCapacity, ...],
    host: HostMemory,
    catalogs: Catalogs,
    settings: PlanSettings,
    published: frozenset[str],
    applied_entries: tuple[dict[str, Any], ...],
    now: datetime,
    claim: ClaimBinding | None = None,
) -> DirectOutcome:
    """`waiting`: why the activation waits on modules or a host operation (plan.py `_waiting`),
    decided before placement. `applied_entries`: its catalog entry as the cluster holds it.
    `claim`: the shared GPU claim a realtime runtime binds (AMD dra-shared). Pure."""
    local = parsed.valid_spec.local
    namespace = parsed.valid_spec.target_namespace
    port = catalogs.runtimes.realtime.port if kind is DirectRuntimeKind.REALTIME else catalogs.runtimes.freetoken.port
    service = service_object(kind, parsed.name, namespace, port=port, field_manager=settings.field_manager)
    kept = kept_runtime(snapshot, kind, namespace, parsed.name, service)
    kept_entries = applied_entries if kept is not None else ()

    def hold(phase: Phase, reason: Reason, message: str, fields: dict[str, Any] | None = None) -> DirectOutcome:
        return DirectOutcome(
            kept,
            kept_entries,
            status_update(parsed, phase=phase, reason=reason, message=message, now=now, extra=fields),
        )

    try:
        resolved = resolve_local(local, catalogs, host=host)
        fields = _fields(resolved, kind, namespace, parsed.name)
        if waiting is not None and (kept is None or waiting[1] is not Reason.DEFERRED_BY_HOST_OPERATION):
            return hold(*waiting, fields)
        planned: RealtimePlan | FreeTokenPlan | Unplaceable
        if kind is DirectRuntimeKind.REALTIME:
            planned = plan_realtime(
                activation=parsed.name,
                namespace=namespace,
                local=local,
                resolved=resolved,
                snapshot=snapshot,
                catalogs=catalogs,
                field_manager=settings.field_manager,
                claim=claim,
            )
        else:
            planned = plan_freetoken(
                activation=parsed.name,
                namespace=namespace,
                local=local,
                resolved=resolved,
                capacity=capacity,
                catalogs=catalogs,
                field_manager=settings.field_manager,
            )
    except SpecError as error:
        return hold(Phase.FAILED, REFUSAL_REASONS.get(type(error), Reason.INVALID_SPEC), str(error))
    if isinstance(planned, Unplaceable):
        phase = Phase.WAITING_FOR_GPU if planned.reason is Reason.WAITING_FOR_GPU else Phase.PENDING
        return hold(phase, planned.reason, planned.message, fields)
    if waiting is not None:
        # A clear-model-cache operation: the runtime that exists is left exactly as it is.
        return hold(*waiting, fields)
    fields |= {"memoryRequiredMi": planned.system_memory_mi}
    if isinstance(planned, RealtimePlan):
        fields |= {"realtimeProfile": planned.profile.name, "gpuCount": planned.gpu_count}
    else:
        fields |= {
            "gpuCount": planned.gpu_count,
            "memoryStrategy": planned.memory_strategy,
            "vramRequiredMi": planned.vram_budget_mi,
        }
    state = runtime_state(
        runtime=planned.runtime, snapshot=snapshot, published=published, needs_health=kind is DirectRuntimeKind.REALTIME
    )
    entries = (
        (catalog_entry(activation=parsed.name, namespace=namespace, port=port, url=resolved.url),)
        if state.serving
        else ()
    )
    status = status_update(parsed, phase=state.phase, reason=state.reason, message=state.message, now=now, extra=fields)
    return DirectOutcome(planned.runtime, entries, status)


def _fields(resolved: ResolvedLocalModel, kind: DirectRuntimeKind, namespace: str, activation: str) -> dict[str, Any]:
    fields = resolved.status_fields(model_ref=f"{namespace}/{runtime_name(activation)}", catalog_id=activation)
    return fields | {RUNTIME_STATUS_FIELD: kind.label, "resolvedResourceProfile": None}
