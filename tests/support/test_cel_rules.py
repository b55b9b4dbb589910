"""The CEL rule harness: discovery, compilation, and evaluation as the API server does it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.cel_rules import (
    CelRuleCompileError,
    CelValidator,
    compile_errors,
    compile_rule,
    rules_of,
    to_cel,
)

GROUP = "example.com"


def rule(text: str, message: str = "broken", **extra: Any) -> dict[str, Any]:
    return {"rule": text, "message": message, **extra}


def crd(spec_schema: dict[str, Any], *, served: bool = True, kind: str = "Widget") -> dict[str, Any]:
    """A one-version CRD of `kind` whose spec has `spec_schema`."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.lower()}s.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": f"{kind.lower()}s"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": served,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"metadata": {"type": "object"}, "spec": spec_schema},
                        }
                    },
                }
            ],
        },
    }


def widget(spec: dict[str, Any], kind: str = "Widget") -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": "w"}, "spec": spec}


LIMITS = {
    "type": "object",
    "properties": {"request": {"type": "integer"}, "limit": {"type": "integer"}},
    "x-kubernetes-validations": [rule("self.limit >= self.request", "limit must cover the request")],
}
NESTED = {
    "type": "object",
    "properties": {
        "containers": {
            "type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "limits": LIMITS}},
        },
        "pools": {"type": "object", "additionalProperties": LIMITS},
    },
}


def test_a_rule_at_a_nested_path_is_found_with_its_schema_path() -> None:
    assert [(found.path, found.rule) for found in rules_of(crd(NESTED))] == [
        ("spec.containers[*].limits", "self.limit >= self.request"),
        ("spec.pools[*]", "self.limit >= self.request"),
    ]


def test_a_rule_at_a_nested_path_binds_self_to_each_value_there_and_reports_its_place() -> None:
    spec = {
        "containers": [
            {"name": "a", "limits": {"request": 1, "limit": 2}},
            {"name": "b", "limits": {"request": 3, "limit": 2}},
        ],
        "pools": {"big": {"request": 8, "limit": 4}, "small": {"request": 1, "limit": 1}},
    }
    assert CelValidator([crd(NESTED)]).errors(widget(spec)) == [
        'spec.containers[1].limits: Invalid value: "object": limit must cover the request',
        'spec.pools[big]: Invalid value: "object": limit must cover the request',
    ]


def test_a_rule_on_an_absent_optional_field_is_not_evaluated() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "limits": LIMITS,
            "mode": {"type": "string", "x-kubernetes-validations": [rule("self == 'fast'")]},
        },
    }
    validator = CelValidator([crd(schema)])
    assert validator.errors(widget({"name": "w"})) == []
    assert validator.errors(widget({"name": "w", "limits": None})) == []
    assert validator.errors(widget({"mode": "slow"})) == ['spec.mode: Invalid value: "string": broken']


def test_a_transition_rule_is_skipped_on_create_and_evaluated_on_update() -> None:
    schema = {
        "type": "object",
        "properties": {"size": {"type": "integer"}},
        "x-kubernetes-validations": [rule("self == oldSelf", "spec is immutable")],
    }
    validator = CelValidator([crd(schema)])
    assert compile_rule(rules_of(crd(schema))[0]).transition
    assert validator.errors(widget({"size": 2})) == []
    assert validator.errors(widget({"size": 2}), old=widget({"size": 2})) == []
    assert validator.errors(widget({"size": 3}), old=widget({"size": 2})) == [
        'spec: Invalid value: "object": spec is immutable'
    ]


def test_a_transition_rule_is_skipped_where_the_old_object_has_no_value() -> None:
    schema = {
        "type": "object",
        "properties": {
            "size": {"type": "integer", "x-kubernetes-validations": [rule("self >= oldSelf", "may only grow")]}
        },
    }
    validator = CelValidator([crd(schema)])
    assert validator.errors(widget({"size": 1}), old=widget({})) == []
    assert validator.errors(widget({"size": 1}), old=widget({"size": 2})) == [
        'spec.size: Invalid value: "integer": may only grow'
    ]


def test_a_transition_rule_below_a_map_list_correlates_items_by_their_keys() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                    "x-kubernetes-validations": [rule("self.port == oldSelf.port", "port is immutable")],
                },
            }
        },
    }
    old = widget({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]})
    new = widget({"ports": [{"name": "https", "port": 8443}, {"name": "http", "port": 80}, {"name": "x", "port": 1}]})
    assert CelValidator([crd(schema)]).errors(new, old=old) == [
        'spec.ports[0]: Invalid value: "object": port is immutable'
    ]


