"""ModuleActivation.spec.parameters: what the catalog declares reaches the module's base through
its Kustomization's post-build substitution; anything else is named in the activation's status
and leaves the module as it runs."""

from __future__ import annotations

import pytest

from planning.frozen import thaw
from tests.planning.builders import (
    CATALOGS,
    LATER,
    activation,
    appliance,
    kustomization_of,
    plan_of,
    runtime,
    status_of,
)
from tests.planning.worlds import converge

SETTINGS_SUBSTITUTION = {"var_substitution_enabled": "true"}


def litellm(parameters: dict | None = None) -> dict:
    spec: dict = {"module": "litellm", "enabled": True}
    if parameters is not None:
        spec["parameters"] = parameters
    return runtime("ModuleActivation", "litellm", spec)


def substitute_of(result, module: str) -> dict:
    return dict(kustomization_of(result, module).body["spec"]["postBuild"]["substitute"])


def test_a_declared_parameter_reaches_the_kustomization_as_its_substitution_variable():
    result = plan_of(appliance(), litellm({"postgresStorage": "7Gi"}))
    assert substitute_of(result, "litellm") == {**SETTINGS_SUBSTITUTION, "LITELLM_POSTGRES_STORAGE": "7Gi"}


def test_an_unset_declared_parameter_is_substituted_with_its_catalog_default():
    result = plan_of(appliance(), litellm())
    assert substitute_of(result, "litellm") == {**SETTINGS_SUBSTITUTION, "LITELLM_POSTGRES_STORAGE": "5Gi"}


def test_the_shared_settings_stay_beside_the_module_parameters():
    result = plan_of(appliance(), litellm({"postgresStorage": "7Gi"}))
    post_build = kustomization_of(result, "litellm").body["spec"]["postBuild"]
    assert list(post_build["substituteFrom"]) == [
        {"kind": "ConfigMap", "name": "ai-appliance-settings", "optional": True}
    ]


def test_a_module_seeded_from_the_appliance_gets_its_parameter_defaults():
    result = plan_of(appliance({"litellm": True}))
    assert substitute_of(result, "litellm")["LITELLM_POSTGRES_STORAGE"] == "5Gi"


def test_a_module_without_declared_variables_substitutes_only_the_shared_settings():
    result = plan_of(appliance(), activation("basis"))
    assert substitute_of(result, "basis") == SETTINGS_SUBSTITUTION


def test_a_component_parameter_set_true_lists_its_component_in_the_kustomization():
    spec = kustomization_of(plan_of(appliance(), litellm({"postgres": True})), "litellm").body["spec"]
    assert list(spec["components"]) == ["postgres"]
    assert spec["path"] == CATALOGS.modules.require("litellm").path


@pytest.mark.parametrize("parameters", [None, {"postgres": False}, {"postgresStorage": "7Gi"}], ids=str)
def test_a_component_parameter_false_or_unset_lists_no_component(parameters):
    spec = kustomization_of(plan_of(appliance(), litellm(parameters)), "litellm").body["spec"]
    assert "components" not in spec


def test_gpu_parameters_the_program_reads_are_not_passed_to_flux():
    result = plan_of(
        appliance(),
        runtime("ModuleActivation", "amd-gpu", {"module": "amd-gpu", "parameters": {"compatibilityProfile": ""}}),
    )
    outcome = result.modules.outcome("amd-gpu")
    assert outcome.reason != "InvalidSpec"
    assert substitute_of(result, "amd-gpu") == SETTINGS_SUBSTITUTION


REJECTED = {
    # id: (parameters, the message the activation's status carries)
    "undeclared": (
        {"fooBar": "x"},
        "spec.parameters.fooBar: not a parameter of module litellm (declared: postgres, postgresStorage)",
    ),
    "wrong-type-number": (
        {"postgresStorage": 5},
        "spec.parameters.postgresStorage: must be a Kubernetes quantity such as 5Gi, as a string",
    ),
    "not-a-quantity": (
        {"postgresStorage": "lots"},
        "spec.parameters.postgresStorage: must be a Kubernetes quantity such as 5Gi, as a string",
    ),
    "switch-as-text": ({"postgres": "true"}, "spec.parameters.postgres: must be true or false"),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_a_parameter_the_catalog_does_not_accept_is_named_in_the_activations_status(case):
    parameters, message = REJECTED[case]
    status = status_of(plan_of(appliance(), litellm(parameters)), "ModuleActivation", "litellm")
    assert (status["phase"], status["reason"], status["module"]) == ("Failed", "InvalidSpec", "litellm")
    assert status["message"].startswith(message)


def test_every_rejected_parameter_is_named_not_only_the_first():
    status = status_of(plan_of(appliance(), litellm({"b": 1, "a": 2})), "ModuleActivation", "litellm")
    assert "spec.parameters.a:" in status["message"] and "spec.parameters.b:" in status["message"]


def test_a_rejected_parameter_declares_no_kustomization_for_a_module_that_never_ran():
    result = plan_of(appliance(), litellm({"fooBar": "x"}))
    assert kustomization_of(result, "litellm") is None


def test_every_shipped_variable_is_declared_once():
    variables = [p.variable for e in CATALOGS.modules.entries for p in e.parameters if p.variable]
    assert "LITELLM_POSTGRES_STORAGE" in variables
    assert len(variables) == len(set(variables))


def test_an_invalid_parameter_edit_keeps_the_kustomization_with_the_value_last_applied():
    before, applied = converge((appliance({"litellm": True}), litellm({"postgresStorage": "7Gi"})))
    edited = [thaw(o) for o in applied]
    for obj in edited:
        if obj["kind"] == "ModuleActivation" and obj["metadata"]["name"] == "litellm":
            obj["spec"]["parameters"] = {"postgresStorage": "7Gi", "fooBar": "x"}
            obj["metadata"]["generation"] += 1
    after = plan_of(*edited, now=LATER)
    assert substitute_of(after, "litellm")["LITELLM_POSTGRES_STORAGE"] == "7Gi"
    assert kustomization_of(after, "litellm").body == kustomization_of(before, "litellm").body
    assert status_of(after, "ModuleActivation", "litellm")["reason"] == "InvalidSpec"
