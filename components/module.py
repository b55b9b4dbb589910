"""Module: one enabled platform module and the Flux Kustomization that installs it."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.objects import declare
from components.urns import set_qualified_type
from planning.objects import DesiredObject


@dataclass(frozen=True)
class ModuleArgs:
    kustomization: DesiredObject
    """The generated Flux Kustomization, suspended or not, exactly as planned."""


class Module(pulumi.ComponentResource):
    TYPE = "magicstick:index:Module"

    def __init__(self, name: str, args: ModuleArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        set_qualified_type(self, opts.parent if opts is not None else None, self.TYPE)
        self.kustomization = declare(args.kustomization, opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({"kustomization": args.kustomization.name})
