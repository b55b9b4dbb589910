"""The KubeAI module base in magic-cluster/: what the generated app-kubeai Kustomization applies.

It must build with kustomize, validate against the upstream Flux schemas, read exactly the
stores the program writes, and bootstrap them so Flux never resets or removes them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from catalogs import load_catalogs
from planning.hardware.validation import RUNTIME_IMAGES_CONFIG_MAP, RUNTIME_IMAGES_KEY, RUNTIME_IMAGES_NAMESPACE
from planning.models.kubeai import PROFILE_STORE_CONFIG_MAP, PROFILE_STORE_KEY, PROFILE_STORE_NAMESPACE
from planning.models.offloading import OFFLOADING_CONFIG_MAP, OFFLOADING_KEY, OFFLOADING_NAMESPACE
from providers.profile_store import STORE_ANNOTATIONS, STORE_LABELS
from tests.support.crd_schema import upstream_registry

REPOSITORY = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")


def base_path() -> Path:
    path = load_catalogs().modules.get("kubeai").path
    return REPOSITORY / path.removeprefix("./")


@pytest.fixture(scope="module")
def built() -> list[dict]:
    """`kubectl kustomize` of the base, as Flux's kustomize-controller builds it."""
    assert KUBECTL is not None, "kubectl (with kustomize) is needed; see README, Tests"
    answer = subprocess.run([KUBECTL, "kustomize", str(base_path())], capture_output=True, text=True, check=False)
    assert answer.returncode == 0, answer.stderr
    return [doc for doc in yaml.safe_load_all(answer.stdout) if doc]


def of_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def test_the_base_sits_at_the_path_the_module_catalog_names():
    assert (base_path() / "kustomization.yaml").is_file()


def test_every_flux_object_of_the_base_validates_against_the_upstream_schema(built):
    registry = upstream_registry()
    flux = [o for o in built if o["apiVersion"].split("/")[0].endswith("toolkit.fluxcd.io")]
    assert {o["kind"] for o in flux} == {"HelmRepository", "HelmRelease"}
    for obj in flux:
        assert registry.errors(obj) == [], obj["metadata"]["name"]


def test_the_helm_release_reads_every_store_optionally_and_pins_its_chart(built):
    (release,) = of_kind(built, "HelmRelease")
    assert (
        release["metadata"]["namespace"] == PROFILE_STORE_NAMESPACE == OFFLOADING_NAMESPACE == RUNTIME_IMAGES_NAMESPACE
    )
    assert release["spec"]["valuesFrom"] == [
        {"kind": "ConfigMap", "name": PROFILE_STORE_CONFIG_MAP, "valuesKey": PROFILE_STORE_KEY, "optional": True},
        {"kind": "ConfigMap", "name": OFFLOADING_CONFIG_MAP, "valuesKey": OFFLOADING_KEY, "optional": True},
        {"kind": "ConfigMap", "name": RUNTIME_IMAGES_CONFIG_MAP, "valuesKey": RUNTIME_IMAGES_KEY, "optional": True},
    ]
    version = release["spec"]["chart"]["spec"]["version"]
    assert version[0].isdigit() and "*" not in version and "x" not in version


@pytest.mark.parametrize(
    ("name", "empty"),
    [
        (PROFILE_STORE_CONFIG_MAP, {"resourceProfiles": {}}),
        (OFFLOADING_CONFIG_MAP, {"resourceProfiles": {}}),
        (RUNTIME_IMAGES_CONFIG_MAP, {}),
    ],
)
def test_each_store_is_bootstrapped_empty_with_the_metadata_the_program_creates_it_with(built, name, empty):
    (store,) = [o for o in of_kind(built, "ConfigMap") if o["metadata"]["name"] == name]
    assert json.loads(store["data"][PROFILE_STORE_KEY]) == empty
    assert store["metadata"]["annotations"] == dict(STORE_ANNOTATIONS)
    assert store["metadata"]["labels"] == dict(STORE_LABELS)
