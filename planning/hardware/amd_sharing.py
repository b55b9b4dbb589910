"""AMD shared allocation through Dynamic Resource Allocation: one claim, one admission adapter.

In `dra-shared` mode the program declares, in namespace `ai`:
- one ResourceClaim (SHARED_CLAIM) for exactly one device of DeviceClass DRA_DEVICE_CLASS, the
  device every shared AMD model uses (Kubernetes lets the Pods that reference one claim share
  its device; nothing isolates their memory from each other);
- a MutatingAdmissionPolicy and its binding (ADAPTER), scoped to Pod creation in that
  namespace for the KubeAI Models admitted to a slot (by their `model` label): it adds the
  claim to the Pod, points the first container at it, pins the Pod to the configured node and
  removes the legacy amd.com/gpu request the resource profile carries. Nothing else is touched,
  and NVIDIA Pods never match;
- the DeviceConfig switches from the device plugin to the DRA driver (planning.hardware.amd).

The claim itself records the mode (SLOTS_ANNOTATION), so after a restart the cluster shows
whether the shared allocation is in place. The node confirms it when the DRA driver publishes
a device of DRA_DRIVER in a ResourceSlice of that node; those devices are the DRA inventory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api import peer_kinds
from api.status import DraDeviceStatus
from planning.hardware.sharing import EXCLUSIVE, Allocation
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE
from planning.objects import DesiredObject
from planning.snapshot import GenericObject, Snapshot

MODULE = "amd-gpu"
DRA_SHARED = "dra-shared"
DRA_DRIVER = "gpu.amd.com"
DRA_DEVICE_CLASS = "gpu.amd.com"
CLAIM_API_VERSION = peer_kinds.RESOURCE_CLAIM.api_version
ADMISSION_API_VERSION = "admissionregistration.k8s.io/v1beta1"
SHARED_CLAIM = "magicstick-amd-gpu-shared"
CLAIM_REFERENCE = "amd-gpu-shared"
"""The name of the claim inside a Pod (spec.resourceClaims[].name, resources.claims[].name)."""
ADAPTER = "magicstick-amd-gpu-shared-claim"
SLOTS_ANNOTATION = "appliance.magicstick.dev/gpu-sharing-slots"
NODE_ANNOTATION = "appliance.magicstick.dev/gpu-sharing-node"
MODEL_POD_LABEL = "model"
"""KubeAI labels every model Pod with `model: <Model name>`."""
HOSTNAME_LABEL = "kubernetes.io/hostname"
LEGACY_RESOURCE = "amd.com/gpu"
PCI_ATTRIBUTES = ("resource.kubernetes.io/pciBusID", "pciAddr", "pciAddress")
SERVED_APIS = ("resourceclaims.resource.k8s.io/v1", "mutatingadmissionpolicies.admissionregistration.k8s.io/v1beta1")
"""What dra-shared needs the cluster to serve (Snapshot.served_apis names)."""


def observed_claim(snapshot: Snapshot, namespace: str) -> GenericObject | None:
    return snapshot.generic("ResourceClaim", namespace, SHARED_CLAIM)


def applied_allocation(snapshot: Snapshot, namespace: str) -> Allocation:
    """dra-shared while our shared claim exists (with the slots it records), else exclusive. Pure."""
    claim = observed_claim(snapshot, namespace)
    if claim is None:
        return Allocation(EXCLUSIVE)
    raw = claim.meta.annotations.get(SLOTS_ANNOTATION, "")
    return Allocation(DRA_SHARED, int(raw) if str(raw).isdigit() else None)


def unsupported(snapshot: Snapshot) -> str | None:
    missing = [api for api in SERVED_APIS if api not in snapshot.served_apis]
    if not missing:
        return None
    return f"dra-shared needs the cluster to serve {' and '.join(missing)} (Kubernetes 1.34 or later, MutatingAdmissionPolicy enabled)"


@dataclass(frozen=True)
class DraInventory:
    devices: tuple[DraDeviceStatus, ...]
    claim_device: DraDeviceStatus | None
    """The device the shared claim is allocated, once a Pod has used it."""


def dra_inventory(snapshot: Snapshot, namespace: str) -> DraInventory:
    """The devices DRA_DRIVER publishes in ResourceSlices, and the shared claim's allocation. Pure."""
    devices = []
    for item in snapshot.generated:
        if item.kind != "ResourceSlice" or item.spec.get("driver") != DRA_DRIVER:
            continue
        pool = (item.spec.get("pool") or {}).get("name", "")
        for device in item.spec.get("devices") or ():
            devices.append(
                DraDeviceStatus(
                    node=item.spec.get("nodeName") or pool,
                    pool=pool,
                    device=str(device.get("name", "")),
                    pci_address=_pci_address(device),
                )
            )
    devices.sort(key=lambda d: (d.node, d.device))
    claim = observed_claim(snapshot, namespace)
    allocated = None
    if claim is not None:
        results = ((claim.status.get("allocation") or {}).get("devices") or {}).get("results") or ()
        first = next((r for r in results if r.get("driver") == DRA_DRIVER), None)
        if first is not None:
            pool, name = str(first.get("pool", "")), str(first.get("device", ""))
            allocated = next(
                (d for d in devices if d.pool == pool and d.device == name),
                DraDeviceStatus(node=pool, pool=pool, device=name),
            )
    return DraInventory(devices=tuple(devices), claim_device=allocated)


