"""Conformance of Kubernetes objects to the schema of their CustomResourceDefinition.

A `CrdSchemaRegistry` loads CustomResourceDefinitions from YAML files and checks an object,
given as the dict `kubectl get -o yaml` would print, against the openAPIV3Schema of the
version its apiVersion names. The Kubernetes structural-schema dialect is translated to JSON
Schema draft 4 (whose boolean exclusiveMinimum/exclusiveMaximum it shares) and evaluated
with jsonschema.

What is checked, and why:

- apiVersion and kind are present, some loaded CRD defines the kind in that group, and the
  CRD serves that version: the API server refuses anything else.
- metadata as the API server validates it: name present and a DNS-1123 subdomain; namespace
  present (and a DNS-1123 label) for Namespaced kinds and absent for Cluster kinds; label
  keys and annotation keys are qualified names; label values are at most 63 characters of
  label syntax.
- The schema: types, enums, patterns, bounds, required fields, uniqueness in
  `x-kubernetes-list-type` set and map lists, and the formats int32 and int64 (range),
  date-time, duration and byte. Other formats are not checked: the API server ignores
  formats it does not know, and checking a format more strictly than it does would report
  errors the cluster would never raise.
- `x-kubernetes-int-or-string` accepts an integer or a string; `nullable: true` accepts
  null; `x-kubernetes-embedded-resource` requires apiVersion and kind and admits metadata;
  `x-kubernetes-preserve-unknown-fields` keeps undeclared fields at its own node (declared
  fields below it are still checked).
- Unknown fields. The API server does not reject a field the schema does not declare: it
  prunes it silently, so a typo in a rendered object becomes a setting that never arrives.
  Here every field pruning would drop is an error ("unknown field spec.foo"). A null in a
  field that is neither nullable nor defaulted is likewise dropped by the server and is
  reported here as a type error.
- Defaults. The API server applies a field's `default` before it validates, so a required
  field that has a default is never missing, and a null in a field with a default becomes
  the default; neither is an error here. Default values themselves are not validated.

What is not checked: CEL rules (`x-kubernetes-validations`) cannot be evaluated here and
are ignored, so a rule such as "exactly one of a or b" is never enforced by this module.
Patterns run on Python's `re`, not Go's RE2; the two differ in corners (for example `$`
also matches before a final newline in Python).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# jsonschema ships no type information and its stubs (types-jsonschema) are not installed.
from jsonschema import Draft4Validator, FormatChecker, ValidationError  # type: ignore[import-untyped]
from jsonschema.protocols import Validator  # type: ignore[import-untyped]
from jsonschema.validators import extend  # type: ignore[import-untyped]

from tests.support.vendored import VENDORED_CRDS

JsonObject = Mapping[str, Any]

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML_SUFFIXES = frozenset({".yaml", ".yml"})


class UnknownKindError(LookupError):
    """No loaded CRD serves the requested group, version and kind."""


@dataclass(frozen=True)
class CrdVersion:
    """One entry of a CRD's spec.versions: its name, whether it is served, its schema."""

    name: str
    served: bool
    schema: JsonObject


@dataclass(frozen=True)
class CrdDefinition:
    """What validation needs from one CustomResourceDefinition, and the file it came from."""

    group: str
    kind: str
    namespaced: bool
    versions: Mapping[str, CrdVersion]
    source: Path

    @property
    def served_versions(self) -> tuple[str, ...]:
        """Names of the versions the API server serves, in CRD order."""
        return tuple(name for name, version in self.versions.items() if version.served)


