"""The defaults an API server writes into a custom resource, from its CRD's structural schema.

A test that fakes what the cluster returns must return what the cluster stores: the object as
applied plus every `default` of its CRD. `with_defaults` does what kube-apiserver's structural
defaulting does (`apiextensions-apiserver/pkg/apiserver/schema/defaulting`), in the same
order:

1. at an object node, a declared property that is null while not nullable is pruned, and
   every declared property that is then absent becomes a deep copy of its `default`;
2. then every field present (a default just set included, so a default object is itself
   defaulted below) is descended into with its own schema: a declared property with its
   property schema, any other key with `additionalProperties` when that is a schema;
3. at an array node, every item is descended into with `items`.

A field neither declared nor covered by `additionalProperties` (the unknown part kept by
`x-kubernetes-preserve-unknown-fields`) is never descended into: nothing is defaulted there.
Junctors (allOf, anyOf, oneOf, not) carry no defaults in a structural schema and are ignored.

The schemas are those `tests.support.crd_schema` loaded (`upstream_registry()` by default).
Pure: the input is never changed; a new object is returned.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tests.support.crd_schema import CrdSchemaRegistry, JsonObject, upstream_registry


def schema_of(obj: Mapping[str, Any], *, registry: CrdSchemaRegistry | None = None) -> JsonObject:
    """The openAPIV3Schema of the CRD version that serves `obj` (UnknownKindError if none)."""
    chosen = registry if registry is not None else upstream_registry()
    api_version, kind = obj["apiVersion"], obj["kind"]
    definition = chosen.definition_for(api_version, kind)
    return definition.versions[api_version.rpartition("/")[2]].schema


def with_defaults(obj: Mapping[str, Any], *, registry: CrdSchemaRegistry | None = None) -> dict[str, Any]:
    """`obj` as the API server stores it once its CRD's defaults are applied. Pure."""
    result = copy.deepcopy(dict(obj))
    _default_in_place(result, schema_of(obj, registry=registry))
    return result


def defaulted(value: Any, schema: JsonObject | None) -> Any:
    """`value` with the defaults of `schema` applied, recursively (see the module docstring). Pure."""
    result = copy.deepcopy(value)
    _default_in_place(result, schema)
    return result


def _default_in_place(value: Any, schema: JsonObject | None) -> None:
    if not isinstance(schema, Mapping):
        return
    if isinstance(value, dict):
        _default_object(value, schema)
    elif isinstance(value, list):
        for item in value:
            _default_in_place(item, schema.get("items"))


def _default_object(value: dict[str, Any], schema: JsonObject) -> None:
    properties: Mapping[str, JsonObject] = schema.get("properties") or {}
    for name, child in properties.items():
        if name in value and value[name] is None and child.get("nullable") is not True:
            del value[name]
        if "default" in child and name not in value:
            value[name] = copy.deepcopy(child["default"])
    additional = schema.get("additionalProperties")
    for name, item in value.items():
        if name in properties:
            _default_in_place(item, properties[name])
        elif isinstance(additional, Mapping):
            _default_in_place(item, additional)
