"""plan(snapshot, catalogs, now) -> Plan: everything that should exist, and every status.

PURE: no I/O, no clock, no randomness. The same inputs give the same plan, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from catalogs import Catalogs
from planning.hardware.amd import MODULE as AMD_MODULE
from planning.hardware.amd import amd_objects
from planning.hardware.operators import (
    Hardware,
    VendorDecision,
    decide_vendors,
    hardware_operator_statuses,
    observe_hardware,
    unavailable_vendors,
)
from planning.intent import read_intent
from planning.labels import FIELD_MANAGER_ANNOTATION
from planning.stale import StaleObject, stale_kustomizations
from planning.models.plan import ModelPlan, plan_models
from planning.instances.plan import InstancePlan, plan_instances
from planning.modules import ModulePlan, appliance_source, plan_modules
from planning.objects import DesiredObject, StatusUpdate
from planning.requirements import requirements
from planning.settings import PlanSettings
from planning.snapshot import Snapshot
from planning.status import appliance_status, bounded, module_activation_statuses, with_required_modules


@dataclass(frozen=True)
class HardwareProviderPlan:
    """Objects a GPU vendor's provider needs besides its module's Kustomization."""

    module: str
    objects: tuple[DesiredObject, ...]


@dataclass(frozen=True)
class Plan:
    """The desired state of one run."""

    crds: tuple[DesiredObject, ...]
    modules: ModulePlan
    hardware_providers: tuple[HardwareProviderPlan, ...]
    models: ModelPlan
    instances: InstancePlan
    statuses: tuple[StatusUpdate, ...]
    hardware: Hardware
    stale: tuple[StaleObject, ...] = ()
    """Generated objects in the cluster that nothing in the plan declares: removed (planning/stale.py)."""

    @property
    def objects(self) -> tuple[DesiredObject, ...]:
        """Every Kubernetes object the plan declares, CRDs first."""
        provider_objects = tuple(o for p in self.hardware_providers for o in p.objects)
        external = (self.models.external_models,) if self.models.external_models is not None else ()
        return (
            self.crds
            + self.modules.seeded_activations
            + self.modules.kustomizations
            + provider_objects
            + self.models.models
            + external
            + self.instances.objects
        )


def crd_objects(crds: Iterable[Mapping[str, Any]], field_manager: str) -> tuple[DesiredObject, ...]:
    """The program's own CRDs as declared objects, sorted by name. Pure.

    Invariant 12: deleting a CRD deletes every object of its kind, so they are retained on
    delete: neither `pulumi destroy`, nor a lost or moved stack, nor a renamed resource ever
    removes one. Removing them is a deliberate `kubectl delete crd` (README, "Removing the
    appliance").
    """
    objects = []
    for crd in crds:
        body = dict(crd)
        metadata = dict(body.get("metadata", {}))
        metadata["annotations"] = {**metadata.get("annotations", {}), FIELD_MANAGER_ANNOTATION: field_manager}
        body["metadata"] = metadata
        name = metadata["name"]
        objects.append(
            DesiredObject.of(body, logical_name=f"crd-{name}", retain_on_delete=True)
        )
    return tuple(sorted(objects, key=lambda o: o.name))


def plan(
    *,
    snapshot: Snapshot,
    catalogs: Catalogs,
    now: datetime,
    settings: PlanSettings = PlanSettings(),
    own_crds: Iterable[Mapping[str, Any]] = (),
) -> Plan:
    intent = read_intent(snapshot, settings.system_namespace)
    hardware = observe_hardware(snapshot, catalogs)
    vendors = decide_vendors(hardware, snapshot, intent, catalogs)
    needs = requirements(intent, catalogs, unavailable_vendors=unavailable_vendors(vendors, catalogs=catalogs))
    modules = plan_modules(
        intent=intent,
        requirements=needs,
        snapshot=snapshot,
        catalogs=catalogs,
        settings=settings,
        hardware_requests=frozenset(v.module for v in vendors if v.request),
    )
    models = plan_models(
        intent=intent,
        requirements=needs,
        modules=modules,
        snapshot=snapshot,
        capacity=hardware.capacity,
        catalogs=catalogs,
        settings=settings,
        now=now,
        memory=hardware.memory,
    )
    instances = plan_instances(
        intent=intent,
        requirements=needs,
        modules=modules,
        snapshot=snapshot,
        catalogs=catalogs,
        settings=settings,
        source=appliance_source(intent, snapshot),
        now=now,
    )
    statuses = list(module_activation_statuses(modules, now))
    statuses += with_required_modules(instances.statuses + models.statuses, requirements=needs)
    operators = hardware_operator_statuses(hardware=hardware, decisions=vendors, modules=modules, catalogs=catalogs, requirements=needs)
    providers = _hardware_providers(hardware, vendors, modules, snapshot, catalogs, settings)
    appliance = appliance_status(
        intent, modules, now, hardware_operators=operators, instances=instances.summaries, models=models.statuses
    )
    if appliance is not None:
        statuses.append(appliance)
    return Plan(
        crds=crd_objects(own_crds, settings.field_manager),
        stale=stale_kustomizations(snapshot, modules.kustomizations),
        modules=modules,
        hardware_providers=providers,
        models=models,
        instances=instances,
        statuses=bounded(sorted(statuses, key=lambda s: (s.kind, s.namespace, s.name))),
        hardware=hardware,
    )


def _hardware_providers(
    hardware: Hardware,
    vendors: tuple[VendorDecision, ...],
    modules: ModulePlan,
    snapshot: Snapshot,
    catalogs: Catalogs,
    settings: PlanSettings,
) -> tuple[HardwareProviderPlan, ...]:
    providers = []
    for decision in vendors:
        if decision.module != AMD_MODULE:
            continue
        outcome = modules.outcome(decision.module)
        objects = amd_objects(
            decision=decision,
            nodes=hardware.nodes,
            module_requested=outcome is not None and outcome.phase != "Disabled",
            snapshot=snapshot,
            catalogs=catalogs,
            field_manager=settings.field_manager,
        )
        if objects:
            providers.append(HardwareProviderPlan(module=decision.module, objects=objects))
    return tuple(providers)