class CrdSchemaRegistry:
    """CustomResourceDefinitions by group and kind, with validators for their served versions."""

    def __init__(self, *sources: str | os.PathLike[str]) -> None:
        """Load every CRD in the given YAML files and directories (searched recursively).

        Multi-document files are allowed and documents that are not CRDs are skipped. A
        source without any CRD, and a kind defined twice, are errors: both mean the registry
        is not validating against what the caller thinks it is.
        """
        if not sources:
            raise ValueError("CrdSchemaRegistry needs at least one CRD file or directory")
        self._definitions: dict[tuple[str, str], CrdDefinition] = {}
        self._validators: dict[tuple[str, str, str], Validator] = {}
        for source in sources:
            for definition in _load_definitions(Path(source)):
                self._add(definition)

    def _add(self, definition: CrdDefinition) -> None:
        key = (definition.group, definition.kind)
        existing = self._definitions.get(key)
        if existing is not None:
            raise ValueError(
                f"{definition.kind}.{definition.group} is defined twice:"
                f" in {existing.source} and in {definition.source}"
            )
        self._definitions[key] = definition

    @property
    def definitions(self) -> tuple[CrdDefinition, ...]:
        """Every loaded CRD, in load order."""
        return tuple(self._definitions.values())

    def definition_for(self, api_version: str, kind: str) -> CrdDefinition:
        """The CRD that serves `kind` at `api_version`; UnknownKindError if none does."""
        definition, _ = self._served_version(api_version, kind)
        return definition

    def validator_for(self, api_version: str, kind: str) -> Validator:
        """A jsonschema validator for `kind` at `api_version`, built once per version.

        It checks the schema of the whole object (see the module docstring) but not the
        metadata rules the API server applies outside the schema; `errors` does both.
        Raises UnknownKindError when no loaded CRD serves that group, version and kind.
        """
        definition, version = self._served_version(api_version, kind)
        key = (definition.group, version.name, definition.kind)
        if key not in self._validators:
            self._validators[key] = CrdValidator(to_json_schema(version.schema), format_checker=FORMAT_CHECKER)
        return self._validators[key]

    def errors(self, obj: object) -> list[str]:
        """Every reason `obj` does not conform, as "path: problem" lines; empty if it does."""
        if not isinstance(obj, Mapping):
            return [f"(object): expected a mapping, got {type(obj).__name__}"]
        identity = identity_errors(obj)
        if identity:
            return identity
        try:
            definition = self.definition_for(obj["apiVersion"], obj["kind"])
        except UnknownKindError as error:
            return [str(error)]
        validator = self.validator_for(obj["apiVersion"], obj["kind"])
        return [
            *metadata_errors(obj.get("metadata"), definition),
            *schema_errors(validator, obj),
        ]

    def assert_valid(self, obj: object) -> None:
        """Raise AssertionError listing every error of `obj`; for use in tests."""
        found = self.errors(obj)
        if found:
            raise AssertionError("object does not conform to its CRD:\n" + "\n".join(found))

    def _served_version(self, api_version: str, kind: str) -> tuple[CrdDefinition, CrdVersion]:
        group, _, version_name = api_version.rpartition("/")
        definition = self._definitions.get((group, kind))
        if definition is None:
            raise UnknownKindError(f"kind: no CustomResourceDefinition defines {kind} in group {group or '(core)'}")
        served = ", ".join(definition.served_versions) or "none"
        version = definition.versions.get(version_name)
        if version is None:
            raise UnknownKindError(f"apiVersion: {api_version} is not a version of {kind}.{group} (served: {served})")
        if not version.served:
            raise UnknownKindError(f"apiVersion: {api_version} is not served for {kind}.{group} (served: {served})")
        return definition, version


def upstream_registry() -> CrdSchemaRegistry:
    """A registry of every vendored upstream CRD (`third_party/crds/`), loaded once per process."""
    return _registry_for(VENDORED_CRDS.resolve())


@functools.cache
def _registry_for(directory: Path) -> CrdSchemaRegistry:
    return CrdSchemaRegistry(directory)


def _yaml_files(source: Path) -> list[Path]:
    if source.is_dir():
        return sorted(path for path in source.rglob("*") if path.is_file() and path.suffix in _YAML_SUFFIXES)
    if source.is_file():
        return [source]
    raise FileNotFoundError(f"no CRD file or directory at {source}")


def _load_definitions(source: Path) -> list[CrdDefinition]:
    definitions: list[CrdDefinition] = []
    for path in _yaml_files(source):
        with path.open(encoding="utf-8") as stream:
            documents = list(yaml.load_all(stream, Loader=_YAML_LOADER))
        definitions.extend(_definition(document, path) for document in documents if _is_crd(document))
    if not definitions:
        raise ValueError(f"no CustomResourceDefinition in {source}")
    return definitions


