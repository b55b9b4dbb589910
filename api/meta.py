"""Shared building blocks of the appliance.magicstick.dev/v1alpha1 types.

Every type is a pydantic model whose Python attribute names are snake_case and whose wire
names (the names in Kubernetes YAML) are camelCase. Specs reject unknown fields so a typo
surfaces as a status message instead of being silently ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasGenerator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

GROUP = "appliance.magicstick.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"


class ApiModel(BaseModel):
    """Base of every API type: camelCase on the wire, immutable, unknown fields rejected.

    A subclass's own `model_config` adds to this one: pydantic merges it with its bases'."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(alias=to_camel),
        populate_by_name=True,
        frozen=True,
        extra="forbid",
    )

    def to_wire(self) -> dict[str, Any]:
        """The object as Kubernetes stores it: camelCase keys, unset optional fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(ApiModel):
    """A Kubernetes-style condition. lastTransitionTime changes only when status changes."""

    type: str
    status: ConditionStatus
    reason: str
    message: str = ""
    last_transition_time: str
    observed_generation: int | None = None
