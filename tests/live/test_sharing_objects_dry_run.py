"""What GPU sharing declares that the test server serves passes its server-side dry run: the
NVIDIA node label patch as the program's field manager applies it, the shipped device-plugin
profiles ConfigMap, and AMD's shared ResourceClaim (resource.k8s.io/v1). The
MutatingAdmissionPolicy is admissionregistration.k8s.io/v1beta1, a beta API a cluster serves
only when its administrator turns it on, as the test server does not: it is checked against
the upstream OpenAPI schema (tests/planning/hardware/test_amd_dra_sharing.py)."""

from __future__ import annotations

import contextlib

from planning.frozen import thaw
from planning.hardware.amd_sharing import SHARED_CLAIM, shared_claim
from planning.hardware.nvidia_sharing import DEVICE_PLUGIN_CONFIG_LABEL, label_patch, shipped_profiles_config_map
from planning.hardware.sharing import Allocation
from providers.kinds import CONFIG_MAP, NODE, RESOURCE_CLAIM
from providers.kube import KubeClient, NotFound
from tests.planning.hardware.nodes import node

FIELD_MANAGER = "magicstick"


def test_the_time_slicing_label_patch_passes_a_server_side_dry_run_on_a_real_node(admin: KubeClient):
    created = node("sharing-dry-run", "nvidia")
    del created["metadata"]["uid"], created["status"]
    admin.apply(NODE, created, field_manager="kubelet")
    try:
        patch = label_patch("sharing-dry-run", Allocation("time-slicing", 4), FIELD_MANAGER)
        answered = admin.apply(NODE, thaw(patch.body), field_manager=FIELD_MANAGER, dry_run=True)
        assert answered["metadata"]["labels"][DEVICE_PLUGIN_CONFIG_LABEL] == "magicstick-time-slicing-4"
        assert "kubernetes.io/hostname" in answered["metadata"]["labels"]
        assert DEVICE_PLUGIN_CONFIG_LABEL not in admin.get(NODE, "sharing-dry-run")["metadata"]["labels"]
    finally:
        with contextlib.suppress(NotFound):
            admin.delete(NODE, "sharing-dry-run")


def test_the_shipped_profiles_config_map_passes_a_server_side_dry_run(admin: KubeClient):
    profiles = shipped_profiles_config_map()
    profiles["metadata"]["namespace"] = "default"
    answered = admin.apply(CONFIG_MAP, profiles, field_manager="kustomize-controller", dry_run=True)
    assert sorted(answered["data"]) == sorted(profiles["data"])


def test_the_shared_amd_resource_claim_passes_a_server_side_dry_run_and_stores_nothing(admin: KubeClient):
    claim = shared_claim(namespace="default", node="gpu-1", slots=2, field_manager=FIELD_MANAGER)
    answered = admin.apply(RESOURCE_CLAIM, thaw(claim.body), field_manager=FIELD_MANAGER, dry_run=True)
    (request,) = answered["spec"]["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": "gpu.amd.com", "allocationMode": "ExactCount", "count": 1}
    assert admin.get_or_none(RESOURCE_CLAIM, SHARED_CLAIM, "default") is None