def _is_crd(document: object) -> bool:
    return (
        isinstance(document, Mapping)
        and document.get("kind") == "CustomResourceDefinition"
        and str(document.get("apiVersion", "")).startswith("apiextensions.k8s.io/")
    )


_PRESERVE_EVERYTHING: JsonObject = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _definition(document: JsonObject, source: Path) -> CrdDefinition:
    """Read a CRD; apiextensions.k8s.io/v1beta1 layouts (spec.version, spec.validation) too."""
    try:
        spec = document["spec"]
        shared_schema = (spec.get("validation") or {}).get("openAPIV3Schema")
        entries = spec.get("versions") or [{"name": spec["version"], "served": True}]
        versions = {
            entry["name"]: CrdVersion(
                name=entry["name"],
                served=entry.get("served") is True,
                schema=(entry.get("schema") or {}).get("openAPIV3Schema") or shared_schema or _PRESERVE_EVERYTHING,
            )
            for entry in entries
        }
        return CrdDefinition(
            group=spec["group"],
            kind=spec["names"]["kind"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            versions=versions,
            source=source,
        )
    except KeyError as missing:
        name = (document.get("metadata") or {}).get("name", "?")
        raise ValueError(f"{source}: CustomResourceDefinition {name} lacks {missing}") from None


def identity_errors(obj: JsonObject) -> list[str]:
    """apiVersion and kind must be non-empty strings before a CRD can even be chosen."""
    errors: list[str] = []
    for field in ("apiVersion", "kind"):
        value = obj.get(field)
        if value is None:
            errors.append(f"{field}: required field is missing")
        elif not isinstance(value, str) or not value:
            errors.append(f"{field}: must be a non-empty string, got {value!r}")
    return errors


_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL)
_DNS1123_SUBDOMAIN_RE = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
_LABEL_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_MAX_ANNOTATIONS_BYTES = 256 * 1024


def _dns1123_subdomain_problem(value: str) -> str | None:
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        return (
            "must be a DNS-1123 subdomain: lowercase alphanumerics, '-' and '.',"
            " starting and ending with an alphanumeric"
        )
    return None


