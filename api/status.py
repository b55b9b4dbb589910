"""Status types the program writes.

Status carries no value that moves on its own: timestamps change only on a transition, so a
converged run writes nothing.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from api.meta import ApiModel, Condition

ModulePhase = Literal[
    "Ready",
    "Reconciling",
    "Suspended",
    "WaitingForModules",
    "WaitingForCRD",
    "Degraded",
    "Disabled",
    "Failed",
]
AppliancePhase = Literal["Ready", "Reconciling", "Degraded"]
HardwarePhase = Literal[
    "NotRequired", "Detected", "Installing", "Ready", "Unknown", "Disabled", "Unsupported", "Conflict", "Degraded"
]


class EngineValidationStatus(ApiModel):
    """One engine's stage in the last validation run of a compatibility profile (advisory)."""

    state: Literal[
        "NotRequested",
        "Blocked",
        "Pending",
        "Starting",
        "Running",
        "Passed",
        "Failed",
        "Interrupted",
        "NotRun",
        "Stale",
    ]
    run_id: str | None = Field(default=None, alias="runID")
    image: str | None = None
    image_id: str | None = Field(default=None, alias="imageID")
    job: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    reason: str | None = None
    message: str | None = None


class PciDeviceStatus(ApiModel):
    """One physical GPU as Node Feature Discovery lists it; never a sharing slot."""

    node: str
    node_uid: str | None = Field(default=None, alias="nodeUID")
    vendor: str
    device: str
    pci_class: str = Field(alias="class")
    subsystem_vendor: str | None = None
    subsystem_device: str | None = None
    memory_architecture: Literal["unified", "discrete"] | None = None
    """Present for a GPU that shares system RAM (an APU): ``unified``."""
    shared_pool_id: str | None = None
    """The memory pool a unified GPU shares with Linux: the Node UID."""
    gpu_allocation_mode: Literal["firmware-reserved", "shared-gtt", "unknown"] | None = None
    physical_memory_mi: int | None = Field(default=None, ge=1)
    """OS-visible MemTotal of the pool in MiB, not installed-memory inventory."""
    gpu_accessible_mi: int | None = Field(default=None, ge=1)
    """Conservative GTT/TTM bound of GPU-accessible memory within the pool, in MiB."""
    engines: dict[str, EngineValidationStatus] = Field(default_factory=dict)
    """Per-engine results of the last diagnostic bound to this device (advisory, never a gate)."""
    diagnostic_request: str | None = None
    """The device-validation request those results belong to."""


class _HostSupport(ApiModel):
    """What a compatibility profile found on a host, for one node or the whole appliance."""

    upstream_supported: bool
    opted_in: bool
    eligible: bool
    pci_devices: list[str] = Field(default_factory=list)
    expected_architecture: str | None = None
    detected_architecture: str | None = None
    host_driver_ready: bool = False
    resource_registered: bool = False
    host_fingerprint: str | None = None
    host_boot_id: str | None = None


class CompatibilityNodeStatus(_HostSupport):
    """Per-node evidence of a compatibility profile: what the node is and what the host reports."""

    node: str
    node_uid: str | None = Field(default=None, alias="nodeUID")
    profile_id: str | None = None
    profile_version: str | None = None
    evidence: str
    """Current, Missing, Malformed, Foreign or Stale (planning.hardware.evidence)."""
    engines: list[str] = Field(default_factory=list)
    """Engines enabled on the node: consent, current evidence and a registered resource."""
    reason: str
    message: str


class DeviceDiagnosticStatus(ApiModel):
    """One queued or finished per-device diagnostic (device-validation-* annotation)."""

    request: str
    node: str
    device: str
    state: Literal["Queued", "Running", "Finished", "Stale", "Rejected"]
    engines: dict[str, EngineValidationStatus] = Field(default_factory=dict)
    message: str = ""


class DraDeviceStatus(ApiModel):
    """One device a DRA driver publishes in a ResourceSlice: physical inventory, never a slot."""

    node: str
    pool: str
    device: str
    pci_address: str | None = None


class DraSharingStatus(ApiModel):
    """compatibility.sharing (amd-gpu): the allocation transition and the actual DRA devices."""

    applied_mode: Literal["exclusive", "dra-shared"]
    desired_mode: Literal["exclusive", "dra-shared"]
    phase: str
    claim: str | None = None
    """namespace/name of the shared ResourceClaim, while it exists."""
    claim_device: DraDeviceStatus | None = None
    devices: list[DraDeviceStatus] = Field(default_factory=list)
    device_count: int = 0
    """How many devices `devices` stands for: the list holds the first of them."""


class GpuSharingStatus(ApiModel):
    """hardwareOperators.<gpu|amd-gpu>.sharing: who manages sharing and where a transition stands.

    Slots are what the sharing offers to models; the device inventory (`devices`) counts
    physical GPUs only."""

    management: Literal["magicstick", "default"]
    desired_mode: str | None = None
    observed_phase: Literal["Default", "Active", "Draining", "Applying", "NodeNotFound", "Conflict", "Unsupported"]
    applied_mode: str
    node: str | None = None
    node_uid: str | None = Field(default=None, alias="nodeUID")
    slots: int | None = None
    slot_limit: int | None = None
    physical_gpus: int = 0
    admitted_models: list[str] = Field(default_factory=list)
    admitted_model_count: int = 0
    waiting_models: list[str] = Field(default_factory=list)
    message: str = ""


