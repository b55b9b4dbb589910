"""The kinds the program reads and writes, as the API serves them."""

from __future__ import annotations

from api import kinds as api_kinds
from api import peer_kinds
from api.kinds import ApplianceKind
from api.peer_kinds import PeerKind
from providers.kube.client import ResourceKind


def served(kind: ApplianceKind | PeerKind) -> ResourceKind:
    """The client's kind of one kind of the registries (api.kinds, api.peer_kinds)."""
    return ResourceKind(
        group=kind.group, version=kind.version, kind=kind.kind, plural=kind.plural, namespaced=kind.namespaced
    )


APPLIANCE = served(api_kinds.APPLIANCE)
MODULE_ACTIVATION = served(api_kinds.MODULE_ACTIVATION)
MODEL_ACTIVATION = served(api_kinds.MODEL_ACTIVATION)
APP_INSTANCE = served(api_kinds.APP_INSTANCE)
HOST_OPERATION = served(api_kinds.HOST_OPERATION)
APPLIANCE_SETUP = served(api_kinds.APPLIANCE_SETUP)

NODE = ResourceKind(group="", version="v1", kind="Node", plural="nodes", namespaced=False)
CONFIG_MAP = ResourceKind(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
SERVICE = ResourceKind(group="", version="v1", kind="Service", plural="services", namespaced=True)
CRD = ResourceKind(
    group="apiextensions.k8s.io",
    version="v1",
    kind="CustomResourceDefinition",
    plural="customresourcedefinitions",
    namespaced=False,
)
KUSTOMIZATION = served(peer_kinds.FLUX_KUSTOMIZATION)

NODE_FEATURE = served(peer_kinds.NODE_FEATURE)

KUBEAI_MODEL = served(peer_kinds.KUBEAI_MODEL)
POD = ResourceKind(group="", version="v1", kind="Pod", plural="pods", namespaced=True)
PERSISTENT_VOLUME = ResourceKind(
    group="", version="v1", kind="PersistentVolume", plural="persistentvolumes", namespaced=False
)
PERSISTENT_VOLUME_CLAIM = ResourceKind(
    group="", version="v1", kind="PersistentVolumeClaim", plural="persistentvolumeclaims", namespaced=True
)
DEPLOYMENT = ResourceKind(group="apps", version="v1", kind="Deployment", plural="deployments", namespaced=True)
JOB = ResourceKind(group="batch", version="v1", kind="Job", plural="jobs", namespaced=True)
"""GPU validation Jobs (providers/gpu_validation.py): created, read and deleted by name."""

HELM_RELEASE = served(peer_kinds.HELM_RELEASE)
HTTP_ROUTE = served(peer_kinds.HTTP_ROUTE)
REFERENCE_GRANT = served(peer_kinds.REFERENCE_GRANT)
ENVOY_PROXY = served(peer_kinds.ENVOY_PROXY)
POD_DISRUPTION_BUDGET = ResourceKind(
    group="policy", version="v1", kind="PodDisruptionBudget", plural="poddisruptionbudgets", namespaced=True
)
NETWORK_POLICY = ResourceKind(
    group="networking.k8s.io", version="v1", kind="NetworkPolicy", plural="networkpolicies", namespaced=True
)
SECURITY_POLICY = served(peer_kinds.SECURITY_POLICY)

RESOURCE_CLAIM = served(peer_kinds.RESOURCE_CLAIM)
RESOURCE_SLICE = served(peer_kinds.RESOURCE_SLICE)
MUTATING_ADMISSION_POLICY = ResourceKind(
    group="admissionregistration.k8s.io",
    version="v1beta1",
    kind="MutatingAdmissionPolicy",
    plural="mutatingadmissionpolicies",
    namespaced=False,
)
OPTIONAL_APIS = (RESOURCE_CLAIM, MUTATING_ADMISSION_POLICY)
"""Built-in APIs only GPU sharing needs; whether the cluster serves them is part of the snapshot
(Snapshot.served_apis, named `<plural>.<group>/<version>`)."""

STACK = served(peer_kinds.STACK)
"""The Pulumi Kubernetes Operator Stack the program runs under (read by name, planning.operator)."""

APPLIANCE_KINDS = {kind.kind: served(kind) for kind in api_kinds.APPLIANCE_KINDS}
"""Every kind of the API by name, in the registry's order."""


def appliance_kinds_at(system_namespace: str) -> tuple[tuple[ResourceKind, str], ...]:
    """Every kind of the API and the namespace its objects live in, in the registry's order. Pure."""
    return tuple((served(kind), kind.namespace(system_namespace)) for kind in api_kinds.APPLIANCE_KINDS)
