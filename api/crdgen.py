"""CustomResourceDefinitions of appliance.magicstick.dev/v1alpha1, generated from the types.

The spec schema of each kind is the pydantic JSON schema of its spec type turned into a
Kubernetes structural schema: every node has a type (or preserves unknown fields), ``$ref`` is
inlined, optional means "not required" instead of "nullable", free-form maps preserve unknown
fields, and the CEL rules attached to the types become ``x-kubernetes-validations``. Object
defaults are left to the program; scalar and list defaults are applied by the API server.

Output is deterministic, so the committed files under ``api/crds/`` can be checked against the
types (``python -m cli.crds --check`` fails when they differ, ``--write`` regenerates them).
Everything here is pure except ``load_committed_crds``, which reads the files the package ships.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from api import yamlio
from api.kinds import APPLIANCE_KINDS, ApplianceKind, PrinterColumn

CRD_DIRECTORY = Path(__file__).parent / "crds"
HEADER = "# Generated from the api package by `python -m cli.crds --write`. Do not edit.\n"
CATEGORY = "magicstick"

_KEPT_KEYWORDS = (
    "description",
    "enum",
    "format",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "pattern",
)


KINDS: tuple[ApplianceKind, ...] = APPLIANCE_KINDS
"""Every kind of the API, in the order the CRDs are installed."""


def _plain(text: str) -> str:
    """A docstring as one line of plain text, as ``kubectl explain`` shows it best."""
    return " ".join(text.replace("``", "").split())


class _Converter:
    """Turns one pydantic JSON schema into a structural schema, resolving ``$defs``."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self._definitions = definitions

    def convert(self, node: Mapping[str, Any]) -> dict[str, Any]:
        if "$ref" in node:
            target = self._definitions[node["$ref"].rsplit("/", 1)[-1]]
            return self._overlay(self.convert(target), node)
        if "anyOf" in node:
            arms = [arm for arm in node["anyOf"] if arm.get("type") != "null"]
            if len(arms) == 1:
                return self._overlay(self.convert(arms[0]), node)
            return self._overlay({"x-kubernetes-preserve-unknown-fields": True}, node)
        if "const" in node:
            node = {**node, "enum": [node["const"]]}
        converted = {key: node[key] for key in _KEPT_KEYWORDS if key in node}
        if "description" in converted:
            converted["description"] = _plain(converted["description"])
        converted.update({key: value for key, value in node.items() if key.startswith("x-kubernetes-")})
        if "exclusiveMinimum" in node:
            converted.update(minimum=node["exclusiveMinimum"], exclusiveMinimum=True)
        if "exclusiveMaximum" in node:
            converted.update(maximum=node["exclusiveMaximum"], exclusiveMaximum=True)
        if "type" not in node:
            converted["x-kubernetes-preserve-unknown-fields"] = True
            return converted
        converted["type"] = node["type"]
        if node["type"] == "object":
            self._object(node, converted)
        elif node["type"] == "array":
            converted["items"] = self.convert(node.get("items", {}))
        self._default(node, converted)
        return converted

    def _object(self, node: Mapping[str, Any], converted: dict[str, Any]) -> None:
        if "properties" in node:
            converted["properties"] = {name: self.convert(schema) for name, schema in node["properties"].items()}
            if node.get("required"):
                converted["required"] = list(node["required"])
            return
        values = node.get("additionalProperties", True)
        if values is True or values == {}:
            converted["x-kubernetes-preserve-unknown-fields"] = True
        elif values is not False:
            converted["additionalProperties"] = self.convert(values)

    @staticmethod
    def _default(node: Mapping[str, Any], converted: dict[str, Any]) -> None:
        if node.get("default") is not None and converted["type"] != "object":
            converted["default"] = node["default"]

    def _overlay(self, converted: dict[str, Any], reference: Mapping[str, Any]) -> dict[str, Any]:
        """Apply the keywords written beside a ``$ref`` or ``anyOf`` (description, default)."""
        if "description" in reference:
            converted["description"] = _plain(reference["description"])
        if "type" in converted:
            self._default(reference, converted)
        return converted


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The Kubernetes structural schema of a pydantic model's wire form. Pure."""
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return _Converter(schema.get("$defs", {})).convert(schema)


def generic_status_schema() -> dict[str, Any]:
    """The open status schema of every kind whose status has no closed type."""
    return {
        "type": "object",
        "description": "Observed state, written by the program (or, for HostOperation, by the host worker).",
        "properties": {
            "phase": {"type": "string"},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "observedGeneration": {"type": "integer", "format": "int64"},
        },
        "x-kubernetes-preserve-unknown-fields": True,
    }


def _root_schema(kind: ApplianceKind) -> dict[str, Any]:
    spec = structural_schema(kind.spec_type)
    status = structural_schema(kind.status_type) if kind.status_type else generic_status_schema()
    if kind.open_status_fields is not None:
        model, names = kind.open_status_fields
        typed = structural_schema(model)["properties"]
        status["properties"].update({name: typed[name] for name in names})
    root: dict[str, Any] = {
        "type": "object",
        "description": f"{kind.kind} of {kind.api_version}.",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }
    if spec.get("required"):
        root["required"] = ["spec"]
    return root


def build_crd(kind: ApplianceKind) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind. Pure."""
    columns = [
        *kind.columns,
        PrinterColumn("Phase", ".status.phase"),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ]
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.singular,
        "categories": [CATEGORY],
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    version: dict[str, Any] = {
        "name": kind.version,
        "served": True,
        "storage": True,
        "additionalPrinterColumns": [column.to_wire() for column in columns],
        "schema": {"openAPIV3Schema": _root_schema(kind)},
    }
    if kind.status_subresource:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.name},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "versions": [version],
        },
    }


def build_crds() -> list[dict[str, Any]]:
    """Every CRD of the API, in KINDS order. Pure and deterministic."""
    return [build_crd(kind) for kind in KINDS]


def render(crd: Mapping[str, Any]) -> str:
    """The committed YAML text of one CRD."""
    return HEADER + yaml.safe_dump(dict(crd), sort_keys=True, default_flow_style=False, width=4096)


def file_name(crd: Mapping[str, Any]) -> str:
    return f"{crd['metadata']['name']}.yaml"


def load_committed_crds() -> list[dict[str, Any]]:
    """The CRDs shipped inside the package, parsed, in KINDS order (what the program installs)."""
    package = resources.files("api").joinpath("crds")
    return [yamlio.safe_load(package.joinpath(f"{kind.name}.yaml").read_text(encoding="utf-8")) for kind in KINDS]
