"""AMD compatibility profiles: consent, the hardware rule, host evidence, labels and status."""

from __future__ import annotations

from datetime import timedelta

import pytest

from planning.hardware.amd import ELIGIBLE_LABEL
from planning.hardware.compatibility import CompatibilityReason, engine_label
from planning.hardware.evidence import EvidenceState, read_evidence
from planning.snapshot import Snapshot
from tests.planning.builders import NOW, appliance, plan_of, status_of
from tests.planning.hardware.nodes import node, node_feature
from tests.planning.hardware.strix_halo import (
    DISCRETE_AMD,
    INTEL,
    NVIDIA,
    STRIX_HALO,
    amd_activation,
    amd_installed,
    consented,
    evidence,
    halo_feature,
    halo_node,
    node_patches,
)

AMD_NFD_SUPPORT_LABEL = "feature.node.kubernetes.io/amd-gpu"
ENGINES = {engine_label("OLlama"): "true", engine_label("VLLM"): "true"}


def compatibility(result) -> dict:
    return status_of(result, "Appliance", "local")["hardwareOperators"]["amd-gpu"]["compatibility"]


def halo_plan(activation_obj: dict, *objects: dict):
    return plan_of(appliance(), activation_obj, *amd_installed(), *objects)


@pytest.mark.parametrize(
    ("activation_obj", "reason"),
    [
        (amd_activation(), CompatibilityReason.PROFILE_NOT_SELECTED),
        (amd_activation(compatibilityProfile="strix-halo"), CompatibilityReason.CONSENT_REQUIRED),
        (
            amd_activation(compatibilityProfile="strix-halo", allowExperimental="false"),
            CompatibilityReason.CONSENT_REQUIRED,
        ),
        (
            amd_activation(compatibilityProfile="strix-halo", allowExperimental="yes"),
            CompatibilityReason.PARAMETERS_INVALID,
        ),
        (consented(), CompatibilityReason.PROFILE_APPLIES),
    ],
    ids=["upstream-only", "no-consent", "consent-false", "consent-not-a-boolean-string", "consented"],
)
def test_a_strix_halo_node_is_eligible_only_through_its_selected_profile_with_consent(activation_obj, reason) -> None:
    result = halo_plan(activation_obj, halo_node(), halo_feature())
    (entry,) = compatibility(result)["nodes"]
    assert entry["reason"] == reason
    assert entry["eligible"] is (reason is CompatibilityReason.PROFILE_APPLIES)
    assert ("halo" in node_patches(result)) is entry["eligible"]


@pytest.mark.parametrize(
    ("devices", "vendors", "applies"),
    [
        ((STRIX_HALO,), ("amd",), True),
        ((STRIX_HALO, NVIDIA), ("amd", "nvidia"), True),
        ((STRIX_HALO, DISCRETE_AMD), ("amd",), False),
        ((STRIX_HALO, INTEL), ("amd", "intel"), False),
        ((STRIX_HALO, ("0300", "1002", "1586")), ("amd",), False),
    ],
    ids=["one-apu", "nvidia-coexists", "second-amd-gpu", "intel-beside-it", "two-apus"],
)
def test_the_strix_halo_hardware_rule_is_exactly_one_matched_amd_gpu_with_only_nvidia_beside_it(
    devices, vendors, applies
) -> None:
    feature = node_feature("halo", *devices)
    if devices.count(STRIX_HALO) == 2:
        elements = feature["spec"]["features"]["instances"]["pci.device"]["elements"]
        elements[1]["attributes"]["subsystem_device"] = "0002"
    result = halo_plan(consented(), halo_node(vendors=vendors), feature)
    (entry,) = compatibility(result)["nodes"]
    assert entry["eligible"] is applies
    if not applies:
        assert entry["reason"] == CompatibilityReason.HARDWARE_RULE


@pytest.mark.parametrize(
    ("annotation", "state"),
    [
        (None, EvidenceState.MISSING),
        ("not json", EvidenceState.MALFORMED),
        (evidence().replace("gfx1151", "gfx1100"), EvidenceState.MALFORMED),
        (evidence(uid="uid-other"), EvidenceState.FOREIGN),
        (evidence(boot="boot-before-reboot"), EvidenceState.STALE),
        (evidence(kernel="6.8.0-old"), EvidenceState.STALE),
        (evidence(observed=NOW - timedelta(hours=2)), EvidenceState.STALE),
        (evidence(observed=NOW + timedelta(hours=1)), EvidenceState.STALE),
        (evidence(), EvidenceState.CURRENT),
    ],
    ids=[
        "missing",
        "not-json",
        "tampered-fingerprint",
        "foreign-uid",
        "other-boot",
        "other-kernel",
        "too-old",
        "future",
        "current",
    ],
)
def test_host_evidence_is_current_only_when_uid_boot_kernel_fingerprint_and_time_check_out(annotation, state) -> None:
    snapshot = Snapshot.from_objects([halo_node(annotation=annotation)])
    assert read_evidence(snapshot.nodes[0], NOW).state is state


