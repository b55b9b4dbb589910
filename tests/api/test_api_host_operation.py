"""HostOperation: node/boot/request binding, per-action fields and the read-only status."""

from __future__ import annotations

import pytest
from spec_cases import GPU_MEMORY, NETWORK_REF, VALID_HOST_OPERATIONS, host_operation, rejection

from api.hostoperations import HostOperationSpec, HostOperationStatus
from api.validation import parse_spec


@pytest.mark.parametrize("action", sorted(VALID_HOST_OPERATIONS))
def test_each_action_is_accepted_with_its_required_fields(action: str) -> None:
    spec = parse_spec("HostOperation", VALID_HOST_OPERATIONS[action])
    assert isinstance(spec, HostOperationSpec)
    assert spec.action == action


def test_wire_names_keep_their_uppercase_ids() -> None:
    wire = parse_spec("HostOperation", VALID_HOST_OPERATIONS["reboot"]).to_wire()
    assert {"nodeUID", "bootID", "requestID"} <= wire.keys()


@pytest.mark.parametrize("missing", ["nodeName", "nodeUID", "bootID", "requestID", "acknowledgeDisruption"])
def test_a_request_is_bound_to_node_boot_request_and_acknowledgement(missing: str) -> None:
    spec = host_operation("reboot")
    del spec[missing]
    assert (rejection("HostOperation", spec).field, rejection("HostOperation", spec).rule) == (
        f"spec.{missing}",
        "is required",
    )


def test_disruption_must_be_acknowledged_explicitly() -> None:
    error = rejection("HostOperation", host_operation("reboot", acknowledgeDisruption=False))
    assert (error.field, error.rule) == ("spec.acknowledgeDisruption", "acknowledgeDisruption must be true")


@pytest.mark.parametrize("action", ["update", "shell", "mount"])
def test_unknown_actions_are_rejected(action: str) -> None:
    assert rejection("HostOperation", host_operation(action)).field == "spec.action"


@pytest.mark.parametrize("action", ["prepare-gpu", "configure-gpu-memory", "configure-network", "clear-model-cache"])
def test_plan_bound_actions_require_a_plan_id(action: str) -> None:
    spec = dict(VALID_HOST_OPERATIONS[action])
    del spec["planId"]
    error = rejection("HostOperation", spec)
    assert error.field == "spec.planId"
    assert action in error.rule


def test_prepare_gpu_requires_an_explicit_experiment_consent() -> None:
    error = rejection("HostOperation", host_operation("prepare-gpu", planId="plan-1"))
    assert error.field == "spec.experimentConsent"


def test_prepare_gpu_accepts_a_declined_experiment_consent() -> None:
    spec = parse_spec("HostOperation", host_operation("prepare-gpu", planId="plan-1", experimentConsent=False))
    assert spec.experiment_consent is False


@pytest.mark.parametrize("consent", [None, False])
def test_configure_gpu_memory_requires_experiment_consent_true(consent: bool | None) -> None:
    spec = host_operation("configure-gpu-memory", planId="plan-1", gpuMemory=GPU_MEMORY)
    if consent is not None:
        spec["experimentConsent"] = consent
    error = rejection("HostOperation", spec)
    assert error.field == "spec.experimentConsent"
    assert "must be true" in error.rule


def test_configure_gpu_memory_requires_gpu_memory() -> None:
    error = rejection("HostOperation", host_operation("configure-gpu-memory", planId="plan-1", experimentConsent=True))
    assert error.field == "spec.gpuMemory"


def test_configure_gpu_memory_rejects_the_mixed_system_experiment_mode() -> None:
    spec = {**VALID_HOST_OPERATIONS["configure-gpu-memory"], "experimentMode": "mixed-system"}
    error = rejection("HostOperation", spec)
    assert error.field == "spec.experimentMode"
    assert "mixed-system" in error.rule


@pytest.mark.parametrize(
    "action", ["prepare-gpu", "configure-network", "scan-wifi", "reboot", "poweroff", "clear-model-cache"]
)
def test_gpu_memory_is_rejected_for_every_other_action(action: str) -> None:
    spec = {**VALID_HOST_OPERATIONS[action], "gpuMemory": GPU_MEMORY}
    error = rejection("HostOperation", spec)
    assert error.field == "spec.gpuMemory"


@pytest.mark.parametrize(
    ("gpu_memory", "field"),
    [
        ({"carveoutIndex": 1}, "dynamicLimitMi"),
        ({"carveoutIndex": 1.5, "dynamicLimitMi": 1024}, "carveoutIndex"),
        ({"carveoutIndex": -1, "dynamicLimitMi": 1024}, "carveoutIndex"),
        ({"carveoutIndex": 1, "dynamicLimitMi": 1024, "devicePath": "/dev/CHANGEME"}, "devicePath"),
    ],
)
def test_gpu_memory_holds_only_the_integer_carveout_index_and_dynamic_limit(gpu_memory: dict, field: str) -> None:
    spec = {**VALID_HOST_OPERATIONS["configure-gpu-memory"], "gpuMemory": gpu_memory}
    assert rejection("HostOperation", spec).field == f"spec.gpuMemory.{field}"


