"""The status of every runtime custom resource and of Appliance/local.

Only values that change with the world are written: timestamps move on a transition only,
so a converged run plans the very status the cluster already holds.

Invariant: every status is bounded, whatever the number of objects. Kubernetes refuses an
object over about 1.5 MiB, and a status that lists every activation outgrows it (3,000
ModelActivations made Appliance/local.status 1.27 MB). So a list that grows with the cluster
is written as its count and its first entries in a fixed order (requesters by name; models and
instances needing attention first, then by name), a message names at most a few objects
(planning.reasons.listed), and every string is cut at MESSAGE_LIMIT characters. What is listed
depends on the planned world only, never on the status written before, so a bounded list
cannot oscillate and a converged run still writes nothing (invariants 2 and 4).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from api.meta import API_VERSION, Condition
from api.status import (
    ActivationStatus,
    AppliancePhase,
    ApplianceStatus,
    HardwareOperatorStatus,
    ListSummary,
    ModulePhase,
    ModuleStatus,
)
from api.vocabulary import Phase, Reason
from planning.catalog_overrides import CatalogProblem, catalog_message
from planning.conditions import kstatus_conditions, rfc3339
from planning.deadlines import Deadline
from planning.frozen import freeze, thaw
from planning.instances.plan import InstanceSummary
from planning.intent import Intent, Parsed
from planning.modules import ActivationOutcome, ModuleOutcome, ModulePlan
from planning.names import fit
from planning.objects import StatusUpdate
from planning.operator import OPERATOR_FIELD, OperatorReport
from planning.reasons import listed
from planning.requirements import REQUIRED_MODULES_FIELD, Requirement

_FAILED_PHASES = frozenset({Phase.DEGRADED, Phase.FAILED})

APPLIANCE_STATUS_BUDGET = 256 * 1024
"""Appliance/local.status stays within this many bytes of JSON at 5,000 ModelActivations and
200 AppInstances with names of the full 253 characters (tests/planning/test_status_bounds.py;
`venv/bin/python -m benchmarks.status_size` prints the figures). The lists below are sized so:
modules (catalogued, at most ~16) x LISTED_REQUESTERS names of up to 269 characters, plus
LISTED_MODELS and LISTED_INSTANCES summaries and the hardware lists
(planning.hardware.operators.LISTED_NODES, LISTED_DEVICES)."""
RUNTIME_STATUS_BUDGET = 32 * 1024
"""The status of one ModuleActivation, ModelActivation or AppInstance stays within this many
bytes of JSON: its fields are fixed, its lists catalog-bounded, its strings cut at MESSAGE_LIMIT."""
MESSAGE_LIMIT = 1024
"""Characters of any string in a status (messages, condition messages, recorded failures); a
longer one is cut and says how many characters were left out."""
SUMMARY_MESSAGE_LIMIT = 256
"""Characters of a message repeated in an Appliance/local summary (models, instances)."""
LISTED_REQUESTERS = 10
"""Appliance.status.modules.<module>.requestedBy names at most this many requesters, the first
by name; requestedByCount counts them all."""
LISTED_MODELS = 100
"""Appliance.status.models lists at most this many ModelActivations: Failed and Degraded first,
then the others not Ready, then Ready ones, each by name; modelsSummary counts them all."""
LISTED_INSTANCES = 50
"""Appliance.status.instances lists at most this many AppInstances, in the order of
LISTED_MODELS; instancesSummary counts them all."""
_STATUS_KEY_LIMIT = 253
"""A key of Appliance.status.instances (an instance's name) fits the longest object name."""


def cut(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text`, or its first characters and `… (N more characters)`, within `limit`. Pure."""
    if len(text) <= limit:
        return text
    keep = limit - len(f"… ({len(text)} more characters)")
    return f"{text[:keep]}… ({len(text) - keep} more characters)"


def _cut_strings(value: Any) -> Any:
    if isinstance(value, str):
        return cut(value)
    if isinstance(value, Mapping):
        return {key: _cut_strings(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cut_strings(item) for item in value]
    return value


def bounded(statuses: Iterable[StatusUpdate]) -> tuple[StatusUpdate, ...]:
    """`statuses` with every string cut at MESSAGE_LIMIT (the last bound, whoever built them). Pure."""
    return tuple(replace(update, status=freeze(_cut_strings(update.status))) for update in statuses)


def _attention(phase: object) -> int:
    """Sort rank of a phase in a bounded summary: failing first, then waiting, then Ready."""
    return 0 if phase in _FAILED_PHASES else 2 if phase == Phase.READY else 1


def _summary(phases: Iterable[object], listed: int) -> ListSummary:
    counted = Counter(str(phase) for phase in phases)
    return ListSummary(total=sum(counted.values()), listed=listed, phases=dict(sorted(counted.items())))


def _update(obj: Parsed[Any], status: Mapping[str, Any]) -> StatusUpdate:
    return StatusUpdate(
        api_version=API_VERSION,
        kind=obj.obj.kind,
        namespace=obj.obj.meta.namespace or "",
        name=obj.name,
        status=freeze(status),
    )


def _activation_status(
    parsed: Parsed[Any], *, phase: Phase, reason: Reason, message: str, now: datetime, **extra: Any
) -> StatusUpdate:
    generation = parsed.obj.meta.generation
    status = ActivationStatus(
        phase=phase,
        reason=str(reason),
        message=message,
        observed_generation=generation,
        conditions=[
            Condition.model_validate(condition)
            for condition in kstatus_conditions(
                previous_status=parsed.obj.status,
                phase=phase,
                reason=reason,
                message=message,
                generation=generation,
                now=now,
            )
        ],
        **extra,
    )
    return _update(parsed, status.to_wire())


def with_required_modules(
    statuses: Iterable[StatusUpdate], *, requirements: Iterable[Requirement]
) -> tuple[StatusUpdate, ...]:
    """`statuses` where each requester (ModelActivation, AppInstance) records the modules it
    requests in status.requiredModules: the record an invalid edit keeps requesting from
    (invariant 6, planning.requirements). Bounded by the module catalog. Pure."""
    requested = {r.requester: sorted(r.modules) for r in requirements if r.modules}
    updated = []
    for update in statuses:
        modules = requested.get(f"{update.kind}/{update.name}")
        if modules is not None:
            update = replace(update, status=freeze({**thaw(update.status), REQUIRED_MODULES_FIELD: modules}))
        updated.append(update)
    return tuple(updated)


def module_activation_statuses(modules: ModulePlan, now: datetime) -> tuple[StatusUpdate, ...]:
    return tuple(_module_activation_status(outcome, now) for outcome in modules.activations)


def _module_activation_status(outcome: ActivationOutcome, now: datetime) -> StatusUpdate:
    extra: dict[str, Any] = {}
    if outcome.module is not None:
        extra["module"] = outcome.module
    if outcome.kustomization_name is not None:
        extra["kustomization"] = outcome.kustomization_name
    return _activation_status(
        outcome.activation,
        phase=outcome.phase,
        reason=outcome.reason,
        message=outcome.message,
        now=now,
        **extra,
    )


_MODULE_PHASES: Mapping[Phase, ModulePhase] = {
    Phase.READY: "Ready",
    Phase.RECONCILING: "Reconciling",
    Phase.SUSPENDED: "Suspended",
    Phase.WAITING_FOR_MODULES: "WaitingForModules",
    Phase.WAITING_FOR_CRD: "WaitingForCRD",
    Phase.DEGRADED: "Degraded",
    Phase.DISABLED: "Disabled",
    Phase.FAILED: "Failed",
}
"""The phases a module can be in, as Appliance.status.modules.*.phase spells them."""
_APPLIANCE_PHASES: Mapping[Phase, AppliancePhase] = {
    Phase.READY: "Ready",
    Phase.RECONCILING: "Reconciling",
    Phase.DEGRADED: "Degraded",
}
"""The phases of Appliance/local."""


def _module_status(outcome: ModuleOutcome) -> ModuleStatus:
    return ModuleStatus(
        phase=_MODULE_PHASES[outcome.phase],
        kustomization=outcome.kustomization_name,
        auto_enabled=True if outcome.auto_enabled else None,
        requested_by=list(outcome.requested_by[:LISTED_REQUESTERS]) or None,
        requested_by_count=len(outcome.requested_by) or None,
        message=outcome.message,
    )


def _instances(summaries: Iterable[InstanceSummary]) -> tuple[dict[str, dict[str, dict[str, Any]]], ListSummary]:
    """Appliance.status.instances (at most LISTED_INSTANCES, attention first) and its counts. Pure."""
    everyone = sorted(summaries, key=lambda i: (_attention(i.status.get("phase")), i.application, i.name))
    grouped: dict[str, dict[str, dict[str, Any]]] = {}
    for summary in everyone[:LISTED_INSTANCES]:
        entry = thaw(summary.status)
        if isinstance(entry.get("message"), str):
            entry["message"] = cut(entry["message"], SUMMARY_MESSAGE_LIMIT)
        grouped.setdefault(summary.application, {})[fit(summary.name, _STATUS_KEY_LIMIT)] = entry
    listing = {app: dict(sorted(entries.items())) for app, entries in sorted(grouped.items())}
    return listing, _summary((i.status.get("phase") for i in everyone), min(len(everyone), LISTED_INSTANCES))


MODEL_SUMMARY_FIELDS = (
    "phase",
    "modelRef",
    "catalogId",
    "computeTarget",
    "engine",
    "resolvedResourceProfile",
    "vramRequiredMi",
    "message",
)
"""What Appliance.status.models shows of each ModelActivation's own status."""


def _models(updates: Iterable[StatusUpdate]) -> tuple[dict[str, dict[str, Any]], ListSummary]:
    """Appliance.status.models (at most LISTED_MODELS, attention first) and its counts. Pure."""
    everyone = sorted(updates, key=lambda u: (_attention(u.status.get("phase")), u.name))
    listing = {}
    for update in sorted(everyone[:LISTED_MODELS], key=lambda u: u.name):
        entry = {key: thaw(update.status[key]) for key in MODEL_SUMMARY_FIELDS if key in update.status}
        if isinstance(entry.get("message"), str):
            entry["message"] = cut(entry["message"], SUMMARY_MESSAGE_LIMIT)
        listing[update.name] = entry
    return listing, _summary((u.status.get("phase") for u in everyone), len(listing))


def appliance_status(
    intent: Intent,
    modules: ModulePlan,
    now: datetime,
    *,
    hardware_operators: Mapping[str, HardwareOperatorStatus],
    instances: Iterable[InstanceSummary] = (),
    models: Iterable[StatusUpdate] = (),
    catalog_problems: Iterable[CatalogProblem] = (),
    operator: OperatorReport | None = None,
    next_reconcile: Deadline | None = None,
) -> StatusUpdate | None:
    """Appliance/local.status: module and instance maps, hardware, aggregate phase, Ready condition,
    and, when the program runs under a PKO Stack, what the operator did (planning.operator);
    `next_reconcile`, the plan's next deadline (planning.deadlines), as nextReconcileAt/Reason.

    Ready needs every enabled module Ready and every enabled instance Ready; a failing module
    makes the appliance Degraded, and so does a catalog ConfigMap that cannot be applied
    (CatalogInvalid, planning.catalog_overrides).
    """
    appliance = intent.appliance
    if appliance is None:
        return None
    summaries = tuple(instances)
    rejected = tuple(catalog_problems)
    active = [m for m in modules.modules if m.phase != Phase.DISABLED]
    failing = sorted(m.name for m in active if m.phase in _FAILED_PHASES)
    waiting = sorted(m.name for m in active if m.phase != Phase.READY and m.phase not in _FAILED_PHASES)
    unready_instances = sorted(f"{i.application}/{i.name}" for i in summaries if i.status.get("phase") != Phase.READY)
    if appliance.error is not None:
        phase, reason, message = Phase.DEGRADED, Reason.INVALID_SPEC, str(appliance.error)
    elif rejected:
        phase, reason, message = Phase.DEGRADED, Reason.CATALOG_INVALID, catalog_message(rejected)
    elif failing:
        phase, reason = Phase.DEGRADED, Reason.MODULES_DEGRADED
        message = f"Module {', '.join(failing)} is failing."
    elif waiting:
        phase, reason = Phase.RECONCILING, Reason.WAITING_FOR_MODULES
        message = f"Waiting for {', '.join(waiting)} to become ready."
    elif unready_instances:
        phase, reason = Phase.RECONCILING, Reason.WAITING_FOR_INSTANCES
        message = f"Waiting for {listed(unready_instances)} to become ready."
    else:
        phase, reason = Phase.READY, Reason.READY
        message = f"All {len(active)} enabled modules are ready."
    instance_listing, instances_summary = _instances(summaries)
    model_listing, models_summary = _models(models)
    generation = appliance.obj.meta.generation
    conditions = kstatus_conditions(
        previous_status=appliance.obj.status,
        phase=phase,
        reason=reason,
        message=message,
        generation=generation,
        now=now,
    )
    if operator is not None:
        conditions.append({**operator.stalled, "observedGeneration": generation})
    status = ApplianceStatus(
        phase=_APPLIANCE_PHASES[phase],
        observed_generation=generation,
        modules={m.name: _module_status(m) for m in modules.modules},
        hardware_operators=dict(hardware_operators),
        instances=instance_listing,
        instances_summary=instances_summary,
        models=model_listing,
        models_summary=models_summary,
        conditions=[Condition.model_validate(condition) for condition in conditions],
        next_reconcile_at=rfc3339(next_reconcile.at) if next_reconcile is not None else None,
        next_reconcile_reason=next_reconcile.reason if next_reconcile is not None else None,
    )
    wire = status.to_wire()
    if operator is not None:
        wire[OPERATOR_FIELD] = thaw(operator.operator)
    return _update(appliance, wire)
