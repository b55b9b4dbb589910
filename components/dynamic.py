"""Dynamic resources of the program: what pulumi-kubernetes cannot model.

Each class only shapes inputs; the provider that does the work is injected (components
perform no I/O). Type tokens are `pulumi-python:dynamic/magicstick:<Name>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import Resource, ResourceProvider

from components.status import ClusterAccessInputs
from planning.frozen import thaw
from planning.models.kubeai import MODEL_SERVER_PORT, CpuProfile
from planning.models.plan import AliasRequest, PodDeletion


@dataclass(frozen=True)
class DynamicProviders:
    """The providers the components hand to their dynamic resources."""

    status: ResourceProvider
    runtime_profile: ResourceProvider
    pod_recovery: ResourceProvider
    ollama_alias: ResourceProvider


def access_inputs(access: ClusterAccessInputs) -> dict[str, Any]:
    return {
        "kubeconfig": pulumi.Output.secret(access.kubeconfig) if access.kubeconfig else None,
        "context": access.context,
    }


class RuntimeProfile(Resource, module="magicstick", name="RuntimeProfile"):
    """One entry of the KubeAI runtime-profile store (flux-system/magicstick-runtime-profiles)."""

    def __init__(self, profile: CpuProfile, *, provider: ResourceProvider, access: ClusterAccessInputs, opts: pulumi.ResourceOptions) -> None:
        props = {
            "namespace": "flux-system",
            "configMap": "magicstick-runtime-profiles",
            "key": "values.json",
            "profileName": profile.name,
            "profile": thaw(profile.body),
            **access_inputs(access),
        }
        super().__init__(provider, f"runtime-profile-{profile.name}", props, opts)


class PodRecovery(Resource, module="magicstick", name="PodRecovery"):
    """One deletion of a terminal model Pod, under UID and resourceVersion preconditions."""

    def __init__(self, deletion: PodDeletion, *, provider: ResourceProvider, access: ClusterAccessInputs, opts: pulumi.ResourceOptions) -> None:
        props = {
            "namespace": deletion.namespace,
            "pod": deletion.pod.name,
            "podUID": deletion.pod.uid,
            "resourceVersion": deletion.pod.resource_version,
            "attempt": deletion.attempt,
            **access_inputs(access),
        }
        name = f"pod-recovery-{deletion.namespace}-{deletion.pod.name}-{deletion.attempt}"
        super().__init__(provider, name, props, opts)


class OllamaAlias(Resource, module="magicstick", name="OllamaAlias"):
    """The KubeAI model-name alias on every Ready Ollama Pod of one Model."""

    def __init__(self, request: AliasRequest, *, logical_name: str, provider: ResourceProvider, access: ClusterAccessInputs, opts: pulumi.ResourceOptions) -> None:
        props = {
            "namespace": request.namespace,
            "pods": list(request.pods),
            "source": request.source,
            "alias": request.alias,
            "port": MODEL_SERVER_PORT,
            **access_inputs(access),
        }
        super().__init__(provider, logical_name, props, opts)
