"""Observe the world: the snapshot every plan starts from.

Invariant 1: a snapshot is complete or the run stops here, before any resource is declared.
"""

from __future__ import annotations

from planning.snapshot import Snapshot
from program.settings import Settings
from providers.kube import KubeAccess
from providers.live_reader import read_snapshot
from providers.snapshot_file import read_snapshot_file


def kube_access(settings: Settings) -> KubeAccess:
    return KubeAccess(kubeconfig=settings.kubeconfig, context=settings.context)


def observe(settings: Settings) -> Snapshot:
    """The snapshot file when one is configured, else one read of the live cluster."""
    if settings.snapshot_file is not None:
        return read_snapshot_file(settings.snapshot_file)
    plan = settings.plan
    return read_snapshot(
        kube_access(settings),
        system_namespace=plan.system_namespace,
        gateway_namespace=plan.access.gateway_namespace,
        stack_name=plan.stack_name,
    )