@pytest.mark.parametrize(
    ("annotation", "reason"),
    [
        (evidence(boot="boot-before-reboot"), CompatibilityReason.EVIDENCE_NOT_CURRENT),
        (evidence(uid="uid-other"), CompatibilityReason.EVIDENCE_NOT_CURRENT),
        (evidence(architecture="gfx1100"), CompatibilityReason.ARCHITECTURE_MISMATCH),
        (evidence(driver_ready=False), CompatibilityReason.DRIVER_NOT_READY),
        (evidence(devices=("1002:744c",)), CompatibilityReason.EVIDENCE_MISMATCH),
    ],
    ids=["stale", "foreign", "wrong-architecture", "driver-not-ready", "other-device"],
)
def test_stale_or_foreign_or_contradicting_evidence_is_reported_and_never_used(annotation, reason) -> None:
    result = halo_plan(consented(), halo_node(annotation=annotation), halo_feature())
    (entry,) = compatibility(result)["nodes"]
    assert (entry["eligible"], entry["reason"], entry["engines"]) == (False, reason, [])
    assert "halo" not in node_patches(result)


def test_consent_fresh_evidence_and_a_registered_resource_enable_the_catalogued_engines() -> None:
    result = halo_plan(consented(), halo_node(), halo_feature())
    assert node_patches(result)["halo"] == {ELIGIBLE_LABEL: "true", **ENGINES}
    (entry,) = compatibility(result)["nodes"]
    assert entry["engines"] == ["OLlama", "VLLM"]


def test_an_eligible_node_without_a_registered_resource_gets_eligibility_but_no_engines_yet() -> None:
    result = halo_plan(consented(), halo_node(registered=False), halo_feature())
    assert node_patches(result)["halo"] == {ELIGIBLE_LABEL: "true"}


def test_the_program_never_writes_amds_nfd_support_label() -> None:
    result = halo_plan(consented(), halo_node(), halo_feature())
    written = {key for labels in node_patches(result).values() for key in labels}
    assert all(key.startswith("appliance.magicstick.dev/") for key in written)
    assert AMD_NFD_SUPPORT_LABEL not in written


def test_an_upstream_amd_gpu_stays_eligible_through_the_preflight_without_any_profile() -> None:
    result = halo_plan(
        amd_activation(), node("dgpu", "amd", allocatable={"amd.com/gpu": "1"}), node_feature("dgpu", DISCRETE_AMD)
    )
    (entry,) = compatibility(result)["nodes"]
    assert (entry["upstreamSupported"], entry["eligible"], entry["reason"]) == (
        True,
        True,
        CompatibilityReason.UPSTREAM,
    )
    assert node_patches(result)["dgpu"] == {ELIGIBLE_LABEL: "true"}


def test_an_unknown_profile_is_reported_and_means_upstream_support_only() -> None:
    result = halo_plan(
        amd_activation(compatibilityProfile="no-such-profile", allowExperimental="true"), halo_node(), halo_feature()
    )
    status = compatibility(result)
    assert status["reason"] == CompatibilityReason.PROFILE_UNKNOWN
    assert status["eligible"] is False


def test_the_compatibility_status_carries_every_field_of_the_contract() -> None:
    result = halo_plan(consented(), halo_node(), halo_feature())
    status = compatibility(result)
    expected = {
        "profileId": "strix-halo",
        "profileVersion": "1",
        "upstreamSupported": False,
        "optedIn": True,
        "eligible": True,
        "pciDevices": ["1002:1586"],
        "expectedArchitecture": "gfx1151",
        "detectedArchitecture": "gfx1151",
        "hostDriverReady": True,
        "resourceRegistered": True,
        "hostBootId": "boot-halo",
        "validationRequired": False,
    }
    assert {key: status[key] for key in expected} == expected
    assert status["hostFingerprint"].startswith("sha256:")
    assert set(status["validation"]) == {"OLlama", "VLLM"}
    assert {v["state"] for v in status["validation"].values()} == {"NotRequested"}
    assert "runtimeReady" in status


def test_engine_validation_never_gates_hardware_ready() -> None:
    result = halo_plan(consented(validationRequest="run-1"), halo_node(), halo_feature())
    operator = status_of(result, "Appliance", "local")["hardwareOperators"]["amd-gpu"]
    assert operator["phase"] == "Ready"
    assert operator["compatibility"]["validationRequired"] is False


def test_evidence_refreshed_by_the_timer_changes_nothing_in_the_plan() -> None:
    first = halo_plan(consented(), halo_node(annotation=evidence(observed=NOW - timedelta(minutes=9))), halo_feature())
    again = halo_plan(consented(), halo_node(annotation=evidence(observed=NOW - timedelta(minutes=1))), halo_feature())
    assert compatibility(first) == compatibility(again)
    assert node_patches(first) == node_patches(again)
