"""Read the snapshot from a live cluster: one paginated LIST per kind, nothing else.

Invariant 1, fail closed: any failed read raises SnapshotReadError naming the kind and the
server's answer, and the run stops before a single resource is declared. A kind whose API is
not served yet (a first install before the CRDs exist, or before Flux installed KubeAI) is
not a failure: discovery says so, and the kind reads as empty.

Secrets are never read. NodeFeatures are read across namespaces: Node Feature Discovery keeps
them in its own namespace, which the installation chooses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from planning.settings import FLUX_NAMESPACE
from planning.snapshot import Snapshot, SnapshotError
from providers.kinds import (
    APPLIANCE,
    APPLIANCE_SETUP,
    APP_INSTANCE,
    CONFIG_MAP,
    CRD,
    HOST_OPERATION,
    KUSTOMIZATION,
    MODEL_ACTIVATION,
    MODULE_ACTIVATION,
    NODE,
    NODE_FEATURE,
)
from providers.kube import KubeAccess, KubeClient, KubeError, ResourceKind, open_client

SETUP_NAMESPACE = "identity-system"


class SnapshotReadError(Exception):
    """The cluster could not be read completely; the message names the kind and the server's answer."""


@dataclass(frozen=True)
class Read:
    """One LIST: a kind, in one namespace or (namespace None) across the cluster."""

    kind: ResourceKind
    namespace: str | None = None


def reads(system_namespace: str) -> tuple[Read, ...]:
    """Every LIST one observation makes, in a fixed order."""
    return (
        Read(CRD),
        Read(NODE),
        Read(NODE_FEATURE),
        Read(APPLIANCE, system_namespace),
        Read(MODULE_ACTIVATION, system_namespace),
        Read(MODEL_ACTIVATION, system_namespace),
        Read(APP_INSTANCE, system_namespace),
        Read(HOST_OPERATION, system_namespace),
        Read(APPLIANCE_SETUP, SETUP_NAMESPACE),
        Read(KUSTOMIZATION, FLUX_NAMESPACE),
        Read(CONFIG_MAP, FLUX_NAMESPACE),
    )


def read_objects(client: KubeClient, plan: Iterable[Read]) -> list[dict[str, Any]]:
    """Raw objects of every served kind in `plan`. Raises SnapshotReadError on any failure."""
    served: dict[tuple[str, str], frozenset[str] | None] = {}
    objects: list[dict[str, Any]] = []
    for read in plan:
        kind = read.kind
        key = (kind.group, kind.version)
        try:
            if key not in served:
                served[key] = client.served_resources(kind.group, kind.version)
            resources = served[key]
            if resources is None or kind.plural not in resources:
                continue
            objects.extend(client.list(kind, namespace=read.namespace))
        except KubeError as error:
            where = f" in namespace {read.namespace}" if read.namespace else ""
            raise SnapshotReadError(
                f"reading {kind.kind} ({kind.api_version}){where} failed: {error.code} {error.reason}: {error.message}"
            ) from error
    return objects


def read_snapshot(access: KubeAccess, *, system_namespace: str) -> Snapshot:
    with open_client(access) as client:
        objects = read_objects(client, reads(system_namespace))
    try:
        return Snapshot.from_objects(objects)
    except SnapshotError as error:
        raise SnapshotReadError(f"the cluster returned an unreadable object: {error}") from error
