"""Values as they come back through the Pulumi protocol.

The protocol carries every number as a double, so an integer such as observedGeneration
arrives as 3.0. Kubernetes integer fields must be written as integers again. During a preview
a value not known yet arrives as an `Unknown` object or as the protocol's placeholder string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN


def is_unknown(value: Any) -> bool:
    """True for a value a preview does not know yet.

    The SDK hands `check` and `diff` an `Unknown` object; other paths carry the wire string.
    """
    return isinstance(value, Unknown) or (isinstance(value, str) and value == UNKNOWN)


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
