"""AppInstance: one application instance's HelmRelease and the Gateway objects in front of it."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.objects import declare
from components.urns import set_qualified_type
from planning.instances.plan import InstanceOutcome


@dataclass(frozen=True)
class AppInstanceArgs:
    outcome: InstanceOutcome
    """The planned objects of one instance."""


class AppInstance(pulumi.ComponentResource):
    TYPE = "magicstick:index:AppInstance"

    def __init__(self, name: str, args: AppInstanceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        set_qualified_type(self, opts.parent if opts is not None else None, self.TYPE)
        policies = [
            declare(obj, opts=pulumi.ResourceOptions(parent=self))
            for obj in args.outcome.objects
            if obj.kind == "SecurityPolicy"
        ]
        for obj in args.outcome.objects:
            if obj.kind != "SecurityPolicy":
                declare(
                    obj,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=policies if obj.kind == "HTTPRoute" else []),
                )
        self.register_outputs({"objects": [obj.identity for obj in args.outcome.objects]})
