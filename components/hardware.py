"""HardwareProvider: what one GPU vendor needs besides its operator's Kustomization
(for AMD: the managed DeviceConfig and the node eligibility labels)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.objects import declare
from components.urns import set_qualified_type
from planning.objects import DesiredObject


@dataclass(frozen=True)
class HardwareProviderArgs:
    objects: tuple[DesiredObject, ...]
    """The vendor's objects, exactly as planned."""


class HardwareProvider(pulumi.ComponentResource):
    TYPE = "magicstick:index:HardwareProvider"

    def __init__(self, name: str, args: HardwareProviderArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        set_qualified_type(self, opts.parent if opts is not None else None, self.TYPE)
        for obj in args.objects:
            declare(obj, opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({"objects": [obj.identity for obj in args.objects]})
