"""The status vocabulary: every phase, condition type and reason the program writes, as typed
wire strings, in the lowest layer so that planning, providers and services share one spelling.

Each enum names one kind of outcome; `REASON_VOCABULARIES` lists them all, and `StatusReason`
is what a status's `reason` and a condition's `reason` may hold. A reason another controller
wrote (a PKO Stack's Stalled reason) is copied as a `ForeignReason`, never as a bare string.

The conditions follow the kstatus convention (Flux, `kubectl wait`): `Ready` is normal-true;
`Reconciling` and `Stalled` are abnormal-true, present only while True. Whether an outcome
stalls is decided here (`stalls`): the user must act before anything changes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, NewType


class Phase(StrEnum):
    """`status.phase` of a ModuleActivation, ModelActivation, AppInstance and Appliance/local,
    and of a module in Appliance.status.modules."""

    READY = "Ready"
    RECONCILING = "Reconciling"
    PENDING = "Pending"
    STARTING = "Starting"
    WAITING_FOR_MODULES = "WaitingForModules"
    WAITING_FOR_CRD = "WaitingForCRD"
    WAITING_FOR_GPU = "WaitingForGPU"
    WAITING_FOR_POD = "WaitingForPod"
    SUSPENDED = "Suspended"
    CONFLICT = "Conflict"
    DEGRADED = "Degraded"
    FAILED = "Failed"
    DISABLED = "Disabled"


class ConditionType(StrEnum):
    READY = "Ready"
    """Normal-true: True when the object is what its spec asks, for its current generation."""
    RECONCILING = "Reconciling"
    """Abnormal-true: present (True) while the object waits or progresses towards Ready."""
    STALLED = "Stalled"
    """Abnormal-true: present (True) while nothing changes until someone acts."""
    OPERATOR_STALLED = "OperatorStalled"
    """Appliance/local: the Pulumi Kubernetes Operator's Stack has stopped retrying."""


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Reason(StrEnum):
    """Why a runtime object or Appliance/local is in its phase, as planning decides it."""

    READY = "Ready"
    DISABLED = "Disabled"
    INVALID_SPEC = "InvalidSpec"
    CATALOG_INVALID = "CatalogInvalid"
    UNKNOWN_MODULE = "UnknownModule"
    UNKNOWN_APPLICATION = "UnknownApplication"
    DUPLICATE_ACTIVATION = "DuplicateActivation"
    WAITING_FOR_MODULES = "WaitingForModules"
    MODULE_DISABLED = "RequiredModuleDisabled"
    DEPENDENCY_NOT_READY = "DependencyNotReady"
    WAITING_FOR_CRD = "WaitingForCRD"
    RECONCILING = "Reconciling"
    KUSTOMIZATION_FAILED = "KustomizationFailed"
    HELM_RELEASE_FAILED = "HelmReleaseFailed"
    MODULES_DEGRADED = "ModulesDegraded"
    WAITING_FOR_INSTANCES = "WaitingForInstances"
    WAITING_FOR_ACCESS_GUARD = "WaitingForAccessGuard"
    ACCESS_GUARD_REJECTED = "AccessGuardRejected"
    WAITING_FOR_ROUTES = "WaitingForRoutes"
    ROUTE_REJECTED = "RouteRejected"
    HOSTNAME_CONFLICT = "HostnameConflict"
    RELEASE_NAME_CONFLICT = "ReleaseNameConflict"
    BACKEND_SERVICE_CONFLICT = "BackendServiceConflict"
    WAITING_FOR_GPU = "WaitingForGPU"
    GPU_SHARING_TRANSITION = "GpuSharingTransition"
    WAITING_FOR_GPU_SLOT = "WaitingForGpuSlot"
    WAITING_FOR_POD = "WaitingForPod"
    WAITING_FOR_REPLICA = "WaitingForReplica"
    WAITING_FOR_OLLAMA_ALIAS = "WaitingForOllamaAlias"
    MODEL_POD_CREATION_STALLED = "ModelPodCreationStalled"
    MODEL_POD_RECOVERY_EXHAUSTED = "ModelPodRecoveryExhausted"
    WAITING_FOR_MODEL_CATALOG = "WaitingForModelCatalog"
    DEFERRED_BY_HOST_OPERATION = "DeferredByHostOperation"
    RUNTIME_PROFILE_STORE_FULL = "RuntimeProfileStoreFull"
    WAITING_FOR_OFFLOADING_PROFILE = "WaitingForOffloadingProfile"
    OFFLOADING_PROFILE_STORE_FULL = "OffloadingProfileStoreFull"
    INSUFFICIENT_MEMORY = "InsufficientMemory"
    INSUFFICIENT_VRAM = "InsufficientVRAM"
    MEMORY_ESTIMATE_UNKNOWN = "MemoryEstimateUnknown"
    MEMORY_BUDGET_UNKNOWN = "MemoryBudgetUnknown"
    RUNTIME_IMAGE_NOT_SET = "RuntimeImageNotSet"
    WAITING_FOR_ROLLOUT = "WaitingForRollout"
    ROLLOUT_FAILED = "RolloutFailed"
    WAITING_FOR_RUNTIME_HEALTH = "WaitingForRuntimeHealth"
    GPU_NODE_NOT_FOUND = "GpuNodeNotFound"
    GPU_DEVICE_NOT_FOUND = "GpuDeviceNotFound"
    IMMUTABLE_FIELD = "ImmutableField"
    NAMESPACE_UNREADABLE = "NamespaceUnreadable"


