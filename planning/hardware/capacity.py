"""Accelerator capacity that Kubernetes actually publishes, per node and compute target.

Models gate on it (WaitingForGPU until an allocatable target resource exists) and Intel
models pick their KubeAI profile from it: a node publishes gpu.intel.com/xe or
gpu.intel.com/i915 depending on its kernel driver.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalogs import Catalogs
from planning.snapshot import Node


@dataclass(frozen=True)
class AcceleratorCapacity:
    node: str
    node_uid: str | None
    compute_target: str
    resource_name: str
    allocatable: int


def quantity_count(value: object) -> int:
    """An extended resource's allocatable count ("2" -> 2); anything else counts as 0."""
    try:
        return max(0, int(str(value)))
    except ValueError:
        return 0


def accelerator_capacity(nodes: tuple[Node, ...], catalogs: Catalogs) -> tuple[AcceleratorCapacity, ...]:
    """Every (node, accelerated target, resource) with a positive allocatable count, sorted."""
    found = []
    for node in nodes:
        for target in catalogs.compute_targets.entries:
            for resource in target.resource_names:
                count = quantity_count(node.allocatable.get(resource, 0))
                if count > 0:
                    found.append(
                        AcceleratorCapacity(
                            node=node.meta.name,
                            node_uid=node.meta.uid,
                            compute_target=target.name,
                            resource_name=resource,
                            allocatable=count,
                        )
                    )
    return tuple(sorted(found, key=lambda c: (c.node, c.compute_target, c.resource_name)))


def published_resource(
    capacity: tuple[AcceleratorCapacity, ...], compute_target: str, catalogs: Catalogs
) -> str | None:
    """The resource a model of `compute_target` should request: the first of the target's
    resource names (catalog order: xe before i915) that some node publishes."""
    target = catalogs.compute_targets.get(compute_target)
    if target is None:
        return None
    published = {c.resource_name for c in capacity if c.compute_target == compute_target}
    return next((name for name in target.resource_names if name in published), None)
