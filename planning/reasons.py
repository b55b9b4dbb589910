"""Reason constants: every outcome the plan reports has one, written as it appears in status."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    READY = "Ready"
    DISABLED = "Disabled"
    INVALID_SPEC = "InvalidSpec"
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
