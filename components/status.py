"""StatusWrite: the dynamic resource that carries one planned status to its object."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi.dynamic import Resource, ResourceProvider

from planning.frozen import thaw
from planning.objects import StatusUpdate


@dataclass(frozen=True)
class ClusterAccessInputs:
    """How the provider process reaches the cluster; a kubeconfig's contents travel as a secret."""

    kubeconfig: str | None = None
    context: str | None = None


def status_logical_name(update: StatusUpdate) -> str:
    return f"status-{update.kind.lower()}-{update.namespace}-{update.name}"


class StatusWrite(Resource, module="magicstick", name="Status"):
    def __init__(
        self,
        update: StatusUpdate,
        *,
        provider: ResourceProvider,
        access: ClusterAccessInputs,
        opts: pulumi.ResourceOptions,
    ) -> None:
        props = {
            "apiVersion": update.api_version,
            "kind": update.kind,
            "namespace": update.namespace,
            "name": update.name,
            "status": thaw(update.status),
            "kubeconfig": pulumi.Output.secret(access.kubeconfig) if access.kubeconfig else None,
            "context": access.context,
        }
        super().__init__(provider, status_logical_name(update), props, opts)
