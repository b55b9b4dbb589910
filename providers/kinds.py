"""The kinds the program reads and writes, as the API serves them."""

from __future__ import annotations

from api.meta import GROUP, VERSION
from providers.kube.client import ResourceKind


def _appliance_kind(kind: str, plural: str) -> ResourceKind:
    return ResourceKind(group=GROUP, version=VERSION, kind=kind, plural=plural, namespaced=True)


APPLIANCE = _appliance_kind("Appliance", "appliances")
MODULE_ACTIVATION = _appliance_kind("ModuleActivation", "moduleactivations")
MODEL_ACTIVATION = _appliance_kind("ModelActivation", "modelactivations")
APP_INSTANCE = _appliance_kind("AppInstance", "appinstances")
HOST_OPERATION = _appliance_kind("HostOperation", "hostoperations")
APPLIANCE_SETUP = _appliance_kind("ApplianceSetup", "appliancesetups")

NODE = ResourceKind(group="", version="v1", kind="Node", plural="nodes", namespaced=False)
CONFIG_MAP = ResourceKind(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
SERVICE = ResourceKind(group="", version="v1", kind="Service", plural="services", namespaced=True)
CRD = ResourceKind(
    group="apiextensions.k8s.io", version="v1", kind="CustomResourceDefinition", plural="customresourcedefinitions", namespaced=False
)
KUSTOMIZATION = ResourceKind(
    group="kustomize.toolkit.fluxcd.io", version="v1", kind="Kustomization", plural="kustomizations", namespaced=True
)

NODE_FEATURE = ResourceKind(group="nfd.k8s-sigs.io", version="v1alpha1", kind="NodeFeature", plural="nodefeatures", namespaced=True)

KUBEAI_MODEL = ResourceKind(group="kubeai.org", version="v1", kind="Model", plural="models", namespaced=True)
POD = ResourceKind(group="", version="v1", kind="Pod", plural="pods", namespaced=True)
DEPLOYMENT = ResourceKind(group="apps", version="v1", kind="Deployment", plural="deployments", namespaced=True)
JOB = ResourceKind(group="batch", version="v1", kind="Job", plural="jobs", namespaced=True)
"""GPU validation Jobs (providers/gpu_validation.py): created, read and deleted by name."""

HELM_RELEASE = ResourceKind(group="helm.toolkit.fluxcd.io", version="v2", kind="HelmRelease", plural="helmreleases", namespaced=True)
HTTP_ROUTE = ResourceKind(group="gateway.networking.k8s.io", version="v1", kind="HTTPRoute", plural="httproutes", namespaced=True)
REFERENCE_GRANT = ResourceKind(
    group="gateway.networking.k8s.io", version="v1beta1", kind="ReferenceGrant", plural="referencegrants", namespaced=True
)
ENVOY_PROXY = ResourceKind(group="gateway.envoyproxy.io", version="v1alpha1", kind="EnvoyProxy", plural="envoyproxies", namespaced=True)
POD_DISRUPTION_BUDGET = ResourceKind(group="policy", version="v1", kind="PodDisruptionBudget", plural="poddisruptionbudgets", namespaced=True)
NETWORK_POLICY = ResourceKind(group="networking.k8s.io", version="v1", kind="NetworkPolicy", plural="networkpolicies", namespaced=True)
SECURITY_POLICY = ResourceKind(
    group="gateway.envoyproxy.io", version="v1alpha1", kind="SecurityPolicy", plural="securitypolicies", namespaced=True
)

RESOURCE_CLAIM = ResourceKind(group="resource.k8s.io", version="v1", kind="ResourceClaim", plural="resourceclaims", namespaced=True)
RESOURCE_SLICE = ResourceKind(group="resource.k8s.io", version="v1", kind="ResourceSlice", plural="resourceslices", namespaced=False)
MUTATING_ADMISSION_POLICY = ResourceKind(
    group="admissionregistration.k8s.io", version="v1beta1", kind="MutatingAdmissionPolicy", plural="mutatingadmissionpolicies", namespaced=False
)
OPTIONAL_APIS = (RESOURCE_CLAIM, MUTATING_ADMISSION_POLICY)
"""Built-in APIs only GPU sharing needs; whether the cluster serves them is part of the snapshot
(Snapshot.served_apis, named `<plural>.<group>/<version>`)."""

STACK = ResourceKind(group="pulumi.com", version="v1", kind="Stack", plural="stacks", namespaced=True)
"""The Pulumi Kubernetes Operator Stack the program runs under (read by name, planning.operator)."""

APPLIANCE_KINDS = {k.kind: k for k in (APPLIANCE, MODULE_ACTIVATION, MODEL_ACTIVATION, APP_INSTANCE, HOST_OPERATION, APPLIANCE_SETUP)}
