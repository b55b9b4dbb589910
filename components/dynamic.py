"""Dynamic resources of the program: what pulumi-kubernetes cannot model.

Each class only shapes inputs; the provider that does the work is injected (components
perform no I/O). Type tokens are `pulumi-python:dynamic/magicstick:<Name>`.

Inputs name the object a resource manages and nothing of how the cluster is reached: the
providers take cluster access from the stack's configuration at each run
(providers/cluster_access.py), so state written from one place still refreshes from another.

Logical names join their parts with '/', which no Kubernetes name or namespace contains, so
two different objects never give one name (invariant 3). Earlier versions joined them with
'-'; that name stays as an alias, so an existing stack keeps its resources.

Every dynamic resource has the output `problem` (PROBLEM): `{}` when its operation did what
was asked, else the typed reason and the server's message (providers/outcomes.py). The
components hand these outputs, unread, to the status write of the object they concern.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final

import pulumi
from pulumi.dynamic import Resource, ResourceProvider

from components.urns import aliases
from planning.hardware.compatibility import ValidationRunPlan
from planning.models.direct import DirectRuntime
from planning.models.kubeai import PROFILE_STORE_CONFIG_MAP, PROFILE_STORE_KEY, PROFILE_STORE_NAMESPACE, CpuProfile
from planning.models.offloading import OFFLOADING_CONFIG_MAP, OFFLOADING_KEY, OFFLOADING_NAMESPACE
from planning.models.plan import AliasRequest, PodDeletion
from planning.models.profile_entry import ProfileEntry, ProfileStoreRef
from planning.objects import NAME_SEPARATOR
from planning.provider_wire import PROBLEM_OUTPUT
from planning.settings import FIELD_MANAGER

PROBLEM: Final = PROBLEM_OUTPUT
"""The output every dynamic provider of the program sets."""


@dataclass(frozen=True)
class DynamicProviders:
    """The providers the components hand to their dynamic resources."""

    status: ResourceProvider
    runtime_profile: ResourceProvider
    pod_recovery: ResourceProvider
    ollama_alias: ResourceProvider
    stale_removal: ResourceProvider
    offloading_profile: ResourceProvider
    direct_runtime: ResourceProvider
    gpu_validation: ResourceProvider
    gpu_validation_history: ResourceProvider


@dataclass(frozen=True)
class LogicalName:
    """A dynamic resource's Pulumi name, and the names earlier versions gave the same resource."""

    name: str
    previous: tuple[str, ...] = ()

    @classmethod
    def of(cls, *parts: str, previous: str) -> LogicalName:
        """`parts` joined by '/'; `previous` is the name of earlier versions. Pure."""
        return cls(name=NAME_SEPARATOR.join(parts), previous=(previous,))

    def options(
        self, opts: pulumi.ResourceOptions, resource: type[Resource], *, former_parent_type: str | None = None
    ) -> pulumi.ResourceOptions:
        """`opts` with an alias for every previous name of a `resource`; with
        `former_parent_type` (the qualified type of the component the resource lived under in
        earlier versions), the aliases name that component, with the resource's name and with
        each previous one (components/urns.py)."""
        found = aliases(
            parent=opts.parent,
            type_=dynamic_type(resource),
            name=self.name,
            previous=self.previous,
            former_parent_type=former_parent_type,
        )
        return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=found)) if found else opts


def dynamic_type(resource: type[Resource]) -> str:
    """The type token the SDK registers a dynamic resource class under (`pulumi-python:dynamic/<module>:<name>`)."""
    return f"pulumi-python:{resource._resource_type_name}"


def runtime_profile_name(profile: CpuProfile) -> LogicalName:
    """`runtime-profile/<profile>`. Pure."""
    return LogicalName.of("runtime-profile", profile.name, previous=f"runtime-profile-{profile.name}")


def offloading_profile_name(profile: CpuProfile) -> LogicalName:
    """`offloading-profile/<profile>`: a new kind of resource, with no earlier name. Pure."""
    return LogicalName(name=NAME_SEPARATOR.join(("offloading-profile", profile.name)))


def pod_recovery_name(deletion: PodDeletion) -> LogicalName:
    """`pod-recovery/<namespace>/<pod>/<attempt>`. Pure."""
    parts = (deletion.namespace, deletion.pod.name, str(deletion.attempt))
    return LogicalName.of("pod-recovery", *parts, previous="-".join(("pod-recovery", *parts)))


def ollama_alias_name(activation: str) -> LogicalName:
    """`ollama-alias/<ModelActivation name>`. Pure."""
    return LogicalName.of("ollama-alias", activation, previous=f"{activation}-ollama-alias")


def direct_runtime_name(runtime: DirectRuntime) -> LogicalName:
    """`<runtime>/<namespace>/<activation>` (DirectRuntime.logical_name): a new kind of resource,
    with no earlier name. Pure."""
    return LogicalName(name=runtime.logical_name)


