"""Parsing raw wire specs into typed specs, with one precise error per invalid spec.

``parse_spec`` is what planning calls on every runtime CR: it validates strictly by wire name
(camelCase only, no type coercion, as the API server would) and raises :class:`SpecError` for
the first rule broken, with the dotted wire path of the offending field. Errors come out in
field declaration order, so the same spec always yields the same error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from api.kinds import APPLIANCE_KINDS
from api.models import CpuResources

SPEC_TYPES: dict[str, type[BaseModel]] = {kind.kind: kind.spec_type for kind in APPLIANCE_KINDS}
"""The spec type of every kind in appliance.magicstick.dev/v1alpha1."""


class SpecError(ValueError):
    """A spec broke one rule. ``field`` is the dotted wire path, ``rule`` a sentence."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


def wire_path(loc: Sequence[str | int], *, root: str = "spec") -> str:
    """``('local', 'cpuResources', 'limitMillicores')`` -> ``spec.local.cpuResources.limitMillicores``.

    List positions render as ``[i]``.
    """
    path = root
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


_RULE_TEMPLATES: dict[str, str] = {
    "missing": "is required",
    "extra_forbidden": "is not a field of this API",
    "literal_error": "must be one of {expected}",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be greater than {gt}",
    "less_than_equal": "must be at most {le}",
    "too_long": "must have at most {max_length} entries",
    "string_too_long": "must have at most {max_length} characters",
    "string_pattern_mismatch": "must match {pattern}",
    "bool_type": "must be a boolean",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "string_type": "must be a string",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "list_type": "must be a list",
}
"""Rule sentences for pydantic's own error types, filled from the error context."""


def _rule(error: ErrorDetails) -> str:
    context: dict[str, Any] = dict(error.get("ctx") or {})
    kind = error["type"]
    if isinstance(context.get("error"), ValueError):
        return str(context["error"])
    if kind == "string_too_short":
        minimum = context["min_length"]
        return "must not be empty" if minimum == 1 else f"must have at least {minimum} characters"
    if kind in _RULE_TEMPLATES:
        return _RULE_TEMPLATES[kind].format(**context)
    message = error["msg"]
    return message[:1].lower() + message[1:]


def _alternatives(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, UnionType):
        return get_args(annotation)
    return (annotation,)


def _step(annotation: Any, part: str | int) -> tuple[str | int, Any]:
    """The wire form of one location part and the type found below it."""
    for candidate in _alternatives(annotation):
        origin = get_origin(candidate)
        if isinstance(candidate, type) and issubclass(candidate, BaseModel) and isinstance(part, str):
            fields = candidate.model_fields
            field = fields.get(part) or next((f for f in fields.values() if f.alias == part), None)
            if field is not None:
                return field.alias or part, field.annotation
        if origin is dict and isinstance(part, str):
            return part, get_args(candidate)[1]
        if origin is list and isinstance(part, int):
            return part, get_args(candidate)[0]
    return part, None


def _wire_loc(model: type[BaseModel], loc: Sequence[str | int]) -> list[str | int]:
    """Replace Python field names in ``loc`` by wire names, following the nested types.

    pydantic reports a defaulted field by its Python name even when it has an alias; an
    unknown key (``extra_forbidden``) is the caller's to keep verbatim.
    """
    wire: list[str | int] = []
    current: Any = model
    for part in loc:
        wire_part, current = _step(current, part)
        wire.append(wire_part)
    return wire


def spec_error(error: ValidationError, spec_type: type[BaseModel], *, root: str = "spec") -> SpecError:
    """The first error of a pydantic ValidationError of ``spec_type`` as a SpecError below ``root``."""
    first = error.errors(include_url=False)[0]
    loc = first["loc"]
    if first["type"] == "extra_forbidden":
        wire = [*_wire_loc(spec_type, loc[:-1]), loc[-1]]
    else:
        wire = _wire_loc(spec_type, loc)
    return SpecError(wire_path(wire, root=root), _rule(first))


def parse_spec(kind: str, spec: Mapping[str, Any] | None) -> BaseModel:
    """Validate the raw wire spec of one object of ``kind``; a missing spec is an empty one.

    Pure and deterministic. Raises SpecError for the first broken rule, and KeyError for a kind
    outside this API (a programming error, not a user error).
    """
    if kind not in SPEC_TYPES:
        raise KeyError(f"{kind} is not a kind of appliance.magicstick.dev/v1alpha1")
    spec_type = SPEC_TYPES[kind]
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise SpecError("spec", "must be an object")
    try:
        return spec_type.model_validate(dict(spec), strict=True, by_alias=True, by_name=False)
    except ValidationError as error:
        raise spec_error(error, spec_type) from error


def validate_cpu_resources(cpu: CpuResources | None, default_request_millicores: int) -> None:
    """Reject a positive CPU limit below the effective request of a local model.

    The effective request is the explicit ``requestMillicores`` or, when omitted,
    ``default_request_millicores`` from the engine/target catalog. ``limitMillicores: 0`` means
    no quota and always passes; an omitted limit is inherited and checked by the catalog. Pure.
    """
    if cpu is None or not cpu.limit_millicores:
        return
    explicit = cpu.request_millicores is not None
    request = cpu.request_millicores if cpu.request_millicores is not None else default_request_millicores
    if cpu.limit_millicores < request:
        source = "requestMillicores" if explicit else "the inherited engine default request"
        raise SpecError(
            "spec.local.cpuResources.limitMillicores",
            f"limitMillicores {cpu.limit_millicores} is below {source} of {request} millicores; "
            "a positive limit must be at least the effective request (0 means no quota)",
        )
