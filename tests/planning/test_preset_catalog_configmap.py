"""ConfigMap magicstick-model-presets overrides presets by name; a bad one is reported, never fatal."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from planning.catalog_overrides import CATALOG_CONFIG_MAPS, catalogs_in_force
from planning.snapshot import Snapshot
from tests.planning.builders import CATALOGS, NS, status_of
from tests.planning.catalog_maps import planned, ready_condition
from tests.planning.models.world import local_model, platform

PRESETS_CONFIG_MAP = "magicstick-model-presets"
TINY = {
    "name": "tinychat",
    "displayName": "Tiny chat",
    "modelType": "chat",
    "defaultComputeTarget": "cpu",
    "variants": [
        {
            "engine": "VLLM",
            "computeTarget": "cpu",
            "defaultArtifact": "bf16",
            "artifacts": [
                {"id": "bf16", "url": "hf://example/tiny-chat", "precision": "bf16", "memoryRequiredMi": 3072}
            ],
        }
    ],
}


def presets_text(*entries: dict[str, Any]) -> str:
    return yaml.safe_dump({"presets": [copy.deepcopy(e) for e in entries]}, sort_keys=False)


def presets_config_map(text: str, *, key: str = "presets.yaml") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": PRESETS_CONFIG_MAP, "namespace": NS},
        "data": {key: text},
    }


def test_the_preset_catalog_is_overridden_by_config_map_magicstick_model_presets_key_presets_yaml():
    assert ("presets", PRESETS_CONFIG_MAP, "presets.yaml") in [(c.catalog, c.name, c.key) for c in CATALOG_CONFIG_MAPS]


def test_a_preset_of_the_config_map_is_added_to_the_shipped_ones():
    snapshot = Snapshot.from_objects([presets_config_map(presets_text(TINY))])
    in_force = catalogs_in_force(snapshot, CATALOGS, system_namespace=NS)
    assert in_force.problems == ()
    assert in_force.applied == (f"{NS}/{PRESETS_CONFIG_MAP}",)
    assert set(in_force.catalogs.presets.names) == {*CATALOGS.presets.names, "tinychat"}


def test_a_local_model_can_use_a_preset_of_the_config_map():
    activation = local_model("tiny", preset="tinychat", artifact=None)
    activation["spec"]["local"].pop("artifact")
    result = planned(*platform(), activation, presets_config_map(presets_text(TINY)))
    status = status_of(result, "ModelActivation", "tiny")
    assert status["reason"] != "InvalidSpec", status["message"]
    assert status["preset"] == "tinychat"


def test_a_preset_of_the_config_map_replaces_the_shipped_preset_of_its_name():
    replaced = {**TINY, "name": "qwen2505bcpu"}
    snapshot = Snapshot.from_objects([presets_config_map(presets_text(replaced))])
    presets = catalogs_in_force(snapshot, CATALOGS, system_namespace=NS).catalogs.presets
    assert presets.get("qwen2505bcpu").display_name == "Tiny chat"
    assert len(presets.entries) == len(CATALOGS.presets.entries)


BROKEN = {
    "YAML error": ("presets:\n  - name: [unclosed\n", "the document"),
    "unknown field": (presets_text({**TINY, "colour": "red"}), "field colour"),
    "default target without a variant": (
        presets_text({**TINY, "defaultComputeTarget": "nvidia-gpu"}),
        "field defaultComputeTarget",
    ),
    "unknown engine": (presets_text({**TINY, "variants": [{**TINY["variants"][0], "engine": "Triton"}]}), "'Triton'"),
}


@pytest.mark.parametrize("case", BROKEN, ids=str)
def test_an_invalid_presets_config_map_is_reported_on_the_appliance_and_the_shipped_presets_stay_in_force(case):
    text, named = BROKEN[case]
    result = planned(*platform(), local_model("m"), presets_config_map(text))
    condition = ready_condition(result)
    assert condition["reason"] == "CatalogInvalid"
    assert condition["message"].startswith(f"ConfigMap {NS}/{PRESETS_CONFIG_MAP} key presets.yaml is not applied")
    assert named in condition["message"]
    assert status_of(result, "ModelActivation", "m")["reason"] != "InvalidSpec"