class ProblemReason(StrEnum):
    """Why one object's operation did not happen at apply time (providers.outcomes); written as
    the object's status reason."""

    CLUSTER_UNREACHABLE = "ClusterUnreachable"
    """No answer from the API server (connection refused, TLS, timeout) for this operation."""
    PROFILE_STORE_FULL = "ProfileStoreFull"
    PROFILE_STORE_MALFORMED = "ProfileStoreMalformed"
    PROFILE_STORE_CONTENDED = "ProfileStoreContended"
    """Every compare-and-swap attempt lost to another writer."""
    PROFILE_STORE_REFUSED = "ProfileStoreRefused"
    """The API server refused to read or write the store ConfigMap (403, 5xx, ...)."""
    OLLAMA_UNREACHABLE = "OllamaUnreachable"
    """The pod proxy could not reach Ollama, or Ollama failed (5xx); planning reports the same
    when the run's probe found Ollama not answering."""
    OLLAMA_ALIAS_REFUSED = "OllamaAliasRefused"
    """The API server or Ollama answered the alias request with another error."""
    STATUS_WRITE_REFUSED = "StatusWriteRefused"
    """The API server refused the status write (403, 409, 5xx, ...)."""
    STATUS_WRITE_INVALID = "StatusWriteInvalid"
    """The API server refused the written status itself (400, 422): the body is wrong."""
    POD_RECOVERY_CONFLICT = "PodRecoveryConflict"
    """The Pod is no longer the one observed; the next run observes it again."""
    POD_RECOVERY_REFUSED = "PodRecoveryRefused"
    STALE_REMOVAL_FAILED = "StaleRemovalFailed"
    REALTIME_PERMISSION_DENIED = "RealtimePermissionDenied"
    """The API server refused a write of the realtime runtime (403): its Role is missing or narrower."""
    REALTIME_API_REJECTED = "RealtimeApiRejected"
    """The API server rejected a realtime object (400, 422, admission, another 4xx)."""
    REALTIME_API_UNAVAILABLE = "RealtimeApiUnavailable"
    """No usable answer (5xx, 429, no connection): the runtime is Starting, tried again next run."""
    VALIDATION_HISTORY_UNAVAILABLE = "ValidationHistoryUnavailable"
    """The GPU validation history could not be read or written: no new diagnostic starts."""
    VALIDATION_JOB_REFUSED = "ValidationJobRefused"
    """The API server refused to create or read a GPU validation Job or its Pod."""
    RUNTIME_IMAGES_REFUSED = "RuntimeImagesRefused"
    """A validated digest could not be written to the runtime-images store."""
    FREETOKEN_PERMISSION_DENIED = "FreeTokenPermissionDenied"
    FREETOKEN_API_REJECTED = "FreeTokenApiRejected"
    FREETOKEN_API_UNAVAILABLE = "FreeTokenApiUnavailable"


