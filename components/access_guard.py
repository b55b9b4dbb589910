"""AccessGuard: the external-authorization service every instance's SecurityPolicy calls, its
grants, and the EnvoyProxy that orders Envoy's filters so the guard sees a verified identity."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.objects import declare
from components.urns import set_qualified_type
from planning.objects import DesiredObject


@dataclass(frozen=True)
class AccessGuardArgs:
    objects: tuple[DesiredObject, ...]
    """The guard's planned objects (planning.instances.guard)."""


class AccessGuard(pulumi.ComponentResource):
    TYPE = "magicstick:index:AccessGuard"

    def __init__(self, name: str, args: AccessGuardArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        set_qualified_type(self, opts.parent if opts is not None else None, self.TYPE)
        for obj in args.objects:
            declare(obj, opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({"objects": [obj.identity for obj in args.objects]})
