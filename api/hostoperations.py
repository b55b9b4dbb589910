"""HostOperation: a node-local request carried out by the host's root worker.

The dashboard creates requests and the root worker owns status; this program only reads them.
The spec is immutable once created and is bound to one node (name and UID), one boot, one
unique request ID and an explicit disruption acknowledgement. Per action:

- ``prepare-gpu`` binds the local plan (``planId``) and the experiment consent given;
- ``configure-gpu-memory`` requires ``planId``, ``experimentConsent: true`` and ``gpuMemory``
  (only the integers ``carveoutIndex`` and ``dynamicLimitMi``), and cannot use the
  ``mixed-system`` experiment mode;
- ``configure-network`` requires ``planId`` and may reference one Secret (``networkRef``, name
  and UID), never a password; the name is a Secret name (a DNS-1123 subdomain), so it cannot
  reach another path of the API server;
- ``clear-model-cache`` requires ``planId`` and carries no hardware, network or experiment
  field;
- ``gpuMemory`` belongs to configure-gpu-memory and ``networkRef`` to configure-network only.

No field is a filesystem path, device path, image or script. ``requestID`` is an identifier
(letters, digits, ``.``, ``_``, ``-``): the host agent writes it into the comments of the files
it owns, so it can carry no line break. It is unique among the namespace's HostOperations; no
schema or admission rule sees other objects, so the host agent enforces it: a second operation
carrying one is Failed / DuplicateRequestID and never run (services/host_agent/requests.py).

The status is open (the agent adds action-specific fields); ``networks`` (scan-wifi) is typed.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from api.meta import ApiModel
from api.vocabulary import HostOperationReason

__all__ = ["HostOperationReason"]

HostAction = Literal[
    "prepare-gpu",
    "configure-gpu-memory",
    "configure-network",
    "scan-wifi",
    "reboot",
    "poweroff",
    "clear-model-cache",
]
HostOperationPhase = Literal[
    "Pending",
    "Running",
    "Registering",
    "Validating",
    "Applying",
    "AwaitingConfirmation",
    "Succeeded",
    "Failed",
    "RolledBack",
]


class HostPhase(StrEnum):
    """`status.phase` of a HostOperation, as the host agent writes it (HostOperationPhase's values)."""

    PENDING = "Pending"
    RUNNING = "Running"
    REGISTERING = "Registering"
    VALIDATING = "Validating"
    """Accepted from older agents for migration; this agent reports Registering instead."""
    APPLYING = "Applying"
    AWAITING_CONFIRMATION = "AwaitingConfirmation"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    ROLLED_BACK = "RolledBack"


TERMINAL_PHASES: frozenset[str] = frozenset({HostPhase.SUCCEEDED, HostPhase.FAILED, HostPhase.ROLLED_BACK})
"""Phases after which a HostOperation no longer acts on its node."""

PLAN_BOUND_ACTIONS: tuple[str, ...] = ("prepare-gpu", "configure-gpu-memory", "configure-network", "clear-model-cache")
"""Actions that must name the current plan they were computed against."""

MIXED_SYSTEM_EXPERIMENT = "mixed-system"

DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A Kubernetes object name such as a Secret's (DNS-1123 subdomain; at most 253 characters)."""
REQUEST_ID_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"
"""A request ID: a UUID or a name; no space, no line break, nothing a file's comment could end at."""
MAX_SCANNED_NETWORKS = 50


class GpuMemorySettings(ApiModel):
    """Desired GPU memory layout: a firmware carve-out choice and a dynamic limit."""

    carveout_index: int = Field(ge=0, description="Index of an advertised firmware carve-out choice.")
    dynamic_limit_mi: int = Field(ge=0, description="Dynamic GPU memory limit in MiB.")


class NetworkRef(ApiModel):
    """The Secret holding network credentials, pinned by UID."""

    name: str = Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)
    uid: str = Field(min_length=1, max_length=64)