@pytest.mark.parametrize("action", ["prepare-gpu", "scan-wifi", "reboot", "clear-model-cache"])
def test_network_ref_is_rejected_outside_configure_network(action: str) -> None:
    spec = {**VALID_HOST_OPERATIONS[action], "networkRef": NETWORK_REF}
    assert rejection("HostOperation", spec).field == "spec.networkRef"


@pytest.mark.parametrize(
    ("network_ref", "field"),
    [({"name": "wifi-credentials"}, "uid"), ({"name": "wifi", "uid": "u", "password": "CHANGEME"}, "password")],
)
def test_network_ref_is_a_secret_name_and_uid_never_a_password(network_ref: dict, field: str) -> None:
    spec = {**VALID_HOST_OPERATIONS["configure-network"], "networkRef": network_ref}
    assert rejection("HostOperation", spec).field == f"spec.networkRef.{field}"


@pytest.mark.parametrize(("field", "value"), [("experimentConsent", True), ("experimentMode", "single-gpu")])
def test_clear_model_cache_rejects_experiment_settings(field: str, value: object) -> None:
    spec = {**VALID_HOST_OPERATIONS["clear-model-cache"], field: value}
    assert rejection("HostOperation", spec).field == f"spec.{field}"


@pytest.mark.parametrize("field", ["path", "cachePath", "devicePath", "script", "image", "command"])
def test_no_filesystem_path_or_executable_field_is_accepted(field: str) -> None:
    spec = {**VALID_HOST_OPERATIONS["clear-model-cache"], field: "/var/lib/CHANGEME"}
    error = rejection("HostOperation", spec)
    assert (error.field, error.rule) == (f"spec.{field}", "is not a field of this API")


@pytest.mark.parametrize(
    "phase",
    [
        "Pending",
        "Running",
        "Registering",
        "Validating",
        "Applying",
        "AwaitingConfirmation",
        "Succeeded",
        "Failed",
        "RolledBack",
    ],
)
def test_status_reads_every_worker_phase(phase: str) -> None:
    assert HostOperationStatus.model_validate({"phase": phase}).phase == phase


@pytest.mark.parametrize(
    ("phase", "active"),
    [
        (None, True),
        ("Pending", True),
        ("Registering", True),
        ("AwaitingConfirmation", True),
        ("Succeeded", False),
        ("Failed", False),
        ("RolledBack", False),
    ],
)
def test_an_operation_is_active_until_a_terminal_phase(phase: str | None, active: bool) -> None:
    assert HostOperationStatus(phase=phase).is_active() is active


def test_status_keeps_fields_the_worker_adds() -> None:
    status = HostOperationStatus.model_validate(
        {"phase": "AwaitingConfirmation", "confirmationDeadline": "2026-01-01T00:00:00Z", "step": 3}
    )
    assert status.confirmation_deadline == "2026-01-01T00:00:00Z"
    assert status.model_extra == {"step": 3}


SECRET_NAMES_REFUSED = [
    "x/../../identity-system/secrets/idp-admin",
    "Wifi",
    "-wifi",
    "wifi-",
    "wi fi",
    "wifi\n",
    "a" * 254,
]


@pytest.mark.parametrize("name", SECRET_NAMES_REFUSED)
def test_a_network_ref_name_that_is_not_a_secret_name_is_rejected(name: str) -> None:
    spec = {**VALID_HOST_OPERATIONS["configure-network"], "networkRef": {**NETWORK_REF, "name": name}}
    assert rejection("HostOperation", spec).field == "spec.networkRef.name"


@pytest.mark.parametrize("name", ["wifi", "home.wifi-1", "a" * 253, "0"])
def test_a_network_ref_name_is_any_dns_subdomain(name: str) -> None:
    spec = parse_spec(
        "HostOperation", {**VALID_HOST_OPERATIONS["configure-network"], "networkRef": {**NETWORK_REF, "name": name}}
    )
    assert spec.network_ref is not None and spec.network_ref.name == name


@pytest.mark.parametrize("request_id", ["req-1\ninstall amdgpu /bin/sh", "req 1", "-req", "req#1", "r\u2028"])
def test_a_request_id_is_an_identifier_since_the_host_writes_it_into_its_files(request_id: str) -> None:
    assert rejection("HostOperation", host_operation("reboot", requestID=request_id)).field == "spec.requestID"


@pytest.mark.parametrize("request_id", ["r", "request-1", "0f0e7a52-0000-4000-8000-000000000000", "scan_wifi.2"])
def test_a_request_id_may_be_a_uuid_or_a_name(request_id: str) -> None:
    assert parse_spec("HostOperation", host_operation("reboot", requestID=request_id)).request_id == request_id


def test_status_reads_scanned_networks_and_whether_each_ssid_is_escaped() -> None:
    status = HostOperationStatus.model_validate(
        {
            "phase": "Succeeded",
            "networks": [
                {
                    "interface": "wlan0",
                    "ssid": "Clear\\x1b[2J",
                    "ssidEscaped": True,
                    "signalDbm": -41,
                    "security": "wpa2",
                }
            ],
        }
    )
    assert status.networks is not None and status.networks[0].ssid_escaped is True
