"""Appliance (Git-owned defaults) and ApplianceSetup (first-run lifecycle record)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from spec_cases import rejection

from api.appliance import ApplianceSpec
from api.setup import ApplianceSetupSpec, ApplianceSetupStatus
from api.validation import parse_spec

INSTALLATION_ID = "11111111-2222-3333-4444-555555555555"


def test_an_empty_appliance_spec_is_the_ai_workstation_profile_without_module_defaults() -> None:
    spec = parse_spec("Appliance", {})
    assert isinstance(spec, ApplianceSpec)
    assert (spec.profile, spec.source, spec.modules, spec.instances) == ("ai-workstation", None, {}, None)


@pytest.mark.parametrize("profile", ["minimal", "ai-workstation", "full"])
def test_appliance_profile_accepts_each_public_profile(profile: str) -> None:
    assert parse_spec("Appliance", {"profile": profile}).profile == profile


@pytest.mark.parametrize("profile", ["gpu", "Full", ""])
def test_appliance_profile_rejects_other_values(profile: str) -> None:
    assert rejection("Appliance", {"profile": profile}).field == "spec.profile"


def test_appliance_source_defaults_to_a_git_repository_and_requires_its_name() -> None:
    spec = parse_spec("Appliance", {"source": {"name": "flux-system"}})
    assert spec.source is not None
    assert (spec.source.kind, spec.source.name, spec.source.namespace) == ("GitRepository", "flux-system", None)
    assert rejection("Appliance", {"source": {"namespace": "flux-system"}}).field == "spec.source.name"


def test_appliance_source_rejects_other_source_kinds() -> None:
    assert rejection("Appliance", {"source": {"kind": "Bucket", "name": "x"}}).field == "spec.source.kind"


def test_appliance_module_defaults_are_enabled_unless_disabled() -> None:
    spec = parse_spec("Appliance", {"modules": {"basis": {}, "kubeai": {"enabled": False}}})
    assert {name: entry.enabled for name, entry in spec.modules.items()} == {"basis": True, "kubeai": False}


def test_appliance_module_default_rejects_unknown_fields() -> None:
    error = rejection("Appliance", {"modules": {"basis": {"enable": True}}})
    assert error.field == "spec.modules.basis.enable"


@pytest.mark.parametrize("instances", [[{"application": "openclaw"}], {"openclaw": {"default": {}}}, []])
def test_appliance_accepts_deprecated_instances_in_any_shape(instances: object) -> None:
    assert parse_spec("Appliance", {"instances": instances}).instances == instances


def test_appliance_setup_spec_carries_version_and_installation_id() -> None:
    spec = parse_spec("ApplianceSetup", {"setupVersion": "v1", "installationId": INSTALLATION_ID})
    assert isinstance(spec, ApplianceSetupSpec)
    assert (spec.setup_version, spec.installation_id) == ("v1", INSTALLATION_ID)


@pytest.mark.parametrize("missing", ["setupVersion", "installationId"])
def test_appliance_setup_spec_requires_both_fields(missing: str) -> None:
    spec = {"setupVersion": "v1", "installationId": INSTALLATION_ID}
    del spec[missing]
    assert rejection("ApplianceSetup", spec).field == f"spec.{missing}"


@pytest.mark.parametrize("installation_id", ["example.com", "1111-2222", INSTALLATION_ID + "0"])
def test_appliance_setup_installation_id_is_a_uuid(installation_id: str) -> None:
    spec = {"setupVersion": "v1", "installationId": installation_id}
    assert rejection("ApplianceSetup", spec).field == "spec.installationId"


@pytest.mark.parametrize("secret", ["password", "recoveryCodes", "claimToken", "session"])
def test_appliance_setup_spec_has_no_secret_bearing_field(secret: str) -> None:
    spec = {"setupVersion": "v1", "installationId": INSTALLATION_ID, secret: "CHANGEME"}
    assert rejection("ApplianceSetup", spec).field == f"spec.{secret}"


@pytest.mark.parametrize("phase", ["Pending", "Claimed", "Applying", "Completed", "Failed", "CompletedLegacy"])
def test_appliance_setup_status_accepts_each_lifecycle_phase(phase: str) -> None:
    assert ApplianceSetupStatus.model_validate({"phase": phase}).phase == phase


def test_appliance_setup_status_carries_timestamps_and_a_non_sensitive_error_code() -> None:
    status = ApplianceSetupStatus.model_validate(
        {"phase": "Failed", "claimedAt": "2026-01-01T00:00:00Z", "lastErrorCode": "KEYCLOAK_UNAVAILABLE"}
    )
    assert (status.claimed_at, status.last_error_code) == ("2026-01-01T00:00:00Z", "KEYCLOAK_UNAVAILABLE")


@pytest.mark.parametrize("secret", ["password", "recoveryCodes", "claim", "sessionId"])
def test_appliance_setup_status_has_no_secret_bearing_field(secret: str) -> None:
    with pytest.raises(ValidationError):
        ApplianceSetupStatus.model_validate({"phase": "Claimed", secret: "CHANGEME"})


def test_appliance_setup_error_code_is_a_code_not_a_message() -> None:
    with pytest.raises(ValidationError):
        ApplianceSetupStatus.model_validate({"phase": "Failed", "lastErrorCode": "password CHANGEME was rejected"})
