"""The parameters a module entry declares: name, type, default of that type, and the Flux
substitution variable its base reads."""

from __future__ import annotations

import pytest

from catalogs import load_catalogs
from catalogs.types import ModuleParameter
from tests.catalogs.edits import entry_named

STORAGE = {"name": "postgresStorage", "type": "quantity", "default": "5Gi", "variable": "LITELLM_POSTGRES_STORAGE"}


def test_the_shipped_litellm_module_declares_its_postgres_storage():
    (parameter,) = [p for p in load_catalogs().modules.get("litellm").parameters if p.name == "postgresStorage"]
    assert (parameter.type, parameter.default, parameter.variable) == ("quantity", "5Gi", "LITELLM_POSTGRES_STORAGE")


def test_the_shipped_litellm_module_switches_its_database_on_by_a_component_parameter():
    (parameter,) = [p for p in load_catalogs().modules.get("litellm").parameters if p.name == "postgres"]
    assert (parameter.type, parameter.default, parameter.variable, parameter.component) == (
        "boolean",
        False,
        None,
        "postgres",
    )


SWITCH = {"name": "postgres", "type": "boolean", "default": False, "component": "postgres"}
REJECTED_SWITCHES = {
    # id: (changes to the postgres declaration, field, words of the rule)
    "not-a-boolean": (
        {"type": "string", "default": "false"},
        "parameters[0]",
        "must be a boolean whose default is false",
    ),
    "on-by-default": ({"default": True}, "parameters[0]", "must be a boolean whose default is false"),
    "with-a-variable": (
        {"variable": "LITELLM_POSTGRES"},
        "parameters[0]",
        "a parameter with a component has no variable",
    ),
    "above-the-path": ({"component": "../postgres"}, "parameters[0].component", "a directory below the module's path"),
    "absolute": ({"component": "/postgres"}, "parameters[0].component", "a directory below the module's path"),
}


@pytest.mark.parametrize("case", sorted(REJECTED_SWITCHES))
def test_a_malformed_component_parameter_is_rejected_naming_its_field(override, load_error, case):
    change, field, rule = REJECTED_SWITCHES[case]
    directory = override(
        "modules.yaml", lambda d: entry_named(d, "modules", "litellm").update(parameters=[{**SWITCH, **change}])
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("litellm", field)
    assert rule in error.message


def test_the_shipped_gpu_parameters_are_declared_without_a_substitution_variable():
    modules = load_catalogs().modules
    declared = {m: {p.name: p.variable for p in modules.get(m).parameters} for m in ("amd-gpu", "gpu")}
    assert declared == {
        "amd-gpu": {
            "compatibilityProfile": None,
            "allowExperimental": None,
            "validationRequest": None,
            "gpuSharing": None,
        },
        "gpu": {"gpuSharing": None},
    }


REJECTED = {
    # id: (changes to the postgresStorage declaration, field, words of the rule)
    "unknown-type": ({"type": "money"}, "parameters[0].type", "'string', 'boolean', 'integer', 'quantity' or 'object'"),
    "default-of-another-type": ({"default": 5}, "parameters[0]", "default 5 does not fit type quantity"),
    "default-not-a-quantity": ({"default": "lots"}, "parameters[0]", "default 'lots' does not fit type quantity"),
    "lower-case-variable": ({"variable": "litellm_storage"}, "parameters[0].variable", "^[A-Z_][A-Z0-9_]*$"),
    "variable-with-a-dash": ({"variable": "LITELLM-STORAGE"}, "parameters[0].variable", "^[A-Z_][A-Z0-9_]*$"),
    "variable-without-default": ({"default": None}, "parameters[0]", "a parameter with a variable needs a default"),
    "name-not-camel-case": ({"name": "postgres-storage"}, "parameters[0].name", "camelCase"),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_a_malformed_parameter_declaration_is_rejected_naming_its_field(override, load_error, case):
    change, field, rule = REJECTED[case]
    directory = override(
        "modules.yaml", lambda d: entry_named(d, "modules", "litellm").update(parameters=[{**STORAGE, **change}])
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("litellm", field)
    assert rule in error.message


def test_a_module_declares_each_parameter_name_once(override, load_error):
    directory = override(
        "modules.yaml",
        lambda d: entry_named(d, "modules", "litellm").update(parameters=[STORAGE, {**STORAGE, "variable": "OTHER"}]),
    )
    error = load_error(directory)
    assert (error.entry, error.field, error.message) == ("litellm", "parameters", "'postgresStorage' is listed twice")


def test_two_modules_never_share_a_substitution_variable(override, load_error):
    def share(document):
        entry_named(document, "modules", "litellm").update(parameters=[STORAGE])
        entry_named(document, "modules", "model-catalog").update(parameters=[{**STORAGE, "name": "size"}])

    error = load_error(override("modules.yaml", share))
    assert (error.entry, error.field) == ("model-catalog", "parameters[0].variable")
    assert error.message == "'LITELLM_POSTGRES_STORAGE' is already the variable of litellm.postgresStorage"


VALUES = {
    # type: (values that fit, values that do not)
    "string": (["", "x"], [5, True, None, {}]),
    "boolean": ([True, False], ["true", 1, None]),
    "integer": ([0, 7], [True, "7", 1.5]),
    "quantity": (["5Gi", "500Mi", "1", "0.5", "100m"], ["lots", "5 Gi", "5GB", 5, "", "-1Gi"]),
    "object": ([{"mode": "exclusive"}, '{"mode": "exclusive"}'], [5, True, None]),
}


@pytest.mark.parametrize("type_", sorted(VALUES))
def test_a_value_fits_a_parameter_only_when_it_has_the_parameters_type(type_):
    parameter = ModuleParameter(name="p", type=type_)
    fits, misfits = VALUES[type_]
    assert [v for v in fits if parameter.violation(v) is not None] == []
    assert [v for v in misfits if parameter.violation(v) is None] == []
