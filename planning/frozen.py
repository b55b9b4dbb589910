"""Deeply immutable copies of raw Kubernetes data, and their way back to plain values.

The snapshot hands raw API bodies (specs, statuses, labels) to pure planning code. Freezing
them makes "the observed world" impossible to change by accident while a plan is computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

FrozenMap = Mapping[str, Any]
EMPTY: FrozenMap = MappingProxyType({})


def freeze(value: Any) -> Any:
    """Return a read-only deep copy: mappings become MappingProxyType, lists become tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(key): freeze(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(item) for item in value)
    return value


def freeze_map(value: Mapping[str, Any]) -> FrozenMap:
    """`freeze` of a mapping, typed as the read-only mapping it returns."""
    return MappingProxyType({str(key): freeze(item) for key, item in value.items()})


def thaw(value: Any) -> Any:
    """Return a plain, mutable deep copy (dicts and lists) of a frozen or plain value."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(item) for item in value]
    return value
