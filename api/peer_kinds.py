"""The kinds of other APIs the program reads or declares, as they are served: one place for each
group/version. PURE.

Planning matches observed objects against them (planning.snapshot, planning.operator); the
Kubernetes client lists and writes them (providers.kinds).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PeerKind:
    """One kind of another project's API (or of an optional built-in API)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


FLUX_KUSTOMIZATION = PeerKind("kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations")
HELM_RELEASE = PeerKind("helm.toolkit.fluxcd.io", "v2", "HelmRelease", "helmreleases")
NODE_FEATURE = PeerKind("nfd.k8s-sigs.io", "v1alpha1", "NodeFeature", "nodefeatures")
KUBEAI_MODEL = PeerKind("kubeai.org", "v1", "Model", "models")
HTTP_ROUTE = PeerKind("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes")
REFERENCE_GRANT = PeerKind("gateway.networking.k8s.io", "v1beta1", "ReferenceGrant", "referencegrants")
REFERENCE_GRANT_V1 = PeerKind("gateway.networking.k8s.io", "v1", "ReferenceGrant", "referencegrants")
"""The version Gateway API serves beside v1beta1; a snapshot may hold either."""
ENVOY_PROXY = PeerKind("gateway.envoyproxy.io", "v1alpha1", "EnvoyProxy", "envoyproxies")
SECURITY_POLICY = PeerKind("gateway.envoyproxy.io", "v1alpha1", "SecurityPolicy", "securitypolicies")
STACK = PeerKind("pulumi.com", "v1", "Stack", "stacks")
"""The Pulumi Kubernetes Operator Stack the program runs under."""
RESOURCE_CLAIM = PeerKind("resource.k8s.io", "v1", "ResourceClaim", "resourceclaims")
RESOURCE_SLICE = PeerKind("resource.k8s.io", "v1", "ResourceSlice", "resourceslices", namespaced=False)

PEER_KINDS: tuple[PeerKind, ...] = (
    FLUX_KUSTOMIZATION,
    HELM_RELEASE,
    NODE_FEATURE,
    KUBEAI_MODEL,
    HTTP_ROUTE,
    REFERENCE_GRANT,
    REFERENCE_GRANT_V1,
    ENVOY_PROXY,
    SECURITY_POLICY,
    STACK,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
)
