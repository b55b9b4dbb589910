"""StatusWrite: the dynamic resource that carries one planned status to its object.

Its inputs name the object and its status; the provider reaches the cluster as the stack's
configuration says (see components/dynamic.py).
"""

from __future__ import annotations

import pulumi
from pulumi.dynamic import Resource, ResourceProvider

from components.dynamic import LogicalName
from planning.frozen import thaw
from planning.objects import StatusUpdate

__all__ = ["StatusWrite", "status_logical_name"]


def status_logical_name(update: StatusUpdate) -> LogicalName:
    """`status/<kind>/<namespace>/<name>` (lower-case kind). Pure."""
    parts = (update.kind.lower(), update.namespace, update.name)
    return LogicalName.of("status", *parts, previous="-".join(("status", *parts)))


class StatusWrite(Resource, module="magicstick", name="Status"):
    def __init__(
        self,
        update: StatusUpdate,
        *,
        provider: ResourceProvider,
        opts: pulumi.ResourceOptions,
    ) -> None:
        props = {
            "apiVersion": update.api_version,
            "kind": update.kind,
            "namespace": update.namespace,
            "name": update.name,
            "status": thaw(update.status),
        }
        name = status_logical_name(update)
        super().__init__(provider, name.name, props, name.options(opts))