def _dns1123_label_problem(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS1123_LABEL_RE.fullmatch(value):
        return "must be a DNS-1123 label: lowercase alphanumerics and '-', starting and ending with an alphanumeric"
    return None


def _qualified_name_problem(key: str) -> str | None:
    """Label and annotation keys: an optional DNS-1123 subdomain prefix and '/', then a name."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or _dns1123_subdomain_problem(prefix)):
        return "key prefix must be a DNS-1123 subdomain of at most 253 characters"
    if len(name) > 63:
        return "key name must be no more than 63 characters"
    if not _LABEL_NAME_RE.fullmatch(name):
        return "key name must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
    return None


def _label_value_problem(value: str) -> str | None:
    if len(value) > 63:
        return f"value must be no more than 63 characters (has {len(value)})"
    if value and not _LABEL_NAME_RE.fullmatch(value):
        return "value must be empty or alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
    return None


def metadata_errors(metadata: object, definition: CrdDefinition) -> list[str]:
    """The ObjectMeta rules the API server enforces outside the CRD schema.

    Wrongly typed fields are left to the schema, which reports them once.
    """
    if metadata is None:
        return ["metadata: required field is missing"]
    if not isinstance(metadata, Mapping):
        return []
    return [
        *_name_errors(metadata.get("name")),
        *_namespace_errors(metadata.get("namespace"), definition),
        *_key_value_errors("labels", metadata.get("labels"), _label_value_problem),
        *_key_value_errors("annotations", metadata.get("annotations"), None),
        *_annotation_size_errors(metadata.get("annotations")),
    ]


def _name_errors(name: object) -> list[str]:
    if name is None:
        return ["metadata.name: required field is missing"]
    if not isinstance(name, str):
        return []
    problem = _dns1123_subdomain_problem(name)
    return [f"metadata.name: {name!r} {problem}"] if problem else []


def _namespace_errors(namespace: object, definition: CrdDefinition) -> list[str]:
    if not definition.namespaced:
        if namespace:
            return [f"metadata.namespace: not allowed for cluster-scoped kind {definition.kind}"]
        return []
    if namespace is None or namespace == "":
        return [f"metadata.namespace: required for namespaced kind {definition.kind}"]
    if not isinstance(namespace, str):
        return []
    problem = _dns1123_label_problem(namespace)
    return [f"metadata.namespace: {namespace!r} {problem}"] if problem else []


def _key_value_errors(field: str, entries: object, value_problem: Callable[[str], str | None] | None) -> list[str]:
    if not isinstance(entries, Mapping):
        return []
    errors: list[str] = []
    for key, value in entries.items():
        path = _field_path(["metadata", field, str(key)])
        problems = [_qualified_name_problem(str(key))]
        if value_problem is not None and isinstance(value, str):
            problems.append(value_problem(value))
        errors.extend(f"{path}: {problem}" for problem in problems if problem)
    return errors


def _annotation_size_errors(annotations: object) -> list[str]:
    if not isinstance(annotations, Mapping):
        return []
    size = sum(len(str(key).encode()) + len(str(value).encode()) for key, value in annotations.items())
    if size > _MAX_ANNOTATIONS_BYTES:
        return [f"metadata.annotations: total size {size} bytes exceeds {_MAX_ANNOTATIONS_BYTES}"]
    return []


def schema_errors(validator: Validator, obj: JsonObject) -> list[str]:
    found = sorted(validator.iter_errors(obj), key=_error_order)
    return list(dict.fromkeys(_describe(error) for error in found))


def _error_order(error: ValidationError) -> tuple[str, str]:
    return _field_path(error.absolute_path), error.message


def _describe(error: ValidationError) -> str:
    path = _field_path(error.absolute_path)
    if error.validator == "additionalProperties":
        return f"unknown field {path}"
    return f"{path or '(object)'}: {error.message}"


_PLAIN_KEY_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")


def _field_path(parts: Iterable[str | int]) -> str:
    """`spec.dependsOn[0].name`; keys that are not identifiers go in brackets: `labels[a.b/c]`."""
    path = ""
    for part in parts:
        if isinstance(part, int) or not _PLAIN_KEY_RE.fullmatch(part):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


# Translation of the structural-schema dialect to JSON Schema draft 4.

_COPIED_KEYWORDS = (
    "format",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "maxProperties",
    "minProperties",
    "default",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
)
_JUNCTORS = ("allOf", "anyOf", "oneOf")

_STRING: JsonObject = {"type": "string"}
_STRING_MAP: JsonObject = {"type": "object", "additionalProperties": _STRING}
_OWNER_REFERENCE: JsonObject = {
    "type": "object",
    "required": ["apiVersion", "kind", "name", "uid"],
    "properties": {
        "apiVersion": _STRING,
        "kind": _STRING,
        "name": _STRING,
        "uid": _STRING,
        "controller": {"type": "boolean"},
        "blockOwnerDeletion": {"type": "boolean"},
    },
    "additionalProperties": False,
}
_OBJECT_META_PROPERTIES: JsonObject = {
    "name": _STRING,
    "generateName": _STRING,
    "namespace": _STRING,
    "uid": _STRING,
    "resourceVersion": _STRING,
    "selfLink": _STRING,
    "generation": {"type": "integer", "format": "int64"},
    "creationTimestamp": {"type": ["string", "null"], "format": "date-time"},
    "deletionTimestamp": {"type": "string", "format": "date-time"},
    "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
    "labels": _STRING_MAP,
    "annotations": _STRING_MAP,
    "finalizers": {"type": "array", "items": _STRING},
    "ownerReferences": {"type": "array", "items": _OWNER_REFERENCE},
    "managedFields": {"type": "array", "items": {"type": "object"}},
}


def to_json_schema(openapi_v3_schema: JsonObject) -> dict[str, Any]:
    """The JSON Schema (draft 4) of a whole object from a CRD version's openAPIV3Schema.

    apiVersion and kind are strings and metadata is an ObjectMeta whatever the CRD declares
    for them, as at the API server; the CRD's own metadata constraints still apply.
    """
    root = _translate(openapi_v3_schema, prunes=True)
    declared = openapi_v3_schema.get("properties") or {}
    properties = dict(root.get("properties", {}))
    properties["apiVersion"] = properties.get("apiVersion", _STRING)
    properties["kind"] = properties.get("kind", _STRING)
    properties["metadata"] = _object_meta_schema(declared.get("metadata"))
    return {**root, "type": "object", "properties": properties}


def _object_meta_schema(declared: JsonObject | None) -> dict[str, Any]:
    """ObjectMeta with unknown fields reported; a CRD's declared constraints are added to it."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": _OBJECT_META_PROPERTIES,
        "additionalProperties": False,
    }
    if declared:
        schema["allOf"] = [_translate(declared, prunes=False)]
    return schema


