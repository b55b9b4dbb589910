"""deploy/admission-policy.yaml as a file: one ValidatingAdmissionPolicy and the binding that puts
it in force, matching exactly the writes it judges, and recognising every spelling of the GPU
modules the planner accepts. No cluster here; tests/cluster/test_admission_policy.py runs it on
the real API server."""

from __future__ import annotations

import ast
import re
import sys
from typing import Any, Final

import pytest

from api.meta import GROUP
from catalogs.keys import normalise_key
from catalogs.loader import load_catalogs
from planning.hardware.compatibility import DEVICE_VALIDATION_PREFIX
from tests.deploy.manifests import documents, the_one

POLICY_FILE: Final = "../magic-cluster/platform/admission/admission-policy.yaml"
ADMISSION_API_VERSION: Final = "admissionregistration.k8s.io/v1"
EXEMPT_GROUPS: Final = ("magicstick:administrators", "system:masters")
KEY_OF_MODULE: Final = "findAll('[A-Za-z0-9]+').join('').lowerAscii()"
"""The CEL that reduces spec.module to its ASCII letters and digits, lower-cased."""


def squashed(key: str) -> str:
    """What KEY_OF_MODULE gives for `key`: its ASCII letters and digits, lower-cased. Pure."""
    return "".join(re.findall(r"[A-Za-z0-9]+", key)).lower()


@pytest.fixture(scope="module")
def policy() -> dict[str, Any]:
    return the_one(documents(POLICY_FILE), "ValidatingAdmissionPolicy")


@pytest.fixture(scope="module")
def binding() -> dict[str, Any]:
    return the_one(documents(POLICY_FILE), "ValidatingAdmissionPolicyBinding")


def variable(policy: dict[str, Any], name: str) -> str:
    (expression,) = [v["expression"] for v in policy["spec"]["variables"] if v["name"] == name]
    return str(expression)


def gpu_modules_of_the_policy(policy: dict[str, Any]) -> dict[str, str]:
    """The policy's `gpuModules` map; the CEL map literal is also a Python one."""
    return dict(ast.literal_eval(variable(policy, "gpuModules")))


def test_the_file_holds_one_policy_and_its_binding_of_admissionregistration_v1():
    objects = documents(POLICY_FILE)

    assert sorted(obj["kind"] for obj in objects) == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    assert {obj["apiVersion"] for obj in objects} == {ADMISSION_API_VERSION}
    assert all("namespace" not in obj["metadata"] for obj in objects)


def test_the_binding_names_the_policy_denies_and_narrows_nothing(policy, binding):
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert set(binding["spec"]) == {"policyName", "validationActions"}


def test_the_policy_matches_creates_and_updates_of_moduleactivations_of_every_version_and_nothing_else(policy):
    constraints = policy["spec"]["matchConstraints"]

    assert constraints["resourceRules"] == [
        {
            "apiGroups": [GROUP],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["moduleactivations"],
        }
    ]
    assert set(constraints) == {"resourceRules"}


def test_the_status_subresource_and_deletes_are_not_matched(policy):
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]

    assert not [resource for resource in rule["resources"] if "/" in resource or "*" in resource]
    assert "DELETE" not in rule["operations"] and "*" not in rule["operations"]


def test_it_fails_closed_and_takes_no_parameters(policy):
    assert policy["spec"]["failurePolicy"] == "Fail"
    assert "paramKind" not in policy["spec"]


def test_administrators_and_system_masters_are_left_out_by_a_match_condition_on_the_requests_groups(policy):
    (condition,) = policy["spec"]["matchConditions"]

    assert "request.userInfo.groups" in condition["expression"]
    for group in EXEMPT_GROUPS:
        assert f"'{group}'" in condition["expression"]


def test_every_validation_refuses_with_403_and_a_message_naming_the_field_and_the_administrators_group(policy):
    validations = policy["spec"]["validations"]

    assert len(validations) == 2
    for validation in validations:
        assert validation["reason"] == "Forbidden"
        for text in (validation["message"], validation["messageExpression"]):
            assert "by administrators only (group magicstick:administrators)" in text
    assert "'spec.parameters'" in validations[0]["messageExpression"]
    assert "'metadata.annotations['" in validations[1]["messageExpression"]


def test_the_device_validation_prefix_is_the_planners(policy):
    assert variable(policy, "validationPrefix") == f"'{DEVICE_VALIDATION_PREFIX}'"


def test_the_old_and_the_new_module_are_reduced_to_their_letters_and_digits(policy):
    assert f"object.spec.module.{KEY_OF_MODULE}" in variable(policy, "newKey")
    assert f"oldObject.spec.module.{KEY_OF_MODULE}" in variable(policy, "oldKey")


def test_the_gpu_modules_are_the_catalogs_hardware_providers_under_every_name_and_key(policy):
    """Every name and key of gpu, amd-gpu and intel-gpu in catalogs/modules.yaml, reduced as
    the policy reduces spec.module, leads to its module; nothing else is in the map."""
    modules = load_catalogs().modules.entries
    expected = {
        squashed(key): entry.name for entry in modules if entry.hardware_provider for key in (entry.name, *entry.keys)
    }

    assert set(expected.values()) == {"gpu", "amd-gpu", "intel-gpu"}
    assert gpu_modules_of_the_policy(policy) == expected


def test_no_other_module_reads_as_a_gpu_module(policy):
    gpu_keys = gpu_modules_of_the_policy(policy)
    others = [
        (entry.name, key)
        for entry in load_catalogs().modules.entries
        if not entry.hardware_provider
        for key in (entry.name, *entry.keys)
    ]

    assert [(name, key) for name, key in others if squashed(key) in gpu_keys] == []


def test_every_spelling_the_planner_reads_as_a_gpu_module_reduces_to_a_key_of_the_policy(policy):
    """Why the reduction is enough. The planner's normalise_key keeps letters, digits and
    non-separator characters, lower-cases, and turns case changes and runs of '-', '_' or
    whitespace into one '-'. So a spelling that normalises to a catalogued GPU key is made of
    that key's letters, in any case, and separators; dropping everything that is not an ASCII
    letter or digit leaves the key without its '-'. The one exception would be a letter that a
    non-ASCII character lower-cases to (KELVIN SIGN to 'k'); no GPU key holds one."""
    non_ascii_lowering_to_ascii = {
        chr(code).lower() for code in range(128, sys.maxunicode + 1) if chr(code).lower().isascii()
    }
    gpu_keys = gpu_modules_of_the_policy(policy)
    catalogued = [
        key for entry in load_catalogs().modules.entries if entry.hardware_provider for key in (entry.name, *entry.keys)
    ]

    assert not {letter for key in catalogued for letter in key} & non_ascii_lowering_to_ascii
    for key in catalogued:
        spellings = (
            key.upper(),
            key.replace("-", "_"),
            re.sub(r"-(.)", lambda m: m.group(1).upper(), key),
            f" {key.replace('-', ' ')}\u3000",
        )
        for spelling in spellings:
            assert normalise_key(spelling) == key, spelling
            assert squashed(spelling) in gpu_keys, spelling
