"""The user's intent: every runtime custom resource of the system namespace, parsed once.

A spec that fails validation is kept with its error instead of a parsed value, so the object
still gets a status that names the field and the rule (invariant 5) and whatever was generated
for it stays as it was last applied (invariant 6).

The status an object holds is the program's own record (timers, recovery attempts, the modules
it requested), but anyone with write access to /status can change it: a field the plan reads
that is not of the shape the plan writes reads as absent, so a hand-edited status can neither
fail the run nor steer it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from api.validation import SpecError, parse_spec
from planning.frozen import FrozenMap, freeze_map, thaw
from planning.settings import APPLIANCE_NAME
from planning.snapshot import RuntimeObject, Snapshot

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
    def valid_spec(self) -> SpecT:
        """The parsed spec, where the caller has already set rejected objects apart."""
        if self.spec is None:
            raise ValueError(f"{self.obj.kind}/{self.name} has no valid spec")
        return self.spec

    @property
    def enabled(self) -> bool:
        return self.spec is not None and bool(getattr(self.spec, "enabled", True))


@dataclass(frozen=True)
class Intent:
    appliance: Parsed[Any] | None
    module_activations: tuple[Parsed[Any], ...]
    model_activations: tuple[Parsed[Any], ...]
    app_instances: tuple[Parsed[Any], ...]


STATUS_FIELD_SHAPES: Mapping[str, type | tuple[type, ...]] = {
    "conditions": tuple,
    "module": str,
    "modules": Mapping,
    "requiredModules": tuple,
    "podCreation": Mapping,
    "podRecovery": Mapping,
    "memoryUsage": Mapping,
}
"""Previous-status fields the plan reads, and the (frozen) shape it writes them in."""


def previous_status(status: FrozenMap) -> FrozenMap:
    """`status` without the fields the plan reads that have another shape, and with only the
    mapping entries of `conditions`. Pure."""
    kept = {}
    for key, value in status.items():
        shape = STATUS_FIELD_SHAPES.get(key)
        if shape is not None and not isinstance(value, shape):
            continue
        if key == "conditions":
            value = tuple(c for c in value if isinstance(c, Mapping))
        kept[key] = value
    return freeze_map(kept)


def parse(obj: RuntimeObject) -> Parsed[Any]:
    obj = replace(obj, status=previous_status(obj.status))
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
