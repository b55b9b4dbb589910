"""NVIDIA time-slicing through the GPU Operator's device plugin: shipped profiles and a node label.

The NVIDIA module's Flux base (magic-cluster/platform/gpu/nvidia) ships the ConfigMap
DEVICE_PLUGIN_CONFIG_MAP with one device-plugin configuration per slot count, named
`magicstick-time-slicing-<slots>` (2-16), and points the ClusterPolicy's
`devicePlugin.config.name` at it with an empty default. A node without the label
DEVICE_PLUGIN_CONFIG_LABEL keeps the device plugin's default (exclusive GPUs); the program
selects a profile for the configured node by setting that label, and removes it (by no longer
declaring its patch) to return to exclusive. The device plugin then advertises `slots` per
physical GPU as nvidia.com/gpu, which is how the node confirms a profile.

`shipped_profiles_config_map` renders the ConfigMap the base ships; a test keeps the file in
the tree equal to it, so the names the program writes and the profiles Git ships are one list.
"""

from __future__ import annotations

from typing import Any

import yaml

from api.modules import MAX_SHARING_SLOTS, MIN_SHARING_SLOTS
from planning.hardware.capacity import quantity_count
from planning.hardware.sharing import EXCLUSIVE, Allocation
from planning.labels import FIELD_MANAGER_ANNOTATION
from planning.objects import DesiredObject
from planning.snapshot import Node

MODULE = "gpu"
TIME_SLICING = "time-slicing"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
"""The GPU Operator's per-node device-plugin configuration selector."""
DEVICE_PLUGIN_CONFIG_MAP = "magicstick-device-plugin-config"
DEVICE_PLUGIN_CONFIG_NAMESPACE = "gpu-operator"
PROFILE_PREFIX = "magicstick-time-slicing-"
GPU_RESOURCE = "nvidia.com/gpu"


def profile_name(slots: int) -> str:
    return f"{PROFILE_PREFIX}{slots}"


def profile_config(slots: int) -> dict[str, Any]:
    """The device-plugin configuration of one profile (k8s-device-plugin config version v1).

    Each physical GPU is advertised `slots` times under its own name; a request for more than
    one slot fails, since several slots of one GPU are never several GPUs.
    """
    return {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": GPU_RESOURCE, "replicas": slots}],
            }
        },
    }


def shipped_profiles_config_map() -> dict[str, Any]:
    """The ConfigMap of every profile, as the NVIDIA base ships it. Pure."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": DEVICE_PLUGIN_CONFIG_MAP, "namespace": DEVICE_PLUGIN_CONFIG_NAMESPACE},
        "data": {
            profile_name(slots): yaml.safe_dump(profile_config(slots), sort_keys=False)
            for slots in range(MIN_SHARING_SLOTS, MAX_SHARING_SLOTS + 1)
        },
    }


def applied_allocation(node: Node) -> Allocation | None:
    """What the node's label selects: exclusive without one, time-slicing for one of ours, None
    for a configuration Magic Stick did not write. Pure."""
    value = node.meta.labels.get(DEVICE_PLUGIN_CONFIG_LABEL)
    if value is None:
        return Allocation(EXCLUSIVE)
    slots = value.removeprefix(PROFILE_PREFIX)
    if value.startswith(PROFILE_PREFIX) and slots.isdigit() and MIN_SHARING_SLOTS <= int(slots) <= MAX_SHARING_SLOTS:
        return Allocation(TIME_SLICING, int(slots))
    return None


def carries_our_profile(node: Node) -> bool:
    return str(node.meta.labels.get(DEVICE_PLUGIN_CONFIG_LABEL, "")).startswith(PROFILE_PREFIX)


def advertised(node: Node) -> int:
    return quantity_count(node.allocatable.get(GPU_RESOURCE))


def confirms(node: Node, allocation: Allocation, physical_gpus: int) -> bool:
    """The device plugin advertises exactly `slots` (or 1) per physical GPU. Pure."""
    per_gpu = allocation.slots if allocation.shared and allocation.slots else 1
    return physical_gpus > 0 and advertised(node) == physical_gpus * per_gpu


def label_patch(node: str, allocation: Allocation, field_manager: str) -> DesiredObject | None:
    """The node label selecting `allocation`'s profile; None for exclusive (no label). Pure."""
    if not allocation.shared or allocation.slots is None:
        return None
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node,
            "labels": {DEVICE_PLUGIN_CONFIG_LABEL: profile_name(allocation.slots)},
            "annotations": {FIELD_MANAGER_ANNOTATION: field_manager},
        },
    }
    return DesiredObject.of(body, logical_name=f"node-{node}-nvidia-device-plugin-config", patch=True)
