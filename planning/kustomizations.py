"""The Flux Kustomization generated for one enabled module, with its defaults written out.

Every field the controller would otherwise default is written out (force: false included) so
the object read back from the cluster equals the object declared, and a converged run sees no
difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api import peer_kinds
from catalogs import ModuleEntry
from planning.labels import ACTIVATION, FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE, MODULE
from planning.names import LABEL_VALUE_LIMIT, fit
from planning.objects import DesiredObject
from planning.settings import FLUX_NAMESPACE

KUSTOMIZATION_API_VERSION = peer_kinds.FLUX_KUSTOMIZATION.api_version
INTERVAL = "10m0s"
SETTINGS_CONFIG_MAP = "ai-appliance-settings"


@dataclass(frozen=True)
class SourceRef:
    """The Flux source every generated Kustomization reads (Appliance.spec.source)."""

    kind: str = "GitRepository"
    name: str = "flux-system"
    namespace: str = "flux-system"


def module_kustomization(
    *,
    entry: ModuleEntry,
    dependencies: tuple[ModuleEntry, ...],
    source: SourceRef,
    suspend: bool,
    activation: str | None,
    field_manager: str,
    parameters: Mapping[str, str] | None = None,
    components: tuple[str, ...] = (),
) -> DesiredObject:
    """Build the Kustomization for `entry`.

    Hardware providers wait for their workloads to be ready (driver and device-plugin rollout
    count toward readiness); other modules do not wait, and instead health-check the CRDs they
    must serve. Flux ignores healthChecks when wait is on, so only one of the two is written.
    `parameters` (variable -> text, planning.module_parameters) join the shared settings in
    post-build substitution; Flux gives inline values precedence over substituteFrom.
    `components` (planning.module_parameters.components) are written only when there is one, as
    Flux leaves the field out when it is empty.
    """
    labels = {MANAGED_BY: MANAGED_BY_VALUE, MODULE: entry.name}
    annotations = {FIELD_MANAGER_ANNOTATION: field_manager}
    if activation is not None:
        labels[ACTIVATION] = fit(activation, LABEL_VALUE_LIMIT)
        annotations[ACTIVATION] = activation
    spec: dict[str, Any] = {
        "interval": INTERVAL,
        "path": entry.path,
        "prune": True,
        "deletionPolicy": "Delete",
        "wait": entry.hardware_provider,
        "force": False,
        "suspend": suspend,
        "sourceRef": {"kind": source.kind, "name": source.name, "namespace": source.namespace},
        "postBuild": {
            "substitute": {"var_substitution_enabled": "true", **dict(sorted((parameters or {}).items()))},
            "substituteFrom": [{"kind": "ConfigMap", "name": SETTINGS_CONFIG_MAP, "optional": True}],
        },
    }
    if components:
        spec["components"] = list(components)
    if dependencies:
        spec["dependsOn"] = [{"name": dep.kustomization} for dep in sorted(dependencies, key=lambda d: d.kustomization)]
    if entry.required_crds and not entry.hardware_provider:
        spec["healthChecks"] = [
            {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "name": crd}
            for crd in sorted(entry.required_crds)
        ]
    body = {
        "apiVersion": KUSTOMIZATION_API_VERSION,
        "kind": "Kustomization",
        "metadata": {
            "name": entry.kustomization,
            "namespace": FLUX_NAMESPACE,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }
    return DesiredObject.of(body)
