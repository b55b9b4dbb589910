"""The user's intent: every runtime custom resource of the system namespace, parsed once.

A spec that fails validation is kept with its error instead of a parsed value, so the object
still gets a status that names the field and the rule (invariant 5) and whatever was generated
for it stays as it was last applied (invariant 6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from api.validation import SpecError, parse_spec
from planning.frozen import thaw
from planning.snapshot import RuntimeObject, Snapshot
from planning.settings import APPLIANCE_NAME

SpecT = TypeVar("SpecT")


@dataclass(frozen=True)
class Parsed(Generic[SpecT]):
    obj: RuntimeObject
    spec: SpecT | None
    error: SpecError | None

    @property
    def name(self) -> str:
        return self.obj.meta.name

    @property
    def enabled(self) -> bool:
        return self.spec is not None and bool(getattr(self.spec, "enabled", True))


@dataclass(frozen=True)
class Intent:
    appliance: Parsed[Any] | None
    module_activations: tuple[Parsed[Any], ...]
    model_activations: tuple[Parsed[Any], ...]
    app_instances: tuple[Parsed[Any], ...]


def parse(obj: RuntimeObject) -> Parsed[Any]:
    try:
        return Parsed(obj=obj, spec=parse_spec(obj.kind, thaw(obj.spec)), error=None)
    except SpecError as error:
        return Parsed(obj=obj, spec=None, error=error)


def read_intent(snapshot: Snapshot, namespace: str) -> Intent:
    """Parse the runtime objects of `namespace`. Pure; sorted by name."""
    appliance = snapshot.runtime_object("Appliance", namespace, APPLIANCE_NAME)
    return Intent(
        appliance=parse(appliance) if appliance is not None else None,
        module_activations=tuple(parse(o) for o in snapshot.of_kind("ModuleActivation", namespace)),
        model_activations=tuple(parse(o) for o in snapshot.of_kind("ModelActivation", namespace)),
        app_instances=tuple(parse(o) for o in snapshot.of_kind("AppInstance", namespace)),
    )
