"""Labels and annotations the program puts on what it generates, and how it recognises them."""

from __future__ import annotations

from collections.abc import Mapping

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "magicstick"
MODULE = "appliance.magicstick.dev/module"
ACTIVATION = "appliance.magicstick.dev/activation"
"""A label: the ModuleActivation that requested a module, fitted to 63 characters (planning.names);
the annotation of the same key holds the whole name."""
SEEDED_FROM = "appliance.magicstick.dev/seeded-from"
FIELD_MANAGER_ANNOTATION = "pulumi.com/patchFieldManager"


def is_generated(labels: Mapping[str, str]) -> bool:
    return labels.get(MANAGED_BY) == MANAGED_BY_VALUE


SEEDED = "appliance.magicstick.dev/seeded"

SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"
"""pulumi-kubernetes does not wait for the object to become ready inside `pulumi up`: the
program reads its state itself at the next run."""
