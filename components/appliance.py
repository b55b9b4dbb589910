"""Appliance: the root component. It owns the program's CRDs, the seeded ModuleActivations
and one Module per module that has a Kustomization."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.module import Module, ModuleArgs
from components.objects import declare
from planning.labels import MODULE
from planning.plan import Plan


@dataclass(frozen=True)
class ApplianceArgs:
    plan: Plan
    """The plan to declare; the component adds nothing to it."""


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
        self.register_outputs(
            {
                "modules": sorted(m.name for m in plan.modules.modules if m.phase != "Disabled"),
                "phase": next((s.status["phase"] for s in plan.statuses if s.kind == "Appliance"), None),
            }
        )
