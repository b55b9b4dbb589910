"""Every HelmRelease of the GitOps tree whose chart this machine cannot reach, named, and what it
is expected to do under Flux here. tests/flux/test_release_table.py keeps the table equal to the
tree; the Flux suite checks each entry against the real controllers."""

from __future__ import annotations

from typing import Final

Release = tuple[str, str]
"""(namespace, name)."""

UNREACHABLE_RELEASES: Final[dict[str, tuple[Release, ...]]] = {
    "basis": (("flux-system", "envoy-gateway"),),
    "litellm": (("ai-system", "litellm"),),
    "kubeai": (("flux-system", "kubeai"),),
    "gpu": (("flux-system", "gpu-operator"),),
    "amd-gpu": (("flux-system", "amd-gpu-operator"),),
    "intel-gpu": (("flux-system", "intel-device-plugins-operator"),),
    "openclaw-operator": (("flux-system", "openclaw-operator"),),
    "hermes-operator": (("flux-system", "hermes-operator"),),
    "paperclip-operator": (("flux-system", "paperclip-operator"),),
    "agent-sandbox": (("flux-system", "agent-sandbox"),),
    "kubeopencode": (("flux-system", "kubeopencode"),),
}
"""Each module whose base installs a chart from outside this repository (an OCI artifact, a Helm
repository or another Git repository, none reachable here), and its releases that fail on that
source."""
SOURCE_FAILURE_REASONS: Final = frozenset({"SourceNotReady"})
"""helm-controller's reason for each of them: its chart's source (an OCIRepository, or the
HelmChart of a Helm or Git repository) is not Ready."""
WAITING_RELEASES: Final[dict[Release, str]] = {
    ("flux-system", "magicstick-gateway"): "envoy-gateway",
    ("flux-system", "intel-device-plugins-gpu"): "intel-device-plugins-operator",
}
"""Releases that wait (`dependsOn`) for a failed release of their own base, by the name of that release."""
ENTRYPOINT_RELEASES: Final[dict[str, Release]] = {
    "./magic-cluster/platform/node-feature-discovery": ("flux-system", "node-feature-discovery"),
    "./magic-cluster/platform/pulumi-kubernetes-operator": ("flux-system", "pulumi-kubernetes-operator"),
}
"""The entrypoint's own releases (tests/flux/test_entrypoint.py): NFD fails on its source, PKO is
never applied, waiting for NFD."""
