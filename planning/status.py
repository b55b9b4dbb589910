"""The status of every runtime custom resource and of Appliance/local (seed 001 status contract).

Only values that change with the world are written: timestamps move on a transition only,
so a converged run plans the very status the cluster already holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from api.meta import API_VERSION
from api.status import ActivationStatus, ApplianceStatus, HardwareOperatorStatus, ModuleStatus
from planning.conditions import READY, condition
from planning.frozen import freeze, thaw
from planning.intent import Intent, Parsed
from planning.instances.plan import InstanceSummary
from planning.modules import ActivationOutcome, ModuleOutcome, ModulePlan
from planning.objects import StatusUpdate
from planning.reasons import Reason

_FAILED_PHASES = frozenset({"Degraded", "Failed"})


def _update(obj: Parsed[Any], status: Mapping[str, Any]) -> StatusUpdate:
    return StatusUpdate(
        api_version=API_VERSION,
        kind=obj.obj.kind,
        namespace=obj.obj.meta.namespace or "",
        name=obj.name,
        status=freeze(status),
    )


def _activation_status(
    parsed: Parsed[Any], *, phase: str, reason: Reason, message: str, now: datetime, **extra: Any
) -> StatusUpdate:
    status = ActivationStatus(
        phase=phase,
        reason=str(reason),
        message=message,
        observed_generation=parsed.obj.meta.generation,
        conditions=[
            condition(
                previous_status=parsed.obj.status,
                condition_type=READY,
                status=phase == READY,
                reason=str(reason),
                message=message,
                now=now,
            )
        ],
        **extra,
    )
    return _update(parsed, status.to_wire())


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


def _module_status(outcome: ModuleOutcome) -> ModuleStatus:
    return ModuleStatus(
        phase=outcome.phase,
        kustomization=outcome.kustomization_name,
        auto_enabled=True if outcome.auto_enabled else None,
        requested_by=list(outcome.requested_by) or None,
        message=outcome.message,
    )


def _instances(summaries: Iterable[InstanceSummary]) -> dict[str, dict[str, dict[str, Any]]]:
    grouped: dict[str, dict[str, dict[str, Any]]] = {}
    for summary in summaries:
        grouped.setdefault(summary.application, {})[summary.name] = thaw(summary.status)
    return {app: dict(sorted(entries.items())) for app, entries in sorted(grouped.items())}


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


def _models(updates: Iterable[StatusUpdate]) -> dict[str, dict[str, Any]]:
    return {
        update.name: {key: thaw(update.status[key]) for key in MODEL_SUMMARY_FIELDS if key in update.status}
        for update in sorted(updates, key=lambda u: u.name)
    }


def appliance_status(
    intent: Intent,
    modules: ModulePlan,
    now: datetime,
    *,
    hardware_operators: Mapping[str, HardwareOperatorStatus],
    instances: Iterable[InstanceSummary] = (),
    models: Iterable[StatusUpdate] = (),
) -> StatusUpdate | None:
    """Appliance/local.status: module and instance maps, hardware, aggregate phase, Ready condition.

    Ready needs every enabled module Ready and every enabled instance Ready; a failing module
    makes the appliance Degraded.
    """
    appliance = intent.appliance
    if appliance is None:
        return None
    summaries = tuple(instances)
    active = [m for m in modules.modules if m.phase != "Disabled"]
    failing = sorted(m.name for m in active if m.phase in _FAILED_PHASES)
    waiting = sorted(m.name for m in active if m.phase != READY and m.phase not in _FAILED_PHASES)
    unready_instances = sorted(f"{i.application}/{i.name}" for i in summaries if i.status.get("phase") != READY)
    if appliance.error is not None:
        phase, ready, reason, message = "Degraded", False, Reason.INVALID_SPEC, str(appliance.error)
    elif failing:
        phase, ready, reason = "Degraded", False, Reason.MODULES_DEGRADED
        message = f"Module {', '.join(failing)} is failing."
    elif waiting:
        phase, ready, reason = "Reconciling", False, Reason.WAITING_FOR_MODULES
        message = f"Waiting for {', '.join(waiting)} to become ready."
    elif unready_instances:
        phase, ready, reason = "Reconciling", False, Reason.WAITING_FOR_INSTANCES
        message = f"Waiting for {', '.join(unready_instances)} to become ready."
    else:
        phase, ready, reason = "Ready", True, Reason.READY
        message = f"All {len(active)} enabled modules are ready."
    status = ApplianceStatus(
        phase=phase,
        observed_generation=appliance.obj.meta.generation,
        modules={m.name: _module_status(m) for m in modules.modules},
        hardware_operators=dict(hardware_operators),
        instances=_instances(summaries),
        models=_models(models),
        conditions=[
            condition(
                previous_status=appliance.obj.status,
                condition_type=READY,
                status=ready,
                reason=str(reason),
                message=message,
                now=now,
            )
        ],
    )
    return _update(appliance, status.to_wire())
