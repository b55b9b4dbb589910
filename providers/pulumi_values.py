"""Values as they come back through the Pulumi protocol.

The protocol carries every number as a double, so an integer such as observedGeneration
arrives as 3.0. Kubernetes integer fields must be written as integers again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def restore_integers(value: Any) -> Any:
    """A copy of `value` in which every whole float is an int again."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: restore_integers(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [restore_integers(item) for item in value]
    return value
