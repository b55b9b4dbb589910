"""What GPU sharing declares that the 1.20 test server knows passes its server-side dry run:
the NVIDIA node label patch as the program's field manager applies it, and the shipped
device-plugin profiles ConfigMap. (The ResourceClaim and MutatingAdmissionPolicy are checked
against the upstream OpenAPI schema: tests/planning/hardware/test_amd_dra_sharing.py.)"""

from __future__ import annotations

import contextlib

from planning.frozen import thaw
from planning.hardware.nvidia_sharing import DEVICE_PLUGIN_CONFIG_LABEL, label_patch, shipped_profiles_config_map
from planning.hardware.sharing import Allocation
from providers.kinds import CONFIG_MAP, NODE
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