def _translate(node: JsonObject, *, prunes: bool) -> dict[str, Any]:
    """One structural-schema node as JSON Schema.

    `prunes` is false inside allOf/anyOf/oneOf/not: there a schema only restricts values and
    may list a subset of the properties, so undeclared fields must not be reported there.
    """
    out: dict[str, Any] = {key: node[key] for key in _COPIED_KEYWORDS if key in node}
    accepts_null = node.get("nullable") is True or "default" in node
    types = _types(node)
    if types:
        all_types = [*types, "null"] if accepts_null else types
        out["type"] = all_types[0] if len(all_types) == 1 else all_types
    if node.get("required"):
        out["required"] = list(node["required"])
    if "enum" in node:
        enum = list(node["enum"])
        out["enum"] = [*enum, None] if accepts_null and None not in enum else enum
    if "items" in node:
        out["items"] = _translate_items(node["items"], prunes=prunes)
    for junctor in _JUNCTORS:
        if junctor in node:
            out[junctor] = [_translate(branch, prunes=False) for branch in node[junctor]]
    if "not" in node:
        out["not"] = _translate(node["not"], prunes=False)
    declared = node.get("properties") or {}
    properties = {name: _translate(child, prunes=prunes) for name, child in declared.items()}
    if node.get("x-kubernetes-embedded-resource") is True:
        properties = _with_embedded_resource_fields(properties, declared.get("metadata"))
        out["required"] = sorted({*out.get("required", ()), "apiVersion", "kind"})
    if properties:
        out["properties"] = properties
    out.update(_additional_properties(node, prunes=prunes))
    return out


def _types(node: JsonObject) -> list[str]:
    if node.get("x-kubernetes-int-or-string") is True:
        return ["integer", "string"]
    declared = node.get("type")
    return [declared] if isinstance(declared, str) else []


def _translate_items(items: object, *, prunes: bool) -> dict[str, Any] | list[dict[str, Any]]:
    if isinstance(items, list):
        return [_translate(item, prunes=prunes) for item in items]
    if isinstance(items, Mapping):
        return _translate(items, prunes=prunes)
    return {}


def _with_embedded_resource_fields(
    properties: Mapping[str, Any], declared_metadata: JsonObject | None
) -> dict[str, Any]:
    """An embedded resource keeps apiVersion and kind, both non-empty, and an ObjectMeta."""

    def non_empty_string(declared: object) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string", "minLength": 1}
        return {**schema, "allOf": [declared]} if declared else schema

    return {
        **properties,
        "apiVersion": non_empty_string(properties.get("apiVersion")),
        "kind": non_empty_string(properties.get("kind")),
        "metadata": _object_meta_schema(declared_metadata),
    }


def _additional_properties(node: JsonObject, *, prunes: bool) -> dict[str, Any]:
    """Where the API server would prune undeclared fields, declare them not allowed."""
    additional = node.get("additionalProperties")
    if isinstance(additional, Mapping):
        return {"additionalProperties": _translate(additional, prunes=prunes)}
    if isinstance(additional, bool):
        return {"additionalProperties": additional}
    is_object = node.get("type") == "object" or "properties" in node
    preserves = node.get("x-kubernetes-preserve-unknown-fields") is True
    if prunes and is_object and not preserves:
        return {"additionalProperties": False}
    return {}


# Validation keywords and formats.


def _required(
    validator: Validator, required: list[str], instance: object, schema: JsonObject
) -> Iterator[ValidationError]:
    """Report a missing field at its own path ("spec.sourceRef: required field is missing").

    A field with a default is never missing: the API server fills it in before validating.
    """
    if not isinstance(instance, Mapping):
        return
    properties = schema.get("properties", {})
    for name in required:
        if name not in instance and "default" not in properties.get(name, {}):
            yield ValidationError("required field is missing", path=(name,))


