"""The native schema validator accepts conforming built-in objects and names what is wrong.

Kinds are checked against the vendored Kubernetes OpenAPI v3 documents in
third_party/kubernetes; quirks those documents do not exercise (int-or-string, nullable) are
checked against a small document written to a temporary directory.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from .native_schema import ENUMS, NativeSchemaRegistry, native_registry

RESOURCE_CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "gpu", "namespace": "models"},
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": "gpu.amd.com",
                        "allocationMode": "ExactCount",
                        "count": 1,
                    },
                }
            ]
        }
    },
}

MUTATING_ADMISSION_POLICY: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1beta1",
    "kind": "MutatingAdmissionPolicy",
    "metadata": {"name": "add-gpu-claim.magicstick.dev"},
    "spec": {
        "matchConstraints": {
            "namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": "models"},
            },
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["pods"],
                }
            ],
        },
        "failurePolicy": "Fail",
        "reinvocationPolicy": "Never",
        "mutations": [
            {
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {
                    "expression": (
                        "Object{spec: Object.spec{resourceClaims: [Object.spec.resourceClaims{"
                        'name: "gpu", resourceClaimName: "gpu"}]}}'
                    )
                },
            }
        ],
    },
}

MUTATING_ADMISSION_POLICY_BINDING: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1beta1",
    "kind": "MutatingAdmissionPolicyBinding",
    "metadata": {"name": "add-gpu-claim.magicstick.dev"},
    "spec": {
        "policyName": "add-gpu-claim.magicstick.dev",
        "matchResources": {
            "namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": "models"},
            },
        },
    },
}


def _with(obj: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    """A copy of `obj` with the dotted `path` set to `value` (list indexes as numbers)."""
    changed = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node: Any = changed
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[last] = value
    return changed


def _without(obj: dict[str, Any], path: str) -> dict[str, Any]:
    """A copy of `obj` without the field at the dotted `path`."""
    changed = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node: Any = changed
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    del node[last]
    return changed


def _renamed(obj: dict[str, Any], path: str, new_name: str) -> dict[str, Any]:
    """A copy of `obj` with the field at the dotted `path` moved to `new_name` beside it."""
    *parents, last = path.split(".")
    value: Any = obj
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return _with(_without(obj, path), ".".join([*parents, new_name]), value)


EXACT = "spec.devices.requests.0.exactly"


@pytest.mark.parametrize(
    "obj",
    [RESOURCE_CLAIM, MUTATING_ADMISSION_POLICY, MUTATING_ADMISSION_POLICY_BINDING],
    ids=lambda obj: obj["kind"],
)
def test_a_conforming_object_has_no_errors(obj):
    assert native_registry().errors(obj) == []


def test_a_resource_claim_is_checked_against_resource_k8s_io_v1():
    kind = native_registry().kind_for("resource.k8s.io/v1", "ResourceClaim")
    assert (kind.schema_name, kind.namespaced) == ("io.k8s.api.resource.v1.ResourceClaim", True)


def test_a_mutating_admission_policy_is_cluster_scoped():
    kind = native_registry().kind_for("admissionregistration.k8s.io/v1beta1", "MutatingAdmissionPolicy")
    assert not kind.namespaced


def test_a_typo_in_a_field_name_is_an_unknown_field_at_its_path():
    claim = _renamed(RESOURCE_CLAIM, f"{EXACT}.allocationMode", "alocationMode")
    assert native_registry().errors(claim) == ["unknown field spec.devices.requests[0].exactly.alocationMode"]


def test_a_typo_in_a_field_name_inside_a_referenced_schema_is_reported_too():
    policy = _renamed(MUTATING_ADMISSION_POLICY, "spec.mutations.0.applyConfiguration", "applyConfig")
    assert native_registry().errors(policy) == ["unknown field spec.mutations[0].applyConfig"]


def test_an_unknown_field_in_metadata_is_reported():
    claim = _with(RESOURCE_CLAIM, "metadata.label", {"a": "b"})
    assert native_registry().errors(claim) == ["unknown field metadata.label"]


def test_a_missing_required_field_is_reported_at_its_path_even_when_the_schema_defaults_it():
    claim = _without(RESOURCE_CLAIM, f"{EXACT}.deviceClassName")
    assert native_registry().errors(claim) == [
        "spec.devices.requests[0].exactly.deviceClassName: required field is missing"
    ]


def test_a_missing_spec_is_reported():
    assert native_registry().errors(_without(RESOURCE_CLAIM, "spec")) == ["spec: required field is missing"]


def test_a_mutation_without_a_patch_type_is_reported():
    policy = _without(MUTATING_ADMISSION_POLICY, "spec.mutations.0.patchType")
    assert native_registry().errors(policy) == ["spec.mutations[0].patchType: required field is missing"]


@pytest.mark.parametrize(
    ("obj", "path", "value", "error"),
    [
        (
            RESOURCE_CLAIM,
            f"{EXACT}.allocationMode",
            "Exact",
            "spec.devices.requests[0].exactly.allocationMode: 'Exact' is not one of ['ExactCount', 'All']",
        ),
        (
            MUTATING_ADMISSION_POLICY,
            "spec.failurePolicy",
            "Sometimes",
            "spec.failurePolicy: 'Sometimes' is not one of ['Ignore', 'Fail']",
        ),
        (
            MUTATING_ADMISSION_POLICY,
            "spec.mutations.0.patchType",
            "StrategicMerge",
            "spec.mutations[0].patchType: 'StrategicMerge' is not one of ['ApplyConfiguration', 'JSONPatch']",
        ),
        (
            MUTATING_ADMISSION_POLICY,
            "spec.matchConstraints.resourceRules.0.operations",
            ["create"],
            "spec.matchConstraints.resourceRules[0].operations[0]:"
            " 'create' is not one of ['*', 'CREATE', 'UPDATE', 'DELETE', 'CONNECT']",
        ),
    ],
    ids=["allocationMode", "failurePolicy", "patchType", "operations"],
)
def test_a_value_outside_its_enumeration_is_reported(obj, path, value, error):
    assert native_registry().errors(_with(obj, path, value)) == [error]


@pytest.mark.parametrize(
    ("obj", "path", "value", "error"),
    [
        (
            RESOURCE_CLAIM,
            f"{EXACT}.count",
            "1",
            "spec.devices.requests[0].exactly.count: '1' is not of type 'integer'",
        ),
        (
            RESOURCE_CLAIM,
            f"{EXACT}.count",
            2**63,
            f"spec.devices.requests[0].exactly.count: {2**63} is not a 'int64'",
        ),
        (
            MUTATING_ADMISSION_POLICY_BINDING,
            "spec.policyName",
            7,
            "spec.policyName: 7 is not of type 'string'",
        ),
        (
            MUTATING_ADMISSION_POLICY,
            "spec.mutations",
            {"patchType": "ApplyConfiguration"},
            "spec.mutations: {'patchType': 'ApplyConfiguration'} is not of type 'array'",
        ),
    ],
    ids=["string-for-integer", "int64-overflow", "integer-for-string", "object-for-array"],
)
def test_a_value_of_the_wrong_type_is_reported(obj, path, value, error):
    assert native_registry().errors(_with(obj, path, value)) == [error]


def test_a_namespaced_kind_without_a_namespace_is_reported():
    claim = _without(RESOURCE_CLAIM, "metadata.namespace")
    assert native_registry().errors(claim) == ["metadata.namespace: required for namespaced kind ResourceClaim"]


def test_a_cluster_scoped_kind_with_a_namespace_is_reported():
    policy = _with(MUTATING_ADMISSION_POLICY, "metadata.namespace", "models")
    assert native_registry().errors(policy) == [
        "metadata.namespace: not allowed for cluster-scoped kind MutatingAdmissionPolicy"
    ]


def test_an_api_version_no_vendored_document_defines_is_reported_with_the_ones_that_exist():
    claim = _with(RESOURCE_CLAIM, "apiVersion", "resource.k8s.io/v1beta2")
    assert native_registry().errors(claim) == [
        "apiVersion: no vendored Kubernetes OpenAPI document defines ResourceClaim"
        " in resource.k8s.io/v1beta2 (vendored: resource.k8s.io/v1)"
    ]


def test_an_object_without_a_kind_is_reported():
    assert native_registry().errors(_without(RESOURCE_CLAIM, "kind")) == ["kind: required field is missing"]


@pytest.mark.parametrize("qualified", sorted(ENUMS))
def test_every_restated_enumeration_is_the_one_the_upstream_description_gives(qualified):
    name, _, field = qualified.rpartition(".")
    descriptions = [
        schemas[name]["properties"][field]["description"] for schemas in _vendored_schemas() if name in schemas
    ]
    assert len(descriptions) == 1, f"{name} is in {len(descriptions)} vendored documents"
    missing = [value for value in ENUMS[qualified] if value not in descriptions[0]]
    assert missing == [], f"{qualified}: {missing} not in the upstream description"


def _vendored_schemas() -> list[dict[str, Any]]:
    documents = sorted(Path(kind.source) for kind in native_registry().kinds)
    return [json.loads(path.read_text())["components"]["schemas"] for path in dict.fromkeys(documents)]


WIDGET_DOCUMENT = {
    "openapi": "3.0.0",
    "components": {
        "schemas": {
            "io.example.v1.Widget": {
                "type": "object",
                "required": ["spec"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {
                        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
                        "default": {},
                    },
                    "spec": {
                        "type": "object",
                        "properties": {
                            "port": {"type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": True},
                            "note": {"type": "string", "nullable": True},
                            "settings": {"type": "object", "additionalProperties": {"type": "string"}},
                            "raw": {"type": "object"},
                        },
                    },
                },
                "x-kubernetes-group-version-kind": [{"group": "example.io", "version": "v1", "kind": "Widget"}],
            },
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}},
            },
        }
    },
}


@pytest.fixture
def widgets(tmp_path: Path) -> NativeSchemaRegistry:
    path = tmp_path / "widgets.json"
    path.write_text(json.dumps(WIDGET_DOCUMENT))
    return NativeSchemaRegistry(path)


def _widget(**spec: object) -> dict[str, Any]:
    return {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


@pytest.mark.parametrize("port", [8080, "http"])
def test_an_int_or_string_field_accepts_an_integer_or_a_string(widgets, port):
    assert widgets.errors(_widget(port=port)) == []


def test_an_int_or_string_field_refuses_anything_else(widgets):
    assert widgets.errors(_widget(port=1.5)) == ["spec.port: 1.5 is not of type 'integer', 'string'"]


def test_a_nullable_field_accepts_null(widgets):
    assert widgets.errors(_widget(note=None)) == []


def test_a_map_and_a_schemaless_object_keep_their_keys(widgets):
    assert widgets.errors(_widget(settings={"any-key": "v"}, raw={"anything": [1]})) == []


def test_a_map_value_of_the_wrong_type_is_reported(widgets):
    assert widgets.errors(_widget(settings={"k": 1})) == ["spec.settings.k: 1 is not of type 'string'"]


def test_a_kind_defined_in_two_documents_is_refused(tmp_path):
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(WIDGET_DOCUMENT))
    with pytest.raises(ValueError, match="Widget example.io/v1 is defined twice"):
        NativeSchemaRegistry(tmp_path)


def test_a_directory_without_a_document_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no OpenAPI document"):
        NativeSchemaRegistry(tmp_path)
