"""The model catalog as the real program declares it, under Pulumi's mocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cli.offline import OfflineRun, run_offline
from planning.models.catalog_format import LITELLM_VALUES_KEY, MODEL_CATALOG_CONFIG_MAP, MODEL_CATALOG_KEY
from program import main as program
from tests.planning.builders import NS, with_flux
from tests.planning.models.world import local_model, observed_model, platform, pod

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
APPLIANCE = "magicstick:index:Appliance"


@pytest.fixture
def run_program(tmp_path: Path):
    def run(*objects: dict) -> OfflineRun:
        snapshot = tmp_path / "snapshot.yaml"
        snapshot.write_text(yaml.safe_dump_all(with_flux(objects)))
        _, recorded = run_offline(program.run, {"snapshotFile": str(snapshot), "now": "2026-01-01T00:00:00Z"})
        return recorded

    return run


def catalogs(run: OfflineRun) -> list:
    return [r for r in run.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == MODEL_CATALOG_CONFIG_MAP]


def test_the_program_declares_the_catalog_configmap_under_the_appliance_with_the_ready_model(run_program):
    run = run_program(*platform(), local_model("m"), observed_model("m", ready=1, all_=1), pod("m-0", "m"))
    (catalog,) = catalogs(run)
    (root,) = run.of_type(APPLIANCE)
    assert catalog.name == f"configmap/{NS}/{MODEL_CATALOG_CONFIG_MAP}"
    assert catalog.parent == root.urn
    assert catalog.inputs["metadata"]["namespace"] == NS
    assert json.loads(catalog.inputs["data"][MODEL_CATALOG_KEY]) == ["m"]
    (entry,) = json.loads(catalog.inputs["data"][LITELLM_VALUES_KEY])["proxy_config"]["model_list"]
    assert entry["model_name"] == "m"


def test_the_program_declares_no_catalog_while_no_model_requests_the_module(run_program):
    assert catalogs(run_program(*platform())) == []
