"""The AMD GPU Operator's DeviceConfig, managed by Magic Stick apart from the operator's install.

The operator's Helm install (the amd-gpu module) runs the controller; the DeviceConfig decides
where the device plugin runs. It selects nodes by Magic Stick's own eligibility label, which
the program sets on eligible nodes (never AMD's own NFD support label): a node is eligible
when the compatibility rules admit it (planning.hardware.compatibility: upstream-supported and
through the preflight, or through a selected, consented profile with current host evidence),
and it stays eligible while NFD reports nothing at all for it (a restart), so a device plugin
is never withdrawn on a transient label loss. The same patch carries the engine labels the
node's profile enables. The default device plugin is used and the DRA driver stays off, except
while GPU sharing declares the dra-shared allocation (planning.hardware.amd_sharing): then the
DRA driver replaces the device plugin.
"""

from __future__ import annotations

from collections.abc import Mapping

from api.host_evidence import AMD_GPU_ELIGIBLE_LABEL
from catalogs import Catalogs
from planning.hardware.nodes import NodeGpus
from planning.hardware.operators import VendorDecision
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE
from planning.objects import DesiredObject
from planning.snapshot import Snapshot

MODULE = "amd-gpu"
DEVICE_CONFIG_CRD = "deviceconfigs.amd.com"
DEVICE_CONFIG_API_VERSION = "amd.com/v1alpha1"
DEVICE_CONFIG_NAME = "magicstick-amd-gpu"
DEFAULT_NAMESPACE = "kube-amd-gpu"
ELIGIBLE_LABEL = AMD_GPU_ELIGIBLE_LABEL


def eligible_nodes(
    decision: VendorDecision, nodes: tuple[NodeGpus, ...], snapshot: Snapshot, admitted: tuple[str, ...] | None = None
) -> tuple[str, ...]:
    """`admitted`: the nodes the compatibility rules make eligible (default: every compatible node)."""
    labelled = {n.meta.name for n in snapshot.nodes if n.meta.labels.get(ELIGIBLE_LABEL) == "true"}
    silent = {n.name for n in nodes if not n.nfd_reporting and n.compatible}
    chosen = decision.compatible_nodes if admitted is None else admitted
    return tuple(sorted(set(chosen) | (labelled & silent)))


def node_eligibility_patch(
    node: str, field_manager: str, extra_labels: Mapping[str, str] | None = None
) -> DesiredObject:
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node,
            "labels": {ELIGIBLE_LABEL: "true", **dict(sorted((extra_labels or {}).items()))},
            "annotations": {FIELD_MANAGER_ANNOTATION: field_manager},
        },
    }
    return DesiredObject.of(body, logical_name=f"node-{node}-amd-gpu-eligible", patch=True)


def device_config(namespace: str, field_manager: str, *, dra: bool = False) -> DesiredObject:
    body = {
        "apiVersion": DEVICE_CONFIG_API_VERSION,
        "kind": "DeviceConfig",
        "metadata": {
            "name": DEVICE_CONFIG_NAME,
            "namespace": namespace,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE},
            "annotations": {FIELD_MANAGER_ANNOTATION: field_manager},
        },
        "spec": {
            "selector": {ELIGIBLE_LABEL: "true"},
            "driver": {"enable": False},
            "devicePlugin": {"enableDevicePlugin": not dra, "enableNodeLabeller": True},
            "draDriver": {"enable": dra},
        },
    }
    return DesiredObject.of(body)


def amd_objects(
    *,
    decision: VendorDecision,
    nodes: tuple[NodeGpus, ...],
    module_requested: bool,
    snapshot: Snapshot,
    catalogs: Catalogs,
    field_manager: str,
    admitted: tuple[str, ...] | None = None,
    node_labels: Mapping[str, Mapping[str, str]] | None = None,
    dra: bool = False,
) -> tuple[DesiredObject, ...]:
    """Eligibility (and engine) labels and the DeviceConfig, while the amd-gpu module is requested.

    The DeviceConfig is declared once its CRD is served (the operator's install brings it).
    """
    if not module_requested:
        return ()
    labels = node_labels or {}
    objects = [
        node_eligibility_patch(node, field_manager, labels.get(node))
        for node in eligible_nodes(decision, nodes, snapshot, admitted)
    ]
    if DEVICE_CONFIG_CRD in snapshot.served_crds:
        entry = catalogs.modules.require(MODULE)
        objects.append(device_config(entry.target_namespace or DEFAULT_NAMESPACE, field_manager, dra=dra))
    return tuple(objects)