class CompatibilityStatus(_HostSupport):
    """hardwareOperators.amd-gpu.compatibility: profile, node, host/resource and the optional
    per-engine validation stages. Validation is advisory: it never gates Ready."""

    catalog_version: str
    profiles: list[str] = Field(default_factory=list)
    profile_id: str
    """The selected profile; empty for upstream-only support."""
    profile_version: str | None = None
    experimental: bool | None = None
    nodes: list[CompatibilityNodeStatus] = Field(default_factory=list)
    validation_required: Literal[False] = False
    validation_request: str | None = None
    validation: dict[str, EngineValidationStatus] = Field(default_factory=dict)
    device_diagnostics: list[DeviceDiagnosticStatus] = Field(default_factory=list)
    memory_accounting_verified: bool = False
    """Whether the unified pool's GPU memory accounting has been verified on the host. Nothing
    verifies it today, and a Ready model never implies it: always false."""
    runtime_ready: bool
    """KubeAI runs the AMD images it should (planning.hardware.runtime_adoption)."""
    runtime_reason: str | None = None
    runtime_message: str | None = None
    effective_images: dict[str, str] = Field(default_factory=dict)
    """Engine -> the AMD image KubeAI's effective configuration (ai/kubeai-config) gives models."""
    runtime_images: dict[str, str] = Field(default_factory=dict)
    """Engine -> the image KubeAI is configured with for AMD models: the validated digest from
    flux-system/magicstick-gpu-runtime-images, else the catalog's release image (empty)."""
    reason: str
    message: str
    sharing: DraSharingStatus | None = None


class HardwareOperatorStatus(ApiModel):
    """One entry of Appliance.status.hardwareOperators (gpu, amd-gpu, intel-gpu: always all three)."""

    display_name: str
    phase: HardwarePhase
    needed: bool
    operator_active: bool
    managed_by: Literal["magicstick", "external", "none"]
    operator_version: str | None = None
    detected_nodes: list[str] = Field(default_factory=list)
    compatible_nodes: list[str] = Field(default_factory=list)
    allocatable_resources: int = 0
    resource_names: list[str] = Field(default_factory=list)
    devices: list[PciDeviceStatus] = Field(default_factory=list)
    message: str = ""
    detected_node_count: int = 0
    """How many nodes `detectedNodes` stands for: the list names the first of them by name."""
    compatible_node_count: int = 0
    """How many nodes `compatibleNodes` stands for: the list names the first of them by name."""
    device_count: int = 0
    """How many GPUs `devices` stands for: the list holds the first of them."""
    compatibility: CompatibilityStatus | None = None
    """amd-gpu only: Magic Stick's compatibility profiles (planning.hardware.compatibility)."""
    sharing: GpuSharingStatus | None = None
    """gpu and amd-gpu: GPU sharing (planning.hardware.sharing)."""


class MemoryEstimateStatus(ApiModel):
    """ModelActivation.status.memoryEstimate: the estimator object (planning.models.memory), in MiB.

    An unknown value is omitted (null), never 0.
    """

    ram_minimum_mi: int = Field(ge=0)
    ram_recommended_mi: int = Field(ge=0)
    ram_maximum_mi: int | None = Field(default=None, ge=1)
    gpu_minimum_mi: int | None = Field(default=None, ge=0)
    gpu_recommended_mi: int | None = Field(default=None, ge=0)
    fits_vram: bool | None = None
    weights_mi: int | None = Field(default=None, ge=1)
    cache_mi: int | None = Field(default=None, ge=0)
    runtime_mi: int = Field(ge=0)


class ModuleStatus(ApiModel):
    """One entry of Appliance.status.modules, keyed by canonical module name."""

    phase: ModulePhase
    kustomization: str | None = None
    auto_enabled: bool | None = None
    requested_by: list[str] | None = None
    """The first requesters by name (planning.status.LISTED_REQUESTERS); `requestedByCount` counts them all."""
    requested_by_count: int | None = None
    message: str | None = None


class ListSummary(ApiModel):
    """Counts beside a bounded map of Appliance.status (models, instances): it lists `listed` of
    `total` entries; `phases` counts all of them by phase."""

    total: int
    listed: int
    phases: dict[str, int] = Field(default_factory=dict)


class ActivationStatus(ApiModel):
    """Status of one runtime CR (ModuleActivation, ModelActivation, AppInstance).

    Later issues extend this with kind-specific fields; the common part is always present.
    """

    model_config = ApiModel.model_config | {"extra": "allow"}

    phase: str
    reason: str | None = None
    message: str | None = None
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)


class ApplianceStatus(ApiModel):
    """Appliance/local.status: the aggregate read model of the installation."""

    model_config = ApiModel.model_config | {"extra": "allow"}

    phase: AppliancePhase
    observed_generation: int | None = None
    modules: dict[str, ModuleStatus] = Field(default_factory=dict)
    hardware_operators: dict[str, HardwareOperatorStatus] = Field(default_factory=dict)
    instances: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    instances_summary: ListSummary | None = None
    models: dict[str, dict[str, Any]] = Field(default_factory=dict)
    models_summary: ListSummary | None = None
    conditions: list[Condition] = Field(default_factory=list)
    next_reconcile_at: Annotated[str, Field(json_schema_extra={"format": "date-time"})] | None = Field(
        default=None,
        description=(
            "The earliest moment still to come at which a state changes with time alone (a Pod creation "
            "stall, a Pod recovery attempt, host evidence turning stale or current), RFC 3339 UTC; the "
            "reconcile trigger requests a run then. Absent when nothing waits for time."
        ),
    )
    next_reconcile_reason: str | None = Field(
        default=None, description="What nextReconcileAt waits for: <Kind> <namespace>/<name>: <what changes>."
    )
