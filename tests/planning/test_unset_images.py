"""The images an administrator still has to set: listed once per slot in the plan, by one rule."""

from __future__ import annotations

import pytest

from catalogs.images import is_placeholder_image
from planning.snapshot import Snapshot
from planning.unset_images import unset_images
from tests.planning.builders import CATALOGS, plan_of
from tests.planning.models.direct_world import freetoken_model

SHIPPED_UNSET = [
    "gpu-compatibility.yaml profiles[strix-halo].engines.OLlama.validationImage",
    "gpu-compatibility.yaml profiles[strix-halo].engines.VLLM.validationImage",
    "runtimes.yaml freetoken.image",
    "runtimes.yaml realtime.profiles[omni-cpu].image",
    "runtimes.yaml realtime.profiles[omni-xpu].image",
]


def kubeai_release(values: object) -> dict:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "kubeai", "namespace": "flux-system", "generation": 1},
        "spec": {"chart": {"spec": {"chart": "kubeai"}}, "values": values},
    }


@pytest.mark.parametrize(
    ("image", "unset"),
    [
        (None, True),
        ("", True),
        ("registry.example.com/magicstick/freetoken:CHANGEME", True),
        ("registry.example.com/CHANGEME/freetoken:1.0.0", True),
        ("registry.example.com/magicstick/dashboard:0.1.0@sha256:CHANGEME", True),
        ("docker.io/vllm/vllm-omni-rocm:v0.12.0rc1", False),
        ("registry.example.com/magicstick/freetoken@sha256:" + "0" * 64, False),
    ],
)
def test_an_image_is_unset_when_missing_or_when_any_part_of_it_says_changeme(image, unset):
    assert is_placeholder_image(image) is unset


def test_the_plan_lists_each_unset_image_of_the_shipped_catalogs_once_however_many_activations_use_it():
    result = plan_of(freetoken_model("ft-1"), freetoken_model("ft-2"))
    assert [image.field for image in result.unset_images] == SHIPPED_UNSET


def test_a_placeholder_image_of_kubeais_release_is_listed_with_its_values_path():
    values = {"modelServers": {"VLLM": {"images": {"default": "vllm/vllm-openai:v0.10.2", "xpu": "x/y:CHANGEME"}}}}
    listed = next(
        image
        for image in unset_images(CATALOGS, Snapshot.from_objects([kubeai_release(values)]))
        if image.field.startswith("HelmRelease")
    )
    assert listed.field == "HelmRelease flux-system/kubeai spec.values.modelServers.VLLM.images.xpu"
    assert listed.image == "x/y:CHANGEME"
    assert "magic-cluster/apps/ai/kubeai/helmrelease.yaml" in listed.describe()


@pytest.mark.parametrize("values", [None, "text", {"modelServers": ["VLLM"]}, {"modelServers": {1: {"images": 2}}}])
def test_release_values_of_any_shape_list_nothing_more_than_the_catalogs(values):
    listed = unset_images(CATALOGS, Snapshot.from_objects([kubeai_release(values)]))
    assert [image.field for image in listed] == SHIPPED_UNSET


def test_each_warning_names_the_field_the_image_and_where_to_set_it():
    freetoken = next(image for image in plan_of().unset_images if image.field == "runtimes.yaml freetoken.image")
    assert freetoken.describe() == (
        "RuntimeImageNotSet: runtimes.yaml freetoken.image: "
        "'registry.example.com/magicstick/freetoken:CHANGEME' is a placeholder; set freetoken.image to a "
        "FreeToken server image (the `ft` CLI on PATH), pinned by tag or digest, in runtimes.yaml of the "
        "directory magicstick:catalogDir names (render: --catalogs DIR); until then every FreeToken "
        "activation is Failed / RuntimeImageNotSet"
    )