class _ProfileStoreEntry(Resource):
    """One entry of a shared KubeAI profile store; subclasses name the store and the resource."""

    problem: pulumi.Output[Any]
    STORE: ClassVar[ProfileStoreRef]

    @staticmethod
    def logical_name(profile: CpuProfile) -> LogicalName:
        raise NotImplementedError

    def __init__(self, profile: CpuProfile, *, provider: ResourceProvider, opts: pulumi.ResourceOptions) -> None:
        props = {**ProfileEntry.of(profile, self.STORE).to_inputs(), PROBLEM: None}
        name = self.logical_name(profile)
        super().__init__(provider, name.name, props, name.options(opts, type(self)))


class RuntimeProfile(_ProfileStoreEntry, module="magicstick", name="RuntimeProfile"):
    """One entry of the KubeAI runtime-profile store (flux-system/magicstick-runtime-profiles)."""

    STORE = ProfileStoreRef(PROFILE_STORE_NAMESPACE, PROFILE_STORE_CONFIG_MAP, PROFILE_STORE_KEY)
    logical_name = staticmethod(runtime_profile_name)


class OffloadingProfile(_ProfileStoreEntry, module="magicstick", name="OffloadingProfile"):
    """One entry of the offloading store (flux-system/magicstick-offloading-profiles)."""

    STORE = ProfileStoreRef(OFFLOADING_NAMESPACE, OFFLOADING_CONFIG_MAP, OFFLOADING_KEY)
    logical_name = staticmethod(offloading_profile_name)


class PodRecovery(Resource, module="magicstick", name="PodRecovery"):
    """One deletion of a terminal model Pod, under UID and resourceVersion preconditions."""

    problem: pulumi.Output[Any]

    def __init__(
        self,
        deletion: PodDeletion,
        *,
        provider: ResourceProvider,
        opts: pulumi.ResourceOptions,
        former_parent_type: str | None = None,
    ) -> None:
        props = {**deletion.attempt_inputs.to_inputs(), PROBLEM: None}
        name = pod_recovery_name(deletion)
        super().__init__(
            provider, name.name, props, name.options(opts, type(self), former_parent_type=former_parent_type)
        )


class OllamaAlias(Resource, module="magicstick", name="OllamaAlias"):
    """The KubeAI model-name alias on every Ready Ollama Pod of one Model.

    `logical_name` is a plain name, or an `ollama_alias_name(...)` that carries its alias.
    """

    problem: pulumi.Output[Any]

    def __init__(
        self,
        request: AliasRequest,
        *,
        logical_name: str | LogicalName,
        provider: ResourceProvider,
        opts: pulumi.ResourceOptions,
        former_parent_type: str | None = None,
    ) -> None:
        props = {**request.to_inputs(), PROBLEM: None}
        name = logical_name if isinstance(logical_name, LogicalName) else LogicalName(logical_name)
        super().__init__(
            provider, name.name, props, name.options(opts, type(self), former_parent_type=former_parent_type)
        )


class DirectRuntimeResource(Resource, module="magicstick", name="DirectRuntime"):
    """The objects of one activation's direct runtime (FreeToken, realtime vLLM-Omni), applied
    together in their order (providers/direct_runtime.py).

    `field_manager` is the program's (planning/settings.py FIELD_MANAGER), the one its
    pulumi-kubernetes objects are applied under.
    """

    problem: pulumi.Output[Any]

    def __init__(
        self,
        runtime: DirectRuntime,
        *,
        provider: ResourceProvider,
        opts: pulumi.ResourceOptions,
        field_manager: str = FIELD_MANAGER,
        former_parent_type: str | None = None,
    ) -> None:
        props = {**runtime.inputs(field_manager).to_inputs(), PROBLEM: None}
        name = direct_runtime_name(runtime)
        super().__init__(
            provider, name.name, props, name.options(opts, type(self), former_parent_type=former_parent_type)
        )


def gpu_validation_name(run: ValidationRunPlan) -> LogicalName:
    """`gpu-validation/<run id>` or `device-validation/<run id>`: a new kind of resource, with
    no earlier name. Pure."""
    return LogicalName(name=run.logical_name)


class GpuValidationRun(Resource, module="magicstick", name="GpuValidationRun"):
    """One GPU validation run or device diagnostic, advanced a step per program run
    (providers/gpu_validation.py). Its `problem` is logged, never merged into a status: engine
    validation is advisory."""

    problem: pulumi.Output[Any]

    def __init__(self, run: ValidationRunPlan, *, provider: ResourceProvider, opts: pulumi.ResourceOptions) -> None:
        props = {
            **run.to_inputs(),
            "stages": None,
            "complete": None,
            PROBLEM: None,
        }
        name = gpu_validation_name(run)
        super().__init__(provider, name.name, props, name.options(opts, type(self)))


class GpuValidationHistory(Resource, module="magicstick", name="GpuValidationHistory"):
    """The validation history store (`<namespace>/magicstick-gpu-validation-history`): present,
    bounded, never reset (providers/gpu_validation.py GpuValidationHistoryProvider)."""

    problem: pulumi.Output[Any]

    def __init__(self, namespace: str, *, bound: int, provider: ResourceProvider, opts: pulumi.ResourceOptions) -> None:
        props = {"namespace": namespace, "bound": bound, PROBLEM: None}
        super().__init__(provider, NAME_SEPARATOR.join(("gpu-validation-history", namespace)), props, opts)
