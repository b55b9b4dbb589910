"""Appliance: the root component. It owns the program's CRDs, the seeded ModuleActivations
and one Module per module that has a Kustomization."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.dynamic import DynamicProviders, RuntimeProfile
from components.hardware import HardwareProvider, HardwareProviderArgs
from components.instance import AppInstance, AppInstanceArgs
from components.model import Model, ModelArgs
from components.module import Module, ModuleArgs
from components.objects import declare
from components.stale import StaleRemoval
from components.status import StatusWrite
from planning.labels import MODULE
from planning.plan import Plan


@dataclass(frozen=True)
class ApplianceArgs:
    plan: Plan
    """The plan to declare; the component adds nothing to it."""
    providers: DynamicProviders
    """The dynamic providers (injected: components perform no I/O)."""


WRITTEN_STATUS_KINDS = frozenset({"Appliance", "ModuleActivation", "ModelActivation", "AppInstance"})
"""HostOperation and ApplianceSetup status belong to the host worker and host automation."""


class Appliance(pulumi.ComponentResource):
    TYPE = "magicstick:index:Appliance"

    def __init__(self, name: str, args: ApplianceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
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
        profiles = {
            profile.name: RuntimeProfile(profile, provider=args.providers.runtime_profile, opts=child)
            for profile in plan.models.cpu_profiles
        }
        for outcome in plan.models.outcomes:
            if outcome.model is None and outcome.pod_deletion is None and outcome.alias is None:
                continue
            needs = (profiles[outcome.cpu_profile.name],) if outcome.cpu_profile is not None else ()
            Model(outcome.activation, ModelArgs(outcome=outcome, providers=args.providers, depends_on=needs), opts=child)
        for instance in plan.instances.outcomes:
            if instance.objects:
                AppInstance(instance.instance, AppInstanceArgs(outcome=instance), opts=child)
        for stale in plan.stale:
            StaleRemoval(stale, provider=args.providers.stale_removal, opts=child)
        if plan.models.external_models is not None:
            declare(plan.models.external_models, opts=child)
        for update in plan.statuses:
            if update.kind in WRITTEN_STATUS_KINDS:
                StatusWrite(update, provider=args.providers.status, opts=child)
        self.register_outputs(
            {
                "modules": sorted(m.name for m in plan.modules.modules if m.phase != "Disabled"),
                "phase": next((s.status["phase"] for s in plan.statuses if s.kind == "Appliance"), None),
            }
        )
