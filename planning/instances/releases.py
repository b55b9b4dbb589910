"""The Flux HelmRelease generated for one AppInstance: its name, chart, source and values.

Stored in the system namespace under the AppInstance's name, installing into the instance's
target namespace as the Helm release `release_name` (planning.instances.names: unique per
instance, kept once created), its chart read from the GitRepository of Appliance.spec.source,
its values the instance's own (an agentExecution block of Paperclip included). Helm owns what
the chart renders, named after the release; the program owns every Gateway object in front of it.
"""

from __future__ import annotations

from typing import Any

from api import peer_kinds
from catalogs import ApplicationEntry
from planning.kustomizations import INTERVAL, SourceRef
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE
from planning.names import LABEL_VALUE_LIMIT, fit
from planning.objects import DesiredObject

HELM_RELEASE_API_VERSION = peer_kinds.HELM_RELEASE.api_version
INSTANCE_LABEL = "appliance.magicstick.dev/app-instance"
HELM_RELEASE_NAME_LIMIT = 53
"""Helm release names are at most 53 characters (the object's name once was its release name)."""


def helm_release_name(instance: str) -> str:
    """The HelmRelease object's name: the AppInstance's, as it always was. Pure."""
    return fit(instance, HELM_RELEASE_NAME_LIMIT)


def helm_release(
    *,
    instance: str,
    release_name: str,
    application: ApplicationEntry,
    system_namespace: str,
    target_namespace: str,
    values: dict[str, Any],
    source: SourceRef,
    field_manager: str,
) -> DesiredObject:
    name = helm_release_name(instance)
    body = {
        "apiVersion": HELM_RELEASE_API_VERSION,
        "kind": "HelmRelease",
        "metadata": {
            "name": name,
            "namespace": system_namespace,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE, INSTANCE_LABEL: fit(instance, LABEL_VALUE_LIMIT)},
            "annotations": {FIELD_MANAGER_ANNOTATION: field_manager},
        },
        "spec": {
            "interval": INTERVAL,
            "releaseName": release_name,
            "targetNamespace": target_namespace,
            "chart": {
                "spec": {
                    "chart": application.chart,
                    "reconcileStrategy": "Revision",
                    "sourceRef": {"kind": source.kind, "name": source.name, "namespace": source.namespace},
                }
            },
            "values": values,
        },
    }
    return DesiredObject.of(body)
