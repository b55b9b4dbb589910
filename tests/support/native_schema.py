"""Conformance of Kubernetes built-in objects to the upstream OpenAPI v3 documents.

The test kube-apiserver does not serve the MutatingAdmissionPolicy kinds
(admissionregistration.k8s.io/v1beta1, a beta API off unless a cluster's administrator turns
it on), so a server-side dry run cannot check them; `resource.k8s.io/v1` it serves (the shared
claim passes its dry run in tests/live/test_sharing_objects_dry_run.py), and the planning tests
that run without a server check it here too. This module checks them against the OpenAPI v3
documents Kubernetes publishes for each API group version
(`api/openapi-spec/v3/apis__<group>__<version>_openapi.json`), vendored unmodified under
`third_party/kubernetes/` (see its SOURCES.md).

A `NativeSchemaRegistry` finds the schema of an object's apiVersion and kind through the
`x-kubernetes-group-version-kind` extension in `components.schemas`, and validates with
jsonschema (draft 4, which OpenAPI 3.0 schemas follow); `$ref`s, including the
`allOf: [{$ref}]` wrapper Kubernetes uses to give a reference a default or a description,
resolve through a `referencing` registry holding each document.

What is checked, and why:

- apiVersion and kind name a kind some vendored document defines; metadata as for CRDs
  (`crd_schema`): name, namespace for namespaced kinds only (read from the document's
  paths), label and annotation keys and values.
- The schema: types (`x-kubernetes-int-or-string` accepts an integer or a string,
  `nullable` accepts null), `oneOf` (Quantity is a string or a number), formats int32,
  int64, date-time, duration and byte, and uniqueness in `x-kubernetes-list-type` set and
  map lists.
- Required fields, whether or not the document gives them a `default`: for built-in kinds
  the `default` in these documents is the Go zero value, which the API server does not fill
  in; its Go validation reports the field as required.
- Unknown fields. The documents do not set `additionalProperties: false`, but the API server
  drops an undeclared field (or refuses it under strict field validation), so every object
  schema with declared properties is closed here: a typo is "unknown field spec.foo".
  Schemas without properties (RawExtension, FieldsV1) and maps (`additionalProperties`
  given) stay open.
- Enumerations. The documents list the allowed values of a string field only in its
  description; the API server enforces them in Go. `ENUMS` restates the values of the
  fields the program renders, and the tests check that each listed value appears in the
  upstream description of its field.

What is not checked: the rest of the Go validation (for example "one of name or selector",
"at least one mutation", CEL expressions compiling) and CEL rules.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

# jsonschema ships no type information and its stubs (types-jsonschema) are not installed.
from jsonschema import ValidationError  # type: ignore[import-untyped]
from jsonschema.protocols import Validator  # type: ignore[import-untyped]
from jsonschema.validators import extend  # type: ignore[import-untyped]
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from tests.support.crd_schema import (
    FORMAT_CHECKER,
    CrdDefinition,
    CrdValidator,
    UnknownKindError,
    identity_errors,
    metadata_errors,
    schema_errors,
)
from tests.support.vendored import REPOSITORY_ROOT

JsonObject = Mapping[str, Any]

VENDORED_KUBERNETES: Final = REPOSITORY_ROOT / "third_party" / "kubernetes"
"""Unmodified Kubernetes OpenAPI v3 documents, their LICENSE and SOURCES.md."""

_SCHEMAS_POINTER: Final = "#/components/schemas/"
_SHARED_PREFIX: Final = "io.k8s.apimachinery."
"""Schemas every document repeats (DeleteOptions, WatchEvent): they name many kinds, own none."""

ENUMS: Final[Mapping[str, tuple[str, ...]]] = {
    "io.k8s.api.resource.v1.ExactDeviceRequest.allocationMode": ("ExactCount", "All"),
    "io.k8s.api.resource.v1.DeviceSubRequest.allocationMode": ("ExactCount", "All"),
    "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicySpec.failurePolicy": (
        "Ignore",
        "Fail",
    ),
    "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicySpec.reinvocationPolicy": (
        "Never",
        "IfNeeded",
    ),
    "io.k8s.api.admissionregistration.v1beta1.Mutation.patchType": (
        "ApplyConfiguration",
        "JSONPatch",
    ),
    "io.k8s.api.admissionregistration.v1beta1.MatchResources.matchPolicy": ("Exact", "Equivalent"),
    "io.k8s.api.admissionregistration.v1beta1.NamedRuleWithOperations.operations": (
        "*",
        "CREATE",
        "UPDATE",
        "DELETE",
        "CONNECT",
    ),
    "io.k8s.api.admissionregistration.v1beta1.NamedRuleWithOperations.scope": (
        "*",
        "Cluster",
        "Namespaced",
    ),
    "io.k8s.api.admissionregistration.v1beta1.ParamRef.parameterNotFoundAction": (
        "Allow",
        "Deny",
    ),
}
"""Allowed values by `<schema name>.<property>`; for an array property, of its items."""


@dataclass(frozen=True)
class NativeKind:
    """Where one group, version and kind is defined: its document and schema name."""

    group: str
    version: str
    kind: str
    namespaced: bool
    schema_name: str
    source: Path

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


class NativeSchemaRegistry:
    """Built-in kinds by apiVersion and kind, from Kubernetes OpenAPI v3 documents."""

    def __init__(self, *sources: str | Path) -> None:
        """Load every `*.json` OpenAPI v3 document in the given files and directories.

        A source without any document, and a kind defined twice, are errors.
        """
        if not sources:
            raise ValueError("NativeSchemaRegistry needs at least one OpenAPI document")
        self._kinds: dict[tuple[str, str], NativeKind] = {}
        self._validators: dict[tuple[str, str], Validator] = {}
        resources: list[tuple[str, Resource[Any]]] = []
        for source in sources:
            paths = _json_files(Path(source))
            if not paths:
                raise ValueError(f"no OpenAPI document in {source}")
            for path in paths:
                document = json.loads(path.read_text(encoding="utf-8"))
                resources.append((_uri(path), DRAFT4.create_resource(to_json_schema(document))))
                for kind in _kinds_of(document, path):
                    self._add(kind)
        self._registry: Registry[Any] = Registry().with_resources(resources)

    def _add(self, kind: NativeKind) -> None:
        key = (kind.api_version, kind.kind)
        existing = self._kinds.get(key)
        if existing is not None:
            raise ValueError(
                f"{kind.kind} {kind.api_version} is defined twice: in {existing.source} and in {kind.source}"
            )
        self._kinds[key] = kind

    @property
    def kinds(self) -> tuple[NativeKind, ...]:
        """Every loaded kind, in load order."""
        return tuple(self._kinds.values())

    def kind_for(self, api_version: str, kind: str) -> NativeKind:
        """Where `kind` at `api_version` is defined; UnknownKindError if nowhere."""
        found = self._kinds.get((api_version, kind))
        if found is None:
            known = sorted(v for v, k in self._kinds if k == kind)
            raise UnknownKindError(
                f"apiVersion: no vendored Kubernetes OpenAPI document defines {kind}"
                f" in {api_version} (vendored: {', '.join(known) or 'none'})"
            )
        return found

    def validator_for(self, api_version: str, kind: str) -> Validator:
        """A jsonschema validator of the whole object, built once per kind."""
        native = self.kind_for(api_version, kind)
        key = (native.api_version, native.kind)
        if key not in self._validators:
            reference = {"$ref": f"{_uri(native.source)}{_SCHEMAS_POINTER}{native.schema_name}"}
            self._validators[key] = NativeValidator(reference, registry=self._registry, format_checker=FORMAT_CHECKER)
        return self._validators[key]

    def errors(self, obj: object) -> list[str]:
        """Every reason `obj` does not conform, as "path: problem" lines; empty if it does."""
        if not isinstance(obj, Mapping):
            return [f"(object): expected a mapping, got {type(obj).__name__}"]
        identity = identity_errors(obj)
        if identity:
            return identity
        try:
            native = self.kind_for(obj["apiVersion"], obj["kind"])
        except UnknownKindError as error:
            return [str(error)]
        identity_for_metadata = CrdDefinition(
            group=native.group,
            kind=native.kind,
            namespaced=native.namespaced,
            versions={},
            source=native.source,
        )
        return [
            *metadata_errors(obj.get("metadata"), identity_for_metadata),
            *schema_errors(self.validator_for(obj["apiVersion"], obj["kind"]), obj),
        ]

    def assert_valid(self, obj: object) -> None:
        """Raise AssertionError listing every error of `obj`; for use in tests."""
        found = self.errors(obj)
        if found:
            raise AssertionError("object does not conform to its schema:\n" + "\n".join(found))


def native_registry() -> NativeSchemaRegistry:
    """A registry of every vendored Kubernetes OpenAPI document, loaded once per process."""
    return _registry_for(VENDORED_KUBERNETES.resolve())


@functools.cache
def _registry_for(directory: Path) -> NativeSchemaRegistry:
    return NativeSchemaRegistry(directory)


def _json_files(source: Path) -> list[Path]:
    if source.is_dir():
        return sorted(path for path in source.rglob("*.json") if path.is_file())
    if source.is_file():
        return [source]
    raise FileNotFoundError(f"no OpenAPI document or directory at {source}")


def _uri(path: Path) -> str:
    return path.resolve().as_uri()


def _kinds_of(document: JsonObject, source: Path) -> Iterable[NativeKind]:
    namespaced = _namespaced_kinds(document)
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        if name.startswith(_SHARED_PREFIX):
            continue
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            yield NativeKind(
                group=gvk["group"],
                version=gvk["version"],
                kind=gvk["kind"],
                namespaced=(gvk["group"], gvk["version"], gvk["kind"]) in namespaced,
                schema_name=name,
                source=source,
            )


def _namespaced_kinds(document: JsonObject) -> set[tuple[str, str, str]]:
    """Kinds created under a `/namespaces/{namespace}/` path are namespaced."""
    found: set[tuple[str, str, str]] = set()
    for path, operations in document.get("paths", {}).items():
        if "{namespace}" not in path:
            continue
        for operation in operations.values():
            if isinstance(operation, Mapping) and operation.get("x-kubernetes-action") == "post":
                gvk = operation.get("x-kubernetes-group-version-kind", {})
                found.add((gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")))
    return found


# Translation of the OpenAPI v3 components to closed JSON Schema draft 4.

_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")


def to_json_schema(document: JsonObject) -> dict[str, Any]:
    """The document's `components.schemas`, closed against unknown fields, enums added.

    Paths and everything else are dropped: only `#/components/schemas/...` is referenced.
    """
    schemas = document.get("components", {}).get("schemas", {})
    translated = {name: _translate(schema) for name, schema in schemas.items()}
    for qualified, values in ENUMS.items():
        name, _, field = qualified.rpartition(".")
        node = translated.get(name, {}).get("properties", {}).get(field)
        if node is None:
            continue
        target = node["items"] if node.get("type") == "array" else node
        target["enum"] = list(values)
    return {"components": {"schemas": translated}}


def _translate(node: JsonObject) -> dict[str, Any]:
    out: dict[str, Any] = {
        key: copy.deepcopy(value)
        for key, value in node.items()
        if key not in ("properties", "items", "additionalProperties", "not", *_SCHEMA_LISTS)
    }
    out.pop("description", None)
    if "properties" in node:
        out["properties"] = {name: _translate(child) for name, child in node["properties"].items()}
    if isinstance(node.get("items"), Mapping):
        out["items"] = _translate(node["items"])
    for keyword in _SCHEMA_LISTS:
        if keyword in node:
            out[keyword] = [_translate(branch) for branch in node[keyword]]
    if isinstance(node.get("not"), Mapping):
        out["not"] = _translate(node["not"])
    additional = node.get("additionalProperties")
    if isinstance(additional, Mapping):
        out["additionalProperties"] = _translate(additional)
    elif isinstance(additional, bool):
        out["additionalProperties"] = additional
    elif "properties" in node and node.get("x-kubernetes-preserve-unknown-fields") is not True:
        out["additionalProperties"] = False
    if node.get("x-kubernetes-int-or-string") is True:
        out.pop("format", None)
        out["type"] = ["integer", "string"]
    if node.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def _required(
    validator: Validator, required: list[str], instance: object, schema: JsonObject
) -> Iterable[ValidationError]:
    """Report each missing field at its own path, defaulted or not (see module docstring)."""
    if not isinstance(instance, Mapping):
        return
    for name in required:
        if name not in instance:
            yield ValidationError("required field is missing", path=(name,))


NativeValidator = extend(CrdValidator, validators={"required": _required})
"""The CRD validator's unknown-field and list-type checks, with every required field required."""