def _additional(
    validator: Validator, additional: object, instance: object, schema: JsonObject
) -> Iterator[ValidationError]:
    """Report each undeclared field at its own path; `_describe` renders it as unknown."""
    if not isinstance(instance, Mapping):
        return
    declared = schema.get("properties", {})
    extras = [name for name in instance if name not in declared]
    if isinstance(additional, Mapping):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif additional is False:
        for name in extras:
            yield ValidationError("unknown field", path=(name,))


def _list_type(
    validator: Validator, list_type: object, instance: object, schema: JsonObject
) -> Iterator[ValidationError]:
    """`set` lists hold distinct values; `map` lists hold distinct x-kubernetes-list-map-keys."""
    if not isinstance(instance, list) or list_type not in ("set", "map"):
        return
    key_names = list(schema.get("x-kubernetes-list-map-keys", ()))
    key_defaults = _map_key_defaults(schema, key_names)
    seen: dict[str, int] = {}
    for index, item in enumerate(instance):
        if list_type == "map":
            if not isinstance(item, Mapping):
                continue
            key: object = {name: item.get(name, key_defaults.get(name)) for name in key_names}
        else:
            key = item
        fingerprint = json.dumps(key, sort_keys=True, default=str)
        if fingerprint in seen:
            what = "key" if list_type == "map" else "value"
            yield ValidationError(f"duplicate {what} {fingerprint} (also at [{seen[fingerprint]}])", path=(index,))
        else:
            seen[fingerprint] = index


def _map_key_defaults(schema: JsonObject, key_names: list[str]) -> dict[str, object]:
    items = schema.get("items")
    properties = items.get("properties", {}) if isinstance(items, Mapping) else {}
    return {
        name: properties[name]["default"] for name in key_names if name in properties and "default" in properties[name]
    }


CrdValidator = extend(
    Draft4Validator,
    validators={
        "required": _required,
        "additionalProperties": _additional,
        "x-kubernetes-list-type": _list_type,
    },
)
"""Draft 4 with Kubernetes-style required/unknown-field errors and list-type uniqueness."""


def _is_int32(value: object) -> bool:
    """In the range of Go's int32, which a controller decodes the field into."""
    return not isinstance(value, int) or -(2**31) <= value < 2**31


def _is_int64(value: object) -> bool:
    """In the range of Go's int64, which a controller decodes the field into."""
    return not isinstance(value, int) or -(2**63) <= value < 2**63


_DATE_TIME_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)"
    r"(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def _is_date_time(value: object) -> bool:
    """RFC 3339, as the API server's date-time format accepts it."""
    if not isinstance(value, str):
        return True
    match = _DATE_TIME_RE.fullmatch(value)
    if match is None:
        return False
    year, month, day = (int(group) for group in match.group(1, 2, 3))
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return True


_GO_DURATION_RE = re.compile(r"[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)")
_UNIT_WORDS = (
    r"ns|nano[a-z]*|us|µs|micro[a-z]*|ms|milli[a-z]*|s|sec[a-z]*|m|min[a-z]*"
    r"|h|hr|hour[a-z]*|d|day[a-z]*|w|wk|week[a-z]*"
)
_WORDY_DURATION_RE = re.compile(rf"\s*([0-9]+\s*({_UNIT_WORDS})\s*)+", re.IGNORECASE)


def _is_duration(value: object) -> bool:
    """Go's time.ParseDuration syntax, or the "3 days 4h" form the API server also accepts."""
    if not isinstance(value, str):
        return True
    return bool(_GO_DURATION_RE.fullmatch(value) or _WORDY_DURATION_RE.fullmatch(value))


def _is_base64(value: object) -> bool:
    """Standard base64 with padding, as the API server's byte format requires."""
    if not isinstance(value, str):
        return True
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        return False
    return True


def _format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())
    checks: dict[str, Callable[[object], bool]] = {
        "int32": _is_int32,
        "int64": _is_int64,
        "date-time": _is_date_time,
        "duration": _is_duration,
        "byte": _is_base64,
    }
    for name, check in checks.items():
        checker.checks(name)(check)
    return checker


FORMAT_CHECKER = _format_checker()
"""The formats checked: int32, int64, date-time, duration and byte (see module docstring)."""