OPEN_LIMITS = {
    **LIMITS,
    "properties": {
        **LIMITS["properties"],
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "opaque": {"x-kubernetes-preserve-unknown-fields": True},
        "pools": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
}


def test_declared_fields_and_map_values_are_selectable() -> None:
    schema = {
        **OPEN_LIMITS,
        "x-kubernetes-validations": [rule("has(self.extra) && self.pools.big > self.request", "big pool")],
    }
    validator = CelValidator([crd(schema)])
    assert validator.errors(widget({"request": 1, "limit": 1, "extra": {"k": 1}, "pools": {"big": 2}})) == []
    assert validator.errors(widget({"request": 3, "limit": 3, "extra": {}, "pools": {"big": 2}})) == [
        'spec: Invalid value: "object": big pool'
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("self.limit >=", "syntax error"),
        ("self.limt >= self.request", "undefined field 'limt'"),
        ("self.request.value > 0", "type 'integer' does not support field selection"),
        ("isURL(self.name)", "undeclared reference to function 'isURL'"),
        ("self.name.lowerAscii() == 'a'", "undeclared reference to function 'lowerAscii'"),
        ("other.limit > 0", "undeclared reference to 'other'"),
        ("self.extra.anything == 1", "undefined field 'anything'"),
        ("has(self.opaque)", "undefined field 'opaque'"),
        ("", "the rule is empty"),
    ],
)
def test_a_compile_error_is_reported_naming_the_crd_and_path(text: str, problem: str) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "limits": {**OPEN_LIMITS, "x-kubernetes-validations": [rule(text)]}},
    }
    (found,) = rules_of(crd(schema))
    with pytest.raises(CelRuleCompileError) as caught:
        compile_rule(found)
    assert str(caught.value).startswith(f"widgets.{GROUP} spec.limits: rule {text!r}: ")
    assert problem in caught.value.problem
    assert compile_errors([crd(schema)]) == [str(caught.value)]
    with pytest.raises(CelRuleCompileError):
        CelValidator([crd(schema)])


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (rule("true", messageExpression="'x'"), "messageExpression is not supported"),
        (rule("true", reason="FieldValueSomething"), "unknown reason"),
    ],
)
def test_rule_keys_the_harness_does_not_implement_fail_compilation(entry: dict[str, Any], problem: str) -> None:
    (found,) = rules_of(crd({"type": "object", "x-kubernetes-validations": [entry]}))
    with pytest.raises(CelRuleCompileError, match=problem):
        compile_rule(found)


def test_a_transition_rule_on_items_of_a_list_that_is_not_a_map_fails_compilation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "x-kubernetes-list-type": "set",
                "items": {"type": "string", "x-kubernetes-validations": [rule("self == oldSelf")]},
            }
        },
    }
    (found,) = rules_of(crd(schema))
    with pytest.raises(CelRuleCompileError, match="uncorrelatable"):
        compile_rule(found)


def test_macro_variables_and_standard_functions_compile() -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
        "x-kubernetes-validations": [
            rule("!has(self.tags) || self.tags.all(t, t.startsWith('x-') && t.matches('^[a-z-]+$'))", "x- tags only"),
            rule("!has(self.tags) || size(self.tags) <= 2 && !self.tags.exists(t, t.endsWith('-'))", "at most two"),
        ],
    }
    validator = CelValidator([crd(schema)])
    assert validator.errors(widget({"tags": ["x-a", "x-b"]})) == []
    assert validator.errors(widget({"tags": ["x-a", "y", "z-"]})) == [
        'spec: Invalid value: "object": x- tags only',
        'spec: Invalid value: "object": at most two',
    ]


def test_schema_defaults_are_applied_before_the_rules_run() -> None:
    schema = {
        "type": "object",
        "properties": {"engine": {"type": "string", "default": "fast"}, "gear": {"type": "integer"}},
        "x-kubernetes-validations": [rule("self.engine != 'fast' || has(self.gear)", "fast needs a gear")],
    }
    validator = CelValidator([crd(schema)])
    assert validator.errors(widget({})) == ['spec: Invalid value: "object": fast needs a gear']
    assert validator.errors(widget({"engine": None})) == ['spec: Invalid value: "object": fast needs a gear']
    assert validator.errors(widget({"engine": "slow"})) == []


def test_selecting_an_absent_field_without_has_is_an_evaluation_error_that_rejects() -> None:
    schema = {
        "type": "object",
        "properties": {"gear": {"type": "integer"}},
        "x-kubernetes-validations": [rule("self.gear > 0", "gear must be positive")],
    }
    (error,) = CelValidator([crd(schema)]).errors(widget({}))
    assert error.startswith('spec: Invalid value: "object": rule evaluation error: ')
    assert "gear" in error


def test_values_take_the_cel_type_of_their_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ratio": {"type": "number"},
            "count": {"type": "integer"},
            "wait": {"type": "string", "format": "duration"},
        },
        "x-kubernetes-validations": [
            rule("self.ratio == 1.0 && self.count == 1 && self.wait == duration('90s')", "typed"),
        ],
    }
    assert CelValidator([crd(schema)]).errors(widget({"ratio": 1, "count": 1, "wait": "1m30s"})) == []
    assert type(to_cel(1, {"type": "number"})).__name__ == "DoubleType"


def test_reason_and_field_path_shape_the_message() -> None:
    schema = {
        "type": "object",
        "properties": {"gear": {"type": "integer"}},
        "x-kubernetes-validations": [
            rule("has(self.gear)", "gear is required", reason="FieldValueRequired", fieldPath=".gear")
        ],
    }
    assert CelValidator([crd(schema)]).errors(widget({})) == ["spec.gear: Required value: gear is required"]


def test_only_served_versions_are_read() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [rule("false")]}
    assert rules_of(crd(schema, served=False)) == ()
    with pytest.raises(LookupError):
        CelValidator([crd(schema, served=False)]).errors(widget({}))


def test_a_kind_without_a_loaded_crd_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="Gadget"):
        CelValidator([crd(LIMITS)]).errors(widget({}, kind="Gadget"))