class OperatorReason(StrEnum):
    """The OperatorStalled condition of Appliance/local (planning.operator)."""

    NOT_STALLED = "NotStalled"
    STALLED = "Stalled"
    """The reason when the Stack's Stalled condition names none."""


class CompatibilityReason(StrEnum):
    """hardwareOperators.amd-gpu.compatibility.reason and its per-node reasons."""

    UPSTREAM = "UpstreamSupported"
    PROFILE_APPLIES = "ProfileApplies"
    PARAMETERS_INVALID = "ParametersInvalid"
    PROFILE_UNKNOWN = "ProfileUnknown"
    PROFILE_NOT_SELECTED = "ProfileNotSelected"
    CONSENT_REQUIRED = "ExperimentalConsentRequired"
    HARDWARE_RULE = "HardwareRuleNotMet"
    PREFLIGHT = "PreflightFailed"
    EVIDENCE_NOT_CURRENT = "HostEvidenceNotCurrent"
    ARCHITECTURE_MISMATCH = "ArchitectureMismatch"
    DRIVER_NOT_READY = "HostDriverNotReady"
    EVIDENCE_MISMATCH = "HostEvidenceMismatch"
    NO_AMD_GPU = "NoAmdGpu"


class ValidationBlock(StrEnum):
    """Why a requested validation run does not start this run."""

    NOT_APPLICABLE = "ProfileNotApplied"
    HISTORY_UNAVAILABLE = "ValidationHistoryUnavailable"
    ANOTHER_RUN = "AnotherRunInProgress"


class VerdictReason(StrEnum):
    """The reason of one engine's GPU validation verdict."""

    PASSED = "ValidationPassed"
    CPU_FALLBACK = "CpuFallback"
    NO_GPU_BUFFERS = "NoGpuBuffers"
    WRONG_ANSWER = "WrongAnswer"
    HIP_FAILED = "HipComputationFailed"
    INFERENCE_FAILED = "InferenceFailed"
    NO_REPORT = "NoValidationReport"
    JOB_FAILED = "JobFailed"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    JOB_LOST = "JobLost"
    EVIDENCE_CHANGED = "EvidenceChanged"


class AdoptionReason(StrEnum):
    """compatibility.runtimeReason: whether KubeAI runs the AMD images it should."""

    ADOPTED = "RuntimeAdopted"
    KUBEAI_NOT_READY = "KubeAINotReady"
    RELEASE_NOT_READY = "KubeAIReleaseNotReady"
    CONFIGURATION_MISSING = "KubeAIConfigurationMissing"
    CONFIGURATION_MALFORMED = "KubeAIConfigurationMalformed"
    IMAGE_NOT_CONFIGURED = "RuntimeImageNotConfigured"
    POD_ON_OTHER_IMAGE = "ModelPodOnOtherImage"


class ChoiceReason(StrEnum):
    """ModelActivation.status.computeTargetChoice.reason: why the program chose the target."""

    PRESET_DEFAULT = "PresetDefault"
    OFFERED_ACCELERATOR = "OfferedAccelerator"
    CPU_VARIANT = "CpuVariant"
    PRESET_DEFAULT_NOT_OFFERED = "PresetDefaultNotOffered"
    IMPLIED_TARGET = "ImpliedTarget"


