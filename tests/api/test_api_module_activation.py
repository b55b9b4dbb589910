"""ModuleActivation: free-form parameters, and the bounded amd-gpu and gpu parameters."""

from __future__ import annotations

import json

import pytest
from spec_cases import gpu_sharing, rejection

from api.modules import AmdGpuSharing, ModuleActivationSpec, NvidiaGpuSharing
from api.validation import parse_spec


def parse_module(module: str, **parameters: object) -> ModuleActivationSpec:
    spec = parse_spec("ModuleActivation", {"module": module, "parameters": parameters})
    assert isinstance(spec, ModuleActivationSpec)
    return spec


def test_module_activation_defaults_to_enabled_without_parameters() -> None:
    spec = parse_spec("ModuleActivation", {"module": "kubeai"})
    assert (spec.enabled, spec.parameters) == (True, {})


def test_module_name_must_not_be_empty() -> None:
    error = rejection("ModuleActivation", {"module": ""})
    assert (error.field, error.rule) == ("spec.module", "must not be empty")


def test_module_name_is_required() -> None:
    assert rejection("ModuleActivation", {"enabled": False}).field == "spec.module"


def test_ordinary_module_parameters_are_free_form() -> None:
    spec = parse_module("litellm", postgresStorage="5Gi", nested={"any": ["thing"]})
    assert spec.parameters == {"postgresStorage": "5Gi", "nested": {"any": ["thing"]}}


@pytest.mark.parametrize("sharing_as_text", [True, False])
def test_amd_gpu_accepts_its_bounded_parameters(sharing_as_text: bool) -> None:
    sharing = gpu_sharing("dra-shared", namespace="ai", slots=4)
    spec = parse_module(
        "amd-gpu",
        compatibilityProfile="strix-halo",
        allowExperimental="true",
        validationRequest="run-2026-01-01.1",
        gpuSharing=json.dumps(sharing) if sharing_as_text else sharing,
    )
    typed = spec.gpu_sharing()
    assert isinstance(typed, AmdGpuSharing)
    assert (typed.mode, typed.slots, typed.shared) == ("dra-shared", 4, True)


def test_amd_gpu_accepts_an_empty_profile_for_upstream_only_support() -> None:
    assert parse_module("amd-gpu", compatibilityProfile="", validationRequest="").gpu_sharing() is None


@pytest.mark.parametrize("key", ["image", "script", "nodeSelector", "testImage"])
def test_amd_gpu_rejects_parameters_outside_its_bounded_set(key: str) -> None:
    error = rejection("ModuleActivation", {"module": "amd-gpu", "parameters": {key: "CHANGEME"}})
    assert (error.field, error.rule) == (f"spec.parameters.{key}", "is not a field of this API")


@pytest.mark.parametrize("value", [True, "yes", "1", "True"])
def test_amd_gpu_allow_experimental_is_the_string_true_or_false(value: object) -> None:
    error = rejection("ModuleActivation", {"module": "amd-gpu", "parameters": {"allowExperimental": value}})
    assert error.field == "spec.parameters.allowExperimental"


@pytest.mark.parametrize("profile", ["Strix Halo", "-strix", "strix_halo", "x" * 64])
def test_amd_gpu_compatibility_profile_is_a_catalog_id(profile: str) -> None:
    error = rejection("ModuleActivation", {"module": "amd-gpu", "parameters": {"compatibilityProfile": profile}})
    assert error.field == "spec.parameters.compatibilityProfile"


@pytest.mark.parametrize("request_id", ["has space", "trailing-", "x" * 129, "$(reboot)"])
def test_amd_gpu_validation_request_is_a_bounded_identifier(request_id: str) -> None:
    error = rejection("ModuleActivation", {"module": "amd-gpu", "parameters": {"validationRequest": request_id}})
    assert error.field == "spec.parameters.validationRequest"


@pytest.mark.parametrize(("raw", "fragment"), [("{", "not valid JSON"), ("[]", "JSON object"), ("3", "JSON object")])
def test_gpu_sharing_must_be_a_json_object(raw: str, fragment: str) -> None:
    error = rejection("ModuleActivation", {"module": "amd-gpu", "parameters": {"gpuSharing": raw}})
    assert error.field == "spec.parameters.gpuSharing"
    assert fragment in error.rule


def test_gpu_sharing_json_text_is_bounded() -> None:
    raw = json.dumps({**gpu_sharing("exclusive"), "padding": "x" * 5000})
    error = rejection("ModuleActivation", {"module": "gpu", "parameters": {"gpuSharing": raw}})
    assert error.field == "spec.parameters.gpuSharing"
    assert "at most 4096" in error.rule


@pytest.mark.parametrize(("module", "foreign_mode"), [("amd-gpu", "time-slicing"), ("gpu", "dra-shared")])
def test_gpu_sharing_modes_are_vendor_specific(module: str, foreign_mode: str) -> None:
    error = rejection(
        "ModuleActivation", {"module": module, "parameters": {"gpuSharing": gpu_sharing(foreign_mode, slots=2)}}
    )
    assert error.field == "spec.parameters.gpuSharing.mode"


@pytest.mark.parametrize(("module", "mode"), [("amd-gpu", "dra-shared"), ("gpu", "time-slicing")])
def test_shared_modes_require_slots(module: str, mode: str) -> None:
    error = rejection("ModuleActivation", {"module": module, "parameters": {"gpuSharing": gpu_sharing(mode)}})
    assert error.field == "spec.parameters.gpuSharing.slots"
    assert "required" in error.rule


@pytest.mark.parametrize("module", ["amd-gpu", "gpu"])
def test_exclusive_mode_needs_no_slots(module: str) -> None:
    typed = parse_module(module, gpuSharing=gpu_sharing("exclusive")).gpu_sharing()
    assert typed is not None
    assert (typed.shared, typed.slots) == (False, None)


@pytest.mark.parametrize("namespace", ["default", "ai-system", ""])
def test_gpu_sharing_namespace_is_ai(namespace: str) -> None:
    sharing = gpu_sharing("time-slicing", slots=2, namespace=namespace)
    error = rejection("ModuleActivation", {"module": "gpu", "parameters": {"gpuSharing": sharing}})
    assert error.field == "spec.parameters.gpuSharing.namespace"


@pytest.mark.parametrize("missing", ["nodeName", "nodeUID"])
def test_gpu_sharing_selects_a_node_by_name_and_uid(missing: str) -> None:
    sharing = gpu_sharing("exclusive")
    del sharing[missing]
    error = rejection("ModuleActivation", {"module": "amd-gpu", "parameters": {"gpuSharing": sharing}})
    assert (error.field, error.rule) == (f"spec.parameters.gpuSharing.{missing}", "is required")


def test_gpu_sharing_rejects_unknown_fields() -> None:
    sharing = gpu_sharing("exclusive", nodeSelector={"kubernetes.io/hostname": "worker-1"})
    error = rejection("ModuleActivation", {"module": "gpu", "parameters": {"gpuSharing": sharing}})
    assert error.field == "spec.parameters.gpuSharing.nodeSelector"


def test_nvidia_gpu_keeps_its_other_parameters_free_form() -> None:
    spec = parse_module("gpu", driverVersion="CHANGEME", gpuSharing=json.dumps(gpu_sharing("time-slicing", slots=8)))
    assert isinstance(spec.gpu_sharing(), NvidiaGpuSharing)
    assert spec.parameters["driverVersion"] == "CHANGEME"


def test_gpu_sharing_is_none_for_modules_without_sharing() -> None:
    assert parse_module("litellm", gpuSharing="not even JSON").gpu_sharing() is None
