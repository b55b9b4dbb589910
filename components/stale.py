"""StaleRemoval: the removal of one generated object nothing declares any more (planning/stale.py)."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import Resource, ResourceProvider

from components.dynamic import PROBLEM
from planning.stale import StaleObject


class StaleRemoval(Resource, module="magicstick", name="StaleRemoval"):
    """Deletes one stale generated object under its UID; the provider is injected."""

    problem: pulumi.Output[Any]

    def __init__(self, stale: StaleObject, *, provider: ResourceProvider, opts: pulumi.ResourceOptions) -> None:
        props = {**stale.target.to_inputs(), PROBLEM: None}
        super().__init__(provider, stale.logical_name, props, opts)
