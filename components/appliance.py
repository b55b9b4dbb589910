"""Appliance: the root component. It owns the program's CRDs, the seeded ModuleActivations
and one Module per module that has a Kustomization. The resources of a ModelActivation are its
direct children (components/model.py says why there is no component per activation).

The statuses are written in batches (components/status.py); each member takes the `problem`
outputs of its object's dynamic resources: a ModelActivation those of its runtime profile,
offloading profile, Pod recovery and Ollama alias; the Appliance those of the stale removals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import Resource

from api.kinds import APPLIANCE_KINDS, StatusAuthor
from components.access_guard import AccessGuard, AccessGuardArgs
from components.dynamic import (
    DynamicProviders,
    GpuValidationHistory,
    GpuValidationRun,
    OffloadingProfile,
    RuntimeProfile,
    offloading_profile_name,
    runtime_profile_name,
)
from components.hardware import HardwareProvider, HardwareProviderArgs
from components.instance import AppInstance, AppInstanceArgs
from components.model import Model, ModelArgs
from components.module import Module, ModuleArgs
from components.objects import declare
from components.stale import StaleRemoval
from components.status import StatusBatchWrite
from components.urns import set_qualified_type
from planning.labels import MODULE
from planning.models.plan import ModelOutcome
from planning.plan import Plan
from planning.status_batches import status_batches


@dataclass(frozen=True)
class ApplianceArgs:
    plan: Plan
    """The plan to declare; the component adds nothing to it."""
    providers: DynamicProviders
    """The dynamic providers (injected: components perform no I/O)."""


WRITTEN_STATUS_KINDS = frozenset(kind.kind for kind in APPLIANCE_KINDS if kind.status_author is StatusAuthor.PROGRAM)
"""The kinds whose status the program writes; the others' belong to the host worker and host automation."""

Problems = dict[str, pulumi.Output[Any]]
"""The `problem` outputs of one object's dynamic resources, by the resources' logical names."""


class Appliance(pulumi.ComponentResource):
    TYPE = "magicstick:index:Appliance"

    operations: list[Resource]
    """Every dynamic resource declared for the plan; each has the output `problem`."""

    def __init__(self, name: str, args: ApplianceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        set_qualified_type(self, opts.parent if opts is not None else None, self.TYPE)
        self.operations = []
        plan = args.plan
        child = pulumi.ResourceOptions(parent=self)
        crds = [declare(crd, opts=child) for crd in plan.crds]
        after_crds = pulumi.ResourceOptions(parent=self, depends_on=crds)
        for activation in plan.modules.seeded_activations:
            declare(activation, opts=after_crds)
        for kustomization in plan.modules.kustomizations:
            module = kustomization.body["metadata"]["labels"].get(MODULE, kustomization.name)
            Module(module, ModuleArgs(kustomization=kustomization), opts=child)
        for provider in plan.hardware_providers:
            HardwareProvider(provider.module, HardwareProviderArgs(objects=provider.objects), opts=child)
        # Validation runs are advisory: their problems are logged (operations), never merged
        # into a status write, so a failed diagnostic never marks hardware unavailable.
        self._validation(plan, args.providers)
        problems = self._models(plan, args.providers)
        if plan.instances.guard:
            AccessGuard("access-guard", AccessGuardArgs(objects=plan.instances.guard), opts=child)
        for instance in plan.instances.outcomes:
            if instance.objects:
                AppInstance(instance.instance, AppInstanceArgs(outcome=instance), opts=child)
        removals = {
            stale.logical_name: StaleRemoval(stale, provider=args.providers.stale_removal, opts=child)
            for stale in plan.stale
        }
        self.operations.extend(removals.values())
        problems[("Appliance", "")] = {name: removal.problem for name, removal in removals.items()}
        for cache_object in plan.models.cache:
            declare(cache_object, opts=child)
        if plan.models.external_models is not None:
            declare(plan.models.external_models, opts=child)
        if plan.model_catalog is not None and plan.model_catalog.config_map is not None:
            declare(plan.model_catalog.config_map, opts=child)
        written = [update for update in plan.statuses if update.kind in WRITTEN_STATUS_KINDS]
        for batch in status_batches(written):
            found = {
                batch.key(u): problems.get((u.kind, "" if u.kind == "Appliance" else u.name), {}) for u in batch.members
            }
            self.operations.append(StatusBatchWrite(batch, provider=args.providers.status, opts=child, problems=found))
        self.register_outputs(
            {
                "modules": sorted(m.name for m in plan.modules.modules if m.phase != "Disabled"),
                "phase": next((s.status["phase"] for s in plan.statuses if s.kind == "Appliance"), None),
            }
        )

    def _validation(self, plan: Plan, providers: DynamicProviders) -> None:
        """The validation history store, and every validation run after it."""
        if plan.validation_history is None:
            return
        history = GpuValidationHistory(
            plan.validation_history.namespace,
            bound=plan.validation_history.bound,
            provider=providers.gpu_validation_history,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.operations.append(history)
        after = pulumi.ResourceOptions(parent=self, depends_on=[history])
        self.operations.extend(
            GpuValidationRun(run, provider=providers.gpu_validation, opts=after) for run in plan.validation_runs
        )

    def _models(self, plan: Plan, providers: DynamicProviders) -> dict[tuple[str, str], Problems]:
        """The runtime profiles and Model components; each activation's problems, by (kind, name)."""
        child = pulumi.ResourceOptions(parent=self)
        profiles = {
            profile.name: RuntimeProfile(profile, provider=providers.runtime_profile, opts=child)
            for profile in plan.models.cpu_profiles
        }
        offloading = {
            profile.name: OffloadingProfile(profile, provider=providers.offloading_profile, opts=child)
            for profile in plan.models.offloading_profiles
        }
        self.operations.extend([*profiles.values(), *offloading.values()])
        problems: dict[tuple[str, str], Problems] = {}
        for outcome in plan.models.outcomes:
            found: Problems = {}
            needs: list[Resource] = []
            if outcome.cpu_profile is not None:
                needs.append(profiles[outcome.cpu_profile.name])
                found[runtime_profile_name(outcome.cpu_profile).name] = profiles[outcome.cpu_profile.name].problem
            if outcome.offloading_profile is not None:
                needs.append(offloading[outcome.offloading_profile.name])
                found[offloading_profile_name(outcome.offloading_profile).name] = offloading[
                    outcome.offloading_profile.name
                ].problem
            model = self._model(outcome, providers, tuple(needs))
            if model is not None:
                self.operations.extend(model.operations.values())
                found |= model.problems
            problems[("ModelActivation", outcome.activation)] = found
        return problems

    def _model(self, outcome: ModelOutcome, providers: DynamicProviders, needs: tuple[Resource, ...]) -> Model | None:
        if outcome.model is None and outcome.pod_deletion is None and outcome.alias is None and outcome.runtime is None:
            return None
        args = ModelArgs(outcome=outcome, providers=providers, depends_on=needs)
        return Model(outcome.activation, args, parent=self)
