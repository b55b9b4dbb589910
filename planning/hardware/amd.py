"""The AMD GPU Operator's DeviceConfig, managed by Magic Stick apart from the operator's install.

The operator's Helm install (the amd-gpu module) runs the controller; the DeviceConfig decides
where the device plugin runs. It selects nodes by Magic Stick's own eligibility label, which
the program sets on eligible nodes (never AMD's own NFD support label): a node is eligible
when it passes the preflight and NFD reports an AMD GPU on it, and it stays eligible while
NFD reports nothing at all for it (a restart), so a device plugin is never withdrawn on a
transient label loss. The default device plugin is used; the DRA driver stays off.
"""

from __future__ import annotations

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
ELIGIBLE_LABEL = "appliance.magicstick.dev/amd-gpu-eligible"


def eligible_nodes(decision: VendorDecision, nodes: tuple[NodeGpus, ...], snapshot: Snapshot) -> tuple[str, ...]:
    labelled = {n.meta.name for n in snapshot.nodes if n.meta.labels.get(ELIGIBLE_LABEL) == "true"}
    silent = {n.name for n in nodes if not n.nfd_reporting and n.compatible}
    return tuple(sorted(set(decision.compatible_nodes) | (labelled & silent)))


def node_eligibility_patch(node: str, field_manager: str) -> DesiredObject:
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node,
            "labels": {ELIGIBLE_LABEL: "true"},
            "annotations": {FIELD_MANAGER_ANNOTATION: field_manager},
        },
    }
    return DesiredObject.of(body, logical_name=f"node-{node}-amd-gpu-eligible", patch=True)


def device_config(namespace: str, field_manager: str) -> DesiredObject:
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
            "devicePlugin": {"enableDevicePlugin": True, "enableNodeLabeller": True},
            "draDriver": {"enable": False},
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
) -> tuple[DesiredObject, ...]:
    """Eligibility labels and the DeviceConfig, while the amd-gpu module is requested.

    The DeviceConfig is declared once its CRD is served (the operator's install brings it).
    """
    if not module_requested:
        return ()
    objects = [node_eligibility_patch(node, field_manager) for node in eligible_nodes(decision, nodes, snapshot)]
    if DEVICE_CONFIG_CRD in snapshot.served_crds:
        entry = catalogs.modules.get(MODULE)
        objects.append(device_config(entry.target_namespace or DEFAULT_NAMESPACE, field_manager))
    return tuple(objects)