class HostOperationSpec(ApiModel):
    """An immutable request for one node-local action."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "spec is immutable"},
                {"rule": "self.acknowledgeDisruption == true", "message": "acknowledgeDisruption must be true"},
                {
                    "rule": "!(self.action in ['" + "', '".join(PLAN_BOUND_ACTIONS) + "']) || has(self.planId)",
                    "message": "planId is required for this action",
                },
                {
                    "rule": "has(self.gpuMemory) == (self.action == 'configure-gpu-memory')",
                    "message": "gpuMemory is required for configure-gpu-memory and rejected otherwise",
                },
                {
                    "rule": "self.action != 'configure-gpu-memory' || "
                    "(has(self.experimentConsent) && self.experimentConsent)",
                    "message": "configure-gpu-memory requires experimentConsent true",
                },
                {
                    "rule": "self.action != 'configure-gpu-memory' || !has(self.experimentMode) || "
                    f"self.experimentMode != '{MIXED_SYSTEM_EXPERIMENT}'",
                    "message": "configure-gpu-memory cannot use the mixed-system experimentMode",
                },
                {
                    "rule": "self.action != 'prepare-gpu' || has(self.experimentConsent)",
                    "message": "prepare-gpu requires an explicit experimentConsent",
                },
                {
                    "rule": "!has(self.networkRef) || self.action == 'configure-network'",
                    "message": "networkRef is only accepted for configure-network",
                },
                {
                    "rule": "self.action != 'clear-model-cache' || "
                    "(!has(self.experimentConsent) && !has(self.experimentMode))",
                    "message": "clear-model-cache accepts no hardware, network or experiment fields",
                },
            ]
        }
    }

    action: HostAction
    node_name: str = Field(min_length=1, max_length=253)
    node_uid: str = Field(min_length=1, max_length=64, alias="nodeUID")
    boot_id: str = Field(min_length=1, max_length=64, alias="bootID")
    request_id: str = Field(min_length=1, max_length=128, alias="requestID", pattern=REQUEST_ID_PATTERN)
    acknowledge_disruption: bool
    plan_id: str | None = Field(default=None, min_length=1, max_length=128, validate_default=True)
    experiment_consent: bool | None = Field(default=None, validate_default=True)
    experiment_mode: str | None = Field(default=None, min_length=1, max_length=63)
    gpu_memory: GpuMemorySettings | None = Field(default=None, validate_default=True)
    network_ref: NetworkRef | None = None

    @field_validator("acknowledge_disruption")
    @classmethod
    def _acknowledged(cls, acknowledged: bool) -> bool:
        if not acknowledged:
            raise ValueError("acknowledgeDisruption must be true")
        return acknowledged

    @field_validator("plan_id")
    @classmethod
    def _plan_bound(cls, plan_id: str | None, info: ValidationInfo) -> str | None:
        action = info.data.get("action")
        if plan_id is None and action in PLAN_BOUND_ACTIONS:
            raise ValueError(f"planId is required for action {action}")
        return plan_id

    @field_validator("experiment_consent")
    @classmethod
    def _consent(cls, consent: bool | None, info: ValidationInfo) -> bool | None:
        action = info.data.get("action")
        if action == "prepare-gpu" and consent is None:
            raise ValueError("experimentConsent (true or false) is required for action prepare-gpu")
        if action == "configure-gpu-memory" and consent is not True:
            raise ValueError("experimentConsent must be true for action configure-gpu-memory")
        if action == "clear-model-cache" and consent is not None:
            raise ValueError("experimentConsent is not accepted for action clear-model-cache")
        return consent

    @field_validator("experiment_mode")
    @classmethod
    def _experiment_mode(cls, mode: str | None, info: ValidationInfo) -> str | None:
        action = info.data.get("action")
        if mode is not None and action == "clear-model-cache":
            raise ValueError("experimentMode is not accepted for action clear-model-cache")
        if mode == MIXED_SYSTEM_EXPERIMENT and action == "configure-gpu-memory":
            raise ValueError("experimentMode mixed-system is not accepted for action configure-gpu-memory")
        return mode

    @field_validator("gpu_memory")
    @classmethod
    def _gpu_memory_only_for_memory_action(
        cls, gpu_memory: GpuMemorySettings | None, info: ValidationInfo
    ) -> GpuMemorySettings | None:
        action = info.data.get("action")
        if action == "configure-gpu-memory" and gpu_memory is None:
            raise ValueError("gpuMemory is required for action configure-gpu-memory")
        if action is not None and action != "configure-gpu-memory" and gpu_memory is not None:
            raise ValueError(f"gpuMemory is only accepted for action configure-gpu-memory, not {action}")
        return gpu_memory

    @field_validator("network_ref")
    @classmethod
    def _network_ref_only_for_network_action(cls, ref: NetworkRef | None, info: ValidationInfo) -> NetworkRef | None:
        action = info.data.get("action")
        if ref is not None and action is not None and action != "configure-network":
            raise ValueError(f"networkRef is only accepted for action configure-network, not {action}")
        return ref


class ScannedNetwork(ApiModel):
    """One Wi-Fi network a scan-wifi operation found (no BSSID: that is a MAC address)."""

    interface: str = Field(min_length=1, max_length=15)
    ssid: str = Field(
        min_length=1,
        max_length=128,
        description="The SSID as printable text. When ssidEscaped, ``\\xNN`` is a byte (an ASCII control "
        "character, or a byte that is not UTF-8), ``\\uNNNN`` or ``\\UNNNNNNNN`` a character that is not printable, "
        "and ``\\\\`` a backslash.",
    )
    ssid_escaped: bool = Field(
        default=False,
        description="True when ssid holds escapes: the network's name has bytes or characters that are not printable.",
    )
    signal_dbm: int
    security: Literal["wpa2", "wpa", "wep", "open"]


class HostOperationStatus(ApiModel):
    """Status written by the root worker; this program reads it and never writes it."""

    model_config = ApiModel.model_config | {"extra": "allow"}

    phase: HostOperationPhase | None = None
    reason: str | None = None
    message: str | None = None
    observed_generation: int | None = None
    confirmation_deadline: str | None = None
    networks: list[ScannedNetwork] | None = Field(
        default=None, max_length=MAX_SCANNED_NETWORKS, description="scan-wifi: the networks found, strongest first."
    )

    def is_active(self) -> bool:
        """True until the operation reaches a terminal phase (a missing phase is Pending)."""
        return self.phase not in TERMINAL_PHASES


CONFIRMATION_ANNOTATION = "appliance.magicstick.dev/confirmed-request"
"""Set by an administrator to the operation's requestID: confirms a configure-network change
(metadata only: the spec stays immutable)."""
