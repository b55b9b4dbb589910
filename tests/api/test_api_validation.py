"""parse_spec and SpecError: wire paths, strict wire typing, first-error determinism."""

from __future__ import annotations

import pytest
from spec_cases import local_model, rejection

from api.validation import SPEC_TYPES, SpecError, parse_spec, wire_path


def test_spec_error_reads_as_field_then_rule() -> None:
    error = SpecError("spec.local.kvCacheType", "must be auto")
    assert (str(error), error.field, error.rule) == (
        "spec.local.kvCacheType: must be auto",
        "spec.local.kvCacheType",
        "must be auto",
    )


def test_spec_error_is_a_value_error() -> None:
    assert issubclass(SpecError, ValueError)


def test_spec_types_cover_the_six_kinds() -> None:
    assert sorted(SPEC_TYPES) == sorted(
        ["Appliance", "ModuleActivation", "ModelActivation", "AppInstance", "HostOperation", "ApplianceSetup"]
    )


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        ((), "spec"),
        (("local", "kvCacheType"), "spec.local.kvCacheType"),
        (("access", "sharing", "users", 3), "spec.access.sharing.users[3]"),
    ],
)
def test_wire_path_joins_fields_with_dots_and_positions_with_brackets(loc: tuple, path: str) -> None:
    assert wire_path(loc) == path


def test_python_field_names_are_not_accepted_on_the_wire() -> None:
    error = rejection("ModelActivation", {**local_model(), "target_namespace": "ai"})
    assert (error.field, error.rule) == ("spec.target_namespace", "is not a field of this API")


@pytest.mark.parametrize(
    ("spec", "field", "rule"),
    [
        (local_model(memoryRequiredMi="4096"), "spec.local.memoryRequiredMi", "must be an integer"),
        ({**local_model(), "enabled": "true"}, "spec.enabled", "must be a boolean"),
        (local_model(contextWindow=4096.0), "spec.local.contextWindow", "must be an integer"),
        ({"type": "local", "local": "cpu"}, "spec.local", "must be an object"),
    ],
)
def test_wire_values_are_not_coerced(spec: dict, field: str, rule: str) -> None:
    error = rejection("ModelActivation", spec)
    assert (error.field, error.rule) == (field, rule)


def test_a_defaulted_field_is_reported_by_its_wire_name() -> None:
    spec = {
        "action": "clear-model-cache",
        "nodeName": "worker-1",
        "nodeUID": "u",
        "bootID": "b",
        "requestID": "r",
        "acknowledgeDisruption": True,
    }
    assert rejection("HostOperation", spec).field == "spec.planId"


def test_the_first_error_in_field_order_is_reported() -> None:
    spec = {"type": "local", "enabled": "no", "local": {"memoryRequiredMi": 1}}
    assert rejection("ModelActivation", spec).field == "spec.enabled"


def test_the_same_invalid_spec_always_gives_the_same_error() -> None:
    spec = {"application": "jupyter", "enabled": 3, "access": {"role": "root", "sharing": {"mode": "x"}}}
    first, second = rejection("AppInstance", spec), rejection("AppInstance", dict(spec))
    assert (first.field, first.rule) == (second.field, second.rule)


def test_a_missing_spec_is_an_empty_spec() -> None:
    assert parse_spec("Appliance", None).profile == "ai-workstation"
    assert rejection("ModuleActivation", None).field == "spec.module"


@pytest.mark.parametrize("spec", [["module", "litellm"], "litellm", 3])
def test_a_spec_that_is_not_an_object_is_rejected(spec: object) -> None:
    error = rejection("ModuleActivation", spec)
    assert (error.field, error.rule) == ("spec", "must be an object")


def test_an_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(KeyError, match="Widget"):
        parse_spec("Widget", {})


def test_parsed_specs_round_trip_through_their_wire_form() -> None:
    spec = parse_spec(
        "ModelActivation", local_model(engine="OLlama", kvCacheType="q4_0", cpuResources={"limitMillicores": 0})
    )
    assert parse_spec("ModelActivation", spec.to_wire()) == spec
