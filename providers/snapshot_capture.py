"""Capture the live view the program reads into a snapshot file (for offline renders and bug reports)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from api import yamlio
from planning.snapshot import UNREADABLE_ANNOTATION, HealthObservation, UnreadableNamespace
from providers.kube import KubeAccess, open_client
from providers.live_reader import observe_health, read_live_objects
from providers.ollama import ProbeLimits
from providers.snapshot_file import (
    HEALTH_ANNOTATION,
    SERVED_APIS_ANNOTATION,
    SYSTEM_NAMESPACE_ANNOTATION,
    health_annotation,
)

_VOLATILE_METADATA = ("managedFields",)


def capture(
    access: KubeAccess,
    *,
    system_namespace: str,
    gateway_namespace: str | None = None,
    probes: ProbeLimits = ProbeLimits(),
) -> dict[str, Any]:
    """Every object one observation reads, as the `List` document snapshot_document builds.

    The same LISTs as a run, so the file renders what the program would see, including the
    target namespaces the server refused (recorded in UNREADABLE_ANNOTATION) and what the Ready
    realtime Pods answer on `/health` (HEALTH_ANNOTATION), probed within `probes` as a run
    does. What Ollama Pods answer through the pod proxy (tags, memory) is not captured. Secrets
    are never among the objects.
    """
    with open_client(access) as client:
        live = read_live_objects(client, system_namespace, gateway_namespace)
    health = observe_health(access, live.objects, limits=probes)
    return snapshot_document(
        live.objects,
        system_namespace=system_namespace,
        unreadable=live.unreadable,
        health=health,
        served_apis=live.served_apis,
    )


def snapshot_document(
    objects: Iterable[Mapping[str, Any]],
    *,
    system_namespace: str,
    unreadable: Iterable[UnreadableNamespace] = (),
    health: Iterable[HealthObservation] = (),
    served_apis: Iterable[str] = (),
) -> dict[str, Any]:
    """Pure. A `kubectl`-valid `List` of `objects` recording `system_namespace` in an annotation.

    managedFields are dropped (they are large and the plan reads none); the objects passed in
    are not modified. Unreadable namespaces and health observations, when there are any, are
    recorded in annotations of their own, sorted, so one cluster state gives one text.
    """
    items = []
    for obj in objects:
        item = dict(obj)
        metadata = item.get("metadata")
        if isinstance(metadata, Mapping):
            item["metadata"] = {key: value for key, value in metadata.items() if key not in _VOLATILE_METADATA}
        items.append(item)
    annotations = {SYSTEM_NAMESPACE_ANNOTATION: system_namespace}
    refused = sorted(unreadable, key=lambda u: u.namespace)
    if refused:
        annotations[UNREADABLE_ANNOTATION] = json.dumps([u.to_wire() for u in refused], sort_keys=True)
    observed = tuple(health)
    if observed:
        annotations[HEALTH_ANNOTATION] = health_annotation(observed)
    served = sorted(served_apis)
    if served:
        annotations[SERVED_APIS_ANNOTATION] = json.dumps(served)
    return {"apiVersion": "v1", "kind": "List", "metadata": {"annotations": annotations}, "items": items}


def snapshot_text(document: Mapping[str, Any]) -> str:
    """Pure. The YAML a snapshot file holds: keys sorted, so one cluster state gives one text."""
    return yamlio.safe_dump(dict(document), sort_keys=True)
