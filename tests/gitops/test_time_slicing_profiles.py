"""The NVIDIA base ships exactly the time-slicing profiles the program selects, each a valid
k8s-device-plugin configuration (config v1 as NVIDIA/k8s-device-plugin v0.20.0 reads it:
api/config/v1/config.go, sharing.go, replicas.go; no upstream schema file exists)."""

from __future__ import annotations

from pathlib import Path

import yaml

from planning.hardware.nvidia_sharing import DEVICE_PLUGIN_CONFIG_MAP, shipped_profiles_config_map

REPOSITORY = Path(__file__).resolve().parents[2]
SHIPPED = REPOSITORY / "magic-cluster/platform/gpu/nvidia/time-slicing-profiles.yaml"
TOP_LEVEL_KEYS = {"version", "flags", "resources", "sharing", "imex"}
MIG_STRATEGIES = {"none", "single", "mixed"}


def _device_plugin_errors(config: dict) -> list[str]:
    """The rules the device plugin applies when it loads a config file."""
    errors = [f"unknown key {key}" for key in config if key not in TOP_LEVEL_KEYS]
    if config.get("version", "v1") != "v1":
        errors.append("unknown version")
    if config.get("flags", {}).get("migStrategy", "none") not in MIG_STRATEGIES:
        errors.append("unknown MIG strategy")
    slicing = config.get("sharing", {}).get("timeSlicing", {})
    if not slicing.get("resources"):
        errors.append("no resources specified")
    for resource in slicing.get("resources", ()):
        if not isinstance(resource.get("replicas"), int) or resource["replicas"] < 2:
            errors.append("number of replicas must be >= 2")
        if resource.get("name") != "nvidia.com/gpu":
            errors.append(f"unexpected resource {resource.get('name')}")
    return errors


def test_the_shipped_config_map_is_the_one_the_program_selects_from():
    assert yaml.safe_load(SHIPPED.read_text()) == shipped_profiles_config_map()


def test_the_nvidia_base_ships_the_profiles_and_points_the_device_plugin_at_them():
    kustomization = yaml.safe_load((SHIPPED.parent / "kustomization.yaml").read_text())
    assert SHIPPED.name in kustomization["resources"]
    release = yaml.safe_load((SHIPPED.parent / "helmrelease.yaml").read_text())
    assert release["spec"]["values"]["devicePlugin"]["config"] == {"name": DEVICE_PLUGIN_CONFIG_MAP, "default": ""}


def test_every_profile_is_a_valid_device_plugin_configuration_with_its_slot_count():
    for name, text in shipped_profiles_config_map()["data"].items():
        config = yaml.safe_load(text)
        assert _device_plugin_errors(config) == [], name
        assert config["sharing"]["timeSlicing"]["resources"][0]["replicas"] == int(name.rsplit("-", 1)[1])


def test_the_device_plugin_check_refuses_one_replica():
    config = yaml.safe_load(shipped_profiles_config_map()["data"]["magicstick-time-slicing-2"])
    config["sharing"]["timeSlicing"]["resources"][0]["replicas"] = 1
    assert _device_plugin_errors(config) == ["number of replicas must be >= 2"]
