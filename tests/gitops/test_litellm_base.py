"""The LiteLLM and model-catalog module bases in magic-cluster/: what app-litellm and
app-model-catalog apply.

They must build with kustomize, validate against the upstream Flux schemas, read the catalog
the program publishes in the format it writes (planning/models/catalog_format.py), and
bootstrap that catalog so Flux never resets or removes it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from catalogs import load_catalogs
from planning.frozen import thaw
from planning.models.catalog_format import (
    EMPTY_CATALOG_DATA,
    FLUX_WATCH_LABEL,
    FLUX_WATCH_VALUE,
    LITELLM_NAMESPACE,
    LITELLM_VALUES_KEY,
    MODEL_CATALOG_CONFIG_MAP,
    MODEL_CATALOG_KEY,
)
from planning.settings import DEFAULT_SYSTEM_NAMESPACE
from tests.planning.builders import NS, plan_of, runtime
from tests.planning.models.world import local_model, observed_model, platform, pod
from tests.support.crd_schema import upstream_registry

REPOSITORY = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")
CHART = "oci://ghcr.io/berriai/litellm-helm"
PINNED = re.compile(r"^\d+\.\d+\.\d+$")


def base_path(module: str) -> Path:
    return REPOSITORY / load_catalogs().modules.get(module).path.removeprefix("./")


def build(module: str) -> list[dict]:
    """`kubectl kustomize` of the module's base, as Flux's kustomize-controller builds it."""
    assert KUBECTL is not None, "kubectl (with kustomize) is needed; see README, Tests"
    answer = subprocess.run([KUBECTL, "kustomize", str(base_path(module))], capture_output=True, text=True, check=False)
    assert answer.returncode == 0, answer.stderr
    return [doc for doc in yaml.safe_load_all(answer.stdout) if doc]


@pytest.fixture(scope="module")
def litellm() -> list[dict]:
    return build("litellm")


@pytest.fixture(scope="module")
def model_catalog() -> list[dict]:
    return build("model-catalog")


def one(objects: list[dict], kind: str, name: str | None = None) -> dict:
    (found,) = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    return found


def merged(*documents: Mapping[str, Any]) -> dict[str, Any]:
    """Helm values merged as Flux merges valuesFrom then values: maps deep, the rest replaced."""
    result: dict[str, Any] = {}
    for document in documents:
        for key, value in document.items():
            if isinstance(value, Mapping) and isinstance(result.get(key), dict):
                result[key] = merged(result[key], value)
            else:
                result[key] = thaw(value) if isinstance(value, Mapping) else value
    return result


@pytest.mark.parametrize("module", ["litellm", "model-catalog"])
def test_each_base_sits_at_the_path_the_module_catalog_names(module):
    assert (base_path(module) / "kustomization.yaml").is_file()


def test_every_flux_object_of_the_litellm_base_validates_against_the_upstream_schema(litellm):
    registry = upstream_registry()
    flux = [o for o in litellm if o["apiVersion"].split("/")[0].endswith("toolkit.fluxcd.io")]
    assert {o["kind"] for o in flux} == {"OCIRepository", "HelmRelease"}
    for obj in flux:
        assert registry.errors(obj) == [], obj["metadata"]["name"]


def test_the_release_takes_litellms_own_chart_pinned_to_one_version(litellm):
    release = one(litellm, "HelmRelease")
    source = one(litellm, "OCIRepository", release["spec"]["chartRef"]["name"])
    assert release["spec"]["chartRef"]["kind"] == "OCIRepository"
    assert source["metadata"]["namespace"] == release["metadata"]["namespace"]
    assert source["spec"]["url"] == CHART
    assert PINNED.match(source["spec"]["ref"]["tag"]) and set(source["spec"]["ref"]) == {"tag"}


def test_the_release_lives_beside_the_catalog_and_runs_the_proxy_where_key_secrets_live(litellm):
    release = one(litellm, "HelmRelease")
    assert release["metadata"]["namespace"] == DEFAULT_SYSTEM_NAMESPACE == NS
    assert release["spec"]["targetNamespace"] == LITELLM_NAMESPACE


def test_the_release_reads_the_defaults_then_the_catalog_so_the_catalog_wins(litellm):
    release = one(litellm, "HelmRelease")
    defaults, catalog = release["spec"]["valuesFrom"]
    assert catalog == {
        "kind": "ConfigMap",
        "name": MODEL_CATALOG_CONFIG_MAP,
        "valuesKey": LITELLM_VALUES_KEY,
        "optional": True,
    }
    shipped = one(litellm, "ConfigMap", defaults["name"])
    assert shipped["metadata"]["namespace"] == release["metadata"]["namespace"]
    assert yaml.safe_load(shipped["data"][defaults["valuesKey"]]) == {
        "proxy_config": {"model_list": []},
        "extraEnvVars": [],
    }
    inline = release["spec"]["values"]
    assert "extraEnvVars" not in inline and "model_list" not in inline.get("proxy_config", {})
    assert inline["proxyConfigMap"]["create"] is True


def test_the_proxy_config_litellm_gets_is_the_catalogs_model_list_with_keys_as_references_only(litellm):
    external = runtime(
        "ModelActivation",
        "gpt",
        {
            "type": "external",
            "targetNamespace": "ai",
            "external": {
                "model": "openai/gpt-4o-mini",
                "apiBase": "https://api.example.com/v1",
                "apiKeySecretRef": {"name": "example-api-key", "key": "api-key"},
            },
        },
    )
    planned = plan_of(*platform(), external, local_model("m"), observed_model("m", ready=1, all_=1), pod("m-0", "m"))
    data = thaw(planned.model_catalog.config_map.body)["data"]
    release = one(litellm, "HelmRelease")
    defaults = one(litellm, "ConfigMap", release["spec"]["valuesFrom"][0]["name"])
    values = merged(
        yaml.safe_load(defaults["data"]["values.yaml"]),
        yaml.safe_load(data[LITELLM_VALUES_KEY]),
        release["spec"]["values"],
    )
    config = values["proxy_config"]
    assert [m["model_name"] for m in config["model_list"]] == json.loads(data[MODEL_CATALOG_KEY]) == ["gpt", "m"]
    assert config["general_settings"]["master_key"] == "os.environ/PROXY_MASTER_KEY"
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in values["extraEnvVars"]}
    for entry in config["model_list"]:
        key = entry["litellm_params"]["api_key"]
        assert key == "none" or (key.startswith("os.environ/") and key.removeprefix("os.environ/") in env)
    assert list(env.values()) == [{"name": "example-api-key", "key": "api-key", "optional": True}]


def test_the_catalog_is_bootstrapped_empty_in_the_programs_format_and_left_to_the_program(model_catalog):
    (catalog,) = model_catalog
    assert (catalog["kind"], catalog["metadata"]["name"], catalog["metadata"]["namespace"]) == (
        "ConfigMap",
        MODEL_CATALOG_CONFIG_MAP,
        NS,
    )
    assert catalog["data"] == EMPTY_CATALOG_DATA
    assert catalog["metadata"]["labels"] == {FLUX_WATCH_LABEL: FLUX_WATCH_VALUE}
    assert catalog["metadata"]["annotations"] == {
        "kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent",
        "kustomize.toolkit.fluxcd.io/prune": "disabled",
    }


def test_the_kubeai_release_serves_its_models_in_litellms_namespace():
    """KubeAI routes point at the KubeAI Service in the Model's namespace (planning/models/catalog.py)."""
    (release,) = [o for o in build("kubeai") if o["kind"] == "HelmRelease"]
    assert release["spec"]["targetNamespace"] == LITELLM_NAMESPACE
