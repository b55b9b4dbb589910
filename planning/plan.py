"""plan(snapshot, catalogs, now) -> Plan: everything that should exist, and every status.

PURE: no I/O, no clock, no randomness. The same inputs give the same plan, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from api.status import HardwareOperatorStatus
from catalogs import Catalogs
from planning.catalog_overrides import CatalogProblem, keep_unknown_modules
from planning.deadlines import Deadline, next_deadline
from planning.hardware.amd import MODULE as AMD_MODULE
from planning.hardware.amd import amd_objects
from planning.hardware.compatibility import (
    AmdCompatibility,
    ValidationRunPlan,
    catalogued_engines,
    compatibility_status,
    decide_compatibility,
    with_device_results,
)
from planning.hardware.evidence import evidence_deadline
from planning.hardware.nvidia_sharing import MODULE as NVIDIA_MODULE
from planning.hardware.operators import (
    Hardware,
    VendorDecision,
    decide_vendors,
    hardware_operator_statuses,
    observe_hardware,
    unavailable_vendors,
)
from planning.hardware.runtime_adoption import runtime_adoption
from planning.hardware.sharing_plan import SharingPlan, plan_sharing, with_sharing
from planning.hardware.validation import MAX_HISTORY_RUNS
from planning.instances.plan import InstancePlan, plan_instances
from planning.intent import read_intent
from planning.labels import FIELD_MANAGER_ANNOTATION
from planning.models.catalog import ModelCatalog, plan_catalog
from planning.models.choice import settle_choices
from planning.models.lifecycle import lifecycle_deadlines
from planning.models.plan import ModelPlan, plan_models
from planning.modules import ModulePlan, appliance_source, plan_modules
from planning.objects import DesiredObject, StatusUpdate
from planning.operator import operator_report
from planning.requirements import Requirement, requirements
from planning.settings import PlanSettings
from planning.snapshot import Snapshot
from planning.stale import StaleObject, stale_kustomizations
from planning.status import appliance_status, bounded, module_activation_statuses, with_required_modules
from planning.unset_images import UnsetImage, unset_images


@dataclass(frozen=True)
class HardwareProviderPlan:
    """Objects a GPU vendor's provider needs besides its module's Kustomization."""

    module: str
    objects: tuple[DesiredObject, ...]


@dataclass(frozen=True)
class ValidationHistoryPlan:
    """Where the GPU validation history lives and how many runs it keeps."""

    namespace: str
    bound: int = MAX_HISTORY_RUNS


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
    validation_runs: tuple[ValidationRunPlan, ...] = ()
    """GPU validation runs and device diagnostics to declare (planning.hardware.compatibility)."""
    validation_history: ValidationHistoryPlan | None = None
    """The validation history store, declared while the amd-gpu module is requested."""
    """Generated objects in the cluster that nothing in the plan declares: removed (planning/stale.py)."""
    model_catalog: ModelCatalog | None = None
    """What LiteLLM routes, and its ConfigMap (planning/models/catalog.py)."""
    next_reconcile: Deadline | None = None
    """The earliest moment still to come at which a state changes with time alone
    (planning/deadlines.py); Appliance/local publishes it as status.nextReconcileAt."""
    unset_images: tuple[UnsetImage, ...] = ()
    """Image slots still holding a placeholder or nothing (planning/unset_images.py), each once:
    the run logs a warning for each, `render` prints one."""

    @property
    def objects(self) -> tuple[DesiredObject, ...]:
        """Every Kubernetes object the plan declares, CRDs first."""
        provider_objects = tuple(o for p in self.hardware_providers for o in p.objects)
        external: tuple[DesiredObject, ...] = (
            (self.models.external_models,) if self.models.external_models is not None else ()
        )
        if self.model_catalog is not None and self.model_catalog.config_map is not None:
            external += (self.model_catalog.config_map,)
        return (
            self.crds
            + self.modules.seeded_activations
            + self.modules.kustomizations
            + provider_objects
            + self.models.models
            + self.models.cache
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
        objects.append(DesiredObject.of(body, logical_name=f"crd-{name}", retain_on_delete=True))
    return tuple(sorted(objects, key=lambda o: o.name))


def plan(
    *,
    snapshot: Snapshot,
    catalogs: Catalogs,
    now: datetime,
    settings: PlanSettings = PlanSettings(),
    own_crds: Iterable[Mapping[str, Any]] = (),
    catalog_problems: Sequence[CatalogProblem] = (),
) -> Plan:
    """Everything that should exist, and every status, for `snapshot` under `catalogs`.

    `catalogs` are the catalogs in force, `catalog_problems` the catalog ConfigMaps that could
    not be applied (planning.catalog_overrides.catalogs_in_force gives both): Appliance/local
    is then Degraded (CatalogInvalid).
    """
    hardware = observe_hardware(snapshot, catalogs)
    settled = settle_choices(read_intent(snapshot, settings.system_namespace), hardware, catalogs)
    intent = settled.intent
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
    modules = keep_unknown_modules(modules, snapshot, catalogs, catalog_problems)
    sharing = plan_sharing(
        intent=intent, snapshot=snapshot, hardware=hardware, catalogs=catalogs, field_manager=settings.field_manager
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
        sharing=sharing,
        choices=settled.choices,
    )
    catalog = plan_catalog(models=models, modules=modules, snapshot=snapshot, settings=settings)
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
    amd = _amd_compatibility(snapshot, intent, hardware, vendors, catalogs, settings, now)
    operators = _operator_statuses(snapshot, hardware, vendors, modules, catalogs, needs, sharing, amd)
    providers = _hardware_providers(hardware, vendors, modules, snapshot, catalogs, settings, amd, sharing)
    next_reconcile = next_deadline(_deadlines(snapshot, models, amd, now), now=now)
    appliance = appliance_status(
        intent,
        modules,
        now,
        hardware_operators=operators,
        instances=instances.summaries,
        models=models.statuses,
        catalog_problems=(*catalog_problems, *catalog.problems),
        operator=operator_report(
            snapshot, settings, previous_status=intent.appliance.obj.status if intent.appliance else {}, now=now
        ),
        next_reconcile=next_reconcile,
    )
    statuses += [appliance] if appliance is not None else []
    return Plan(
        crds=crd_objects(own_crds, settings.field_manager),
        stale=stale_kustomizations(snapshot, modules.kustomizations),
        modules=modules,
        hardware_providers=providers,
        models=models,
        instances=instances,
        statuses=bounded(sorted(statuses, key=lambda s: (s.kind, s.namespace, s.name))),
        hardware=hardware,
        validation_runs=amd.runs if amd is not None and _amd_requested(modules) else (),
        validation_history=ValidationHistoryPlan(settings.system_namespace) if _amd_requested(modules) else None,
        model_catalog=catalog,
        next_reconcile=next_reconcile,
        unset_images=unset_images(catalogs, snapshot),
    )


def _operator_statuses(
    snapshot: Snapshot,
    hardware: Hardware,
    vendors: tuple[VendorDecision, ...],
    modules: ModulePlan,
    catalogs: Catalogs,
    needs: tuple[Requirement, ...],
    sharing: SharingPlan,
    amd: AmdCompatibility | None,
) -> dict[str, HardwareOperatorStatus]:
    """Appliance.status.hardwareOperators: every vendor with its sharing, and for AMD its
    compatibility (runtime adoption included) and the per-engine results on its devices. Pure."""
    operators = hardware_operator_statuses(
        hardware=hardware, decisions=vendors, modules=modules, catalogs=catalogs, requirements=needs
    )
    operators = with_sharing(operators, sharing)
    if amd is None or AMD_MODULE not in operators:
        return operators
    kubeai = modules.outcome("kubeai")
    adoption = runtime_adoption(
        snapshot,
        kubeai_phase=kubeai.phase if kubeai is not None else None,
        validated=amd.runtime_images,
        engines=catalogued_engines(amd, catalogs),
    )
    compatibility = compatibility_status(amd, catalogs=catalogs, adoption=adoption).model_copy(
        update={"sharing": sharing.amd_status()}
    )
    devices = with_device_results(operators[AMD_MODULE].devices, compatibility.device_diagnostics)
    operators[AMD_MODULE] = operators[AMD_MODULE].model_copy(
        update={"compatibility": compatibility, "devices": devices}
    )
    return operators


def _deadlines(
    snapshot: Snapshot, models: ModelPlan, amd: AmdCompatibility | None, now: datetime
) -> tuple[Deadline, ...]:
    """Every moment at which a planned state changes with time alone: the lifecycle timers of the
    ModelActivations and the host evidence of the AMD nodes whose compatibility is reported."""
    found = [
        deadline
        for update in models.statuses
        if update.kind == "ModelActivation"
        for deadline in lifecycle_deadlines(update)
    ]
    judged = {node.node for node in amd.nodes} if amd is not None else set()
    for node in snapshot.nodes:
        if node.meta.name in judged and (deadline := evidence_deadline(node, now)) is not None:
            found.append(deadline)
    return tuple(found)


def _amd_requested(modules: ModulePlan) -> bool:
    outcome = modules.outcome(AMD_MODULE)
    return outcome is not None and outcome.phase != "Disabled"


def _amd_compatibility(
    snapshot: Snapshot,
    intent: Any,
    hardware: Hardware,
    vendors: tuple[VendorDecision, ...],
    catalogs: Catalogs,
    settings: PlanSettings,
    now: datetime,
) -> AmdCompatibility | None:
    decision = next((v for v in vendors if v.module == AMD_MODULE), None)
    if decision is None:
        return None
    return decide_compatibility(
        snapshot=snapshot,
        intent=intent,
        hardware=hardware,
        decision=decision,
        catalogs=catalogs,
        namespace=settings.system_namespace,
        now=now,
    )


def _hardware_providers(
    hardware: Hardware,
    vendors: tuple[VendorDecision, ...],
    modules: ModulePlan,
    snapshot: Snapshot,
    catalogs: Catalogs,
    settings: PlanSettings,
    amd: AmdCompatibility | None = None,
    sharing: SharingPlan = SharingPlan(),
) -> tuple[HardwareProviderPlan, ...]:
    providers = []
    for decision in vendors:
        if decision.module != AMD_MODULE:
            shared = tuple(o for o in sharing.objects if o.kind == "Node")
            if decision.module == NVIDIA_MODULE and shared:
                providers.append(HardwareProviderPlan(module=decision.module, objects=shared))
            continue
        outcome = modules.outcome(decision.module)
        objects = amd_objects(
            decision=decision,
            nodes=hardware.nodes,
            module_requested=outcome is not None and outcome.phase != "Disabled",
            snapshot=snapshot,
            catalogs=catalogs,
            field_manager=settings.field_manager,
            admitted=amd.eligible_nodes if amd is not None else None,
            node_labels={n.node: amd.labels_of(n.node) for n in amd.nodes} if amd is not None else None,
            dra=sharing.amd_dra,
        )
        objects += tuple(o for o in sharing.objects if o.kind != "Node")
        if objects:
            providers.append(HardwareProviderPlan(module=decision.module, objects=objects))
    return tuple(providers)