class HostOperationReason(StrEnum):
    """Why a HostOperation has its phase: the host agent's vocabulary (services/host_agent)."""

    STALE = "Stale"
    """Bound to another boot of the node: refused, never run."""
    REJECTED = "Rejected"
    """A binding or a field the host cannot honour; the message names the field and the rule."""
    PLAN_CHANGED = "PlanChanged"
    """planId is not the plan the host publishes now."""
    DUPLICATE_REQUEST_ID = "DuplicateRequestID"
    """spec.requestID is carried by another HostOperation, which came first: refused, never run."""
    WAITING_FOR_IDLE = "WaitingForIdle"
    """clear-model-cache waits until no process on the node uses the model cache."""
    IN_PROGRESS = "InProgress"
    REBOOTING = "Rebooting"
    POWERING_OFF = "PoweringOff"
    COMPLETED = "Completed"
    REBOOT_REQUIRED = "RebootRequired"
    """Done on the host; it takes effect at the next boot."""
    COMMAND_FAILED = "CommandFailed"
    OUTCOME_UNCERTAIN = "OutcomeUncertain"
    """The agent stopped between announcing the action and recording its end: it is not repeated."""
    AWAITING_CONFIRMATION = "AwaitingConfirmation"
    CONFIRMED = "Confirmed"
    CONFIRMATION_TIMED_OUT = "ConfirmationTimedOut"
    INTERRUPTED = "Interrupted"
    """A network change was interrupted by a crash or reboot and was rolled back."""
    ROLLBACK_FAILED = "RollbackFailed"
    NETWORK_SECRET_INVALID = "NetworkSecretInvalid"
    NO_WIFI_INTERFACE = "NoWifiInterface"
    HOST_DRIVER_NOT_READY = "GpuDriverNotReady"
    NOT_SUPPORTED = "NotSupportedOnThisHost"
    WAITING_FOR_REGISTRATION = "WaitingForRegistration"
    REGISTERED = "Registered"


REASON_VOCABULARIES: Final = (
    Reason,
    ProblemReason,
    OperatorReason,
    CompatibilityReason,
    ValidationBlock,
    VerdictReason,
    AdoptionReason,
    ChoiceReason,
    HostOperationReason,
)
"""Every reason the program (and, for HostOperations, the host agent) writes anywhere in a status, by the enum that names it."""

ForeignReason = NewType("ForeignReason", str)
"""A reason another controller wrote, copied into our status as it is."""

StatusReason = Reason | ProblemReason | OperatorReason | ForeignReason
"""What `status.reason` and a condition's `reason` hold."""

PERMANENT_REASONS: Final = frozenset(
    {
        Reason.INVALID_SPEC,
        Reason.CATALOG_INVALID,
        Reason.UNKNOWN_MODULE,
        Reason.UNKNOWN_APPLICATION,
        Reason.DUPLICATE_ACTIVATION,
        Reason.IMMUTABLE_FIELD,
        Reason.RUNTIME_PROFILE_STORE_FULL,
        Reason.OFFLOADING_PROFILE_STORE_FULL,
        Reason.MODEL_POD_RECOVERY_EXHAUSTED,
        ProblemReason.STATUS_WRITE_INVALID,
    }
)
"""Outcomes that no run changes by itself: the spec, a catalog or a bound must change first."""


def every_reason() -> frozenset[str]:
    """The wire value of every reason of every vocabulary. Pure."""
    return frozenset(str(member) for vocabulary in REASON_VOCABULARIES for member in vocabulary)


def stalls(phase: Phase, reason: StatusReason) -> bool:
    """True when an object in `phase` for `reason` waits for someone to act (kstatus Stalled):
    Failed, or a permanent reason. Pure."""
    return phase == Phase.FAILED or reason in PERMANENT_REASONS


def reconciles(phase: Phase, reason: StatusReason) -> bool:
    """True when an object in `phase` for `reason` is still on its way (kstatus Reconciling):
    neither Ready, Disabled nor stalled. Pure."""
    return phase not in (Phase.READY, Phase.DISABLED) and not stalls(phase, reason)


def reason_of(text: str) -> StatusReason:
    """The reason spelled `text`, read back from a status: the vocabulary's member, else a
    ForeignReason. Pure."""
    for vocabulary in (Reason, ProblemReason, OperatorReason):
        if text in vocabulary.__members__.values():
            return vocabulary(text)
    return ForeignReason(text)
