"""Reason constants: every outcome the plan reports has one, written as it appears in status;
and how a message lists the objects it names."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum


class Reason(StrEnum):
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
    KEPT_AS_APPLIED = "KeptAsLastApplied"
    MODULES_READY = "ModulesReady"
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


LISTED_NAMES_IN_MESSAGE = 5
"""A status message names at most this many objects, then says how many more there are: a
message that lists every requester grows with the cluster (5,000 models waiting on one
disabled module) until the status no longer fits in etcd."""


def listed(names: Sequence[str], limit: int = LISTED_NAMES_IN_MESSAGE, *, separator: str = ", ") -> str:
    """`a, b, c` or `a, b, c and 4 more`: the first `limit` of `names` in the order given. Pure."""
    shown = separator.join(names[:limit])
    more = len(names) - limit
    return f"{shown} and {more} more" if more > 0 else shown