def _pci_address(device: Any) -> str | None:
    attributes = device.get("attributes") or {}
    for key in PCI_ATTRIBUTES:
        value = attributes.get(key) or attributes.get(f"{DRA_DRIVER}/{key}")
        address = value.get("string") if isinstance(value, dict) else None
        if isinstance(address, str):
            return address
    return None


def confirms(inventory: DraInventory, node: str) -> bool:
    return any(d.node == node for d in inventory.devices)


def _metadata(name: str, field_manager: str, namespace: str | None = None, **annotations: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {MANAGED_BY: MANAGED_BY_VALUE},
        "annotations": {FIELD_MANAGER_ANNOTATION: field_manager, **annotations},
    }
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


def shared_claim(*, namespace: str, node: str, slots: int, field_manager: str) -> DesiredObject:
    """The one claim every shared AMD model's Pod references. Pure."""
    body = {
        "apiVersion": CLAIM_API_VERSION,
        "kind": "ResourceClaim",
        "metadata": _metadata(
            SHARED_CLAIM, field_manager, namespace, **{SLOTS_ANNOTATION: str(slots), NODE_ANNOTATION: node}
        ),
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {"deviceClassName": DRA_DEVICE_CLASS, "allocationMode": "ExactCount", "count": 1},
                    }
                ]
            }
        },
    }
    return DesiredObject.of(body)


def _mutation(hostname: str) -> str:
    """The JSON patch (CEL) that moves a Pod from the legacy resource to the shared claim."""
    escaped = LEGACY_RESOURCE.replace("/", "~1")
    container = "object.spec.containers[0]"
    return "\n".join(
        [
            "[",
            f'  JSONPatch{{op: "add", path: "/spec/resourceClaims", value: [Object.spec.resourceClaims{{name: "{CLAIM_REFERENCE}", resourceClaimName: "{SHARED_CLAIM}"}}]}},',
            f'  JSONPatch{{op: "add", path: "/spec/containers/0/resources/claims", value: [Object.spec.containers.resources.claims{{name: "{CLAIM_REFERENCE}"}}]}},',
            f'  has(object.spec.nodeSelector) ? JSONPatch{{op: "add", path: "/spec/nodeSelector/{HOSTNAME_LABEL.replace("/", "~1")}", value: "{hostname}"}}',
            f'    : JSONPatch{{op: "add", path: "/spec/nodeSelector", value: {{"{HOSTNAME_LABEL}": "{hostname}"}}}}',
            "] + (",
            f'  has({container}.resources.limits) && "{LEGACY_RESOURCE}" in {container}.resources.limits',
            f'    ? [JSONPatch{{op: "remove", path: "/spec/containers/0/resources/limits/{escaped}"}}] : []',
            ") + (",
            f'  has({container}.resources.requests) && "{LEGACY_RESOURCE}" in {container}.resources.requests',
            f'    ? [JSONPatch{{op: "remove", path: "/spec/containers/0/resources/requests/{escaped}"}}] : []',
            ")",
        ]
    )


def admission_adapter(
    *, namespace: str, hostname: str, models: tuple[str, ...], field_manager: str
) -> tuple[DesiredObject, DesiredObject]:
    """The MutatingAdmissionPolicy and its binding, for the Pods of the admitted `models`. Pure.

    With no admitted model the selector matches nothing (an In over one impossible value keeps
    the object valid)."""
    values = sorted(models) or ["-"]
    policy = {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "MutatingAdmissionPolicy",
        "metadata": _metadata(ADAPTER, field_manager),
        "spec": {
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
                ],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "objectSelector": {"matchExpressions": [{"key": MODEL_POD_LABEL, "operator": "In", "values": values}]},
            },
            "matchConditions": [
                {
                    "name": "not-bound-yet",
                    "expression": f'!has(object.spec.resourceClaims) || !object.spec.resourceClaims.exists(c, c.name == "{CLAIM_REFERENCE}")',
                }
            ],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": _mutation(hostname)}}],
        },
    }
    binding = {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": _metadata(ADAPTER, field_manager),
        "spec": {"policyName": ADAPTER},
    }
    return DesiredObject.of(policy), DesiredObject.of(binding)
