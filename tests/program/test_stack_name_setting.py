"""magicstick:stackName: which PKO Stack's outcome Appliance/local.status shows."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cli.offline import run_offline
from planning.settings import DEFAULT_STACK_NAME
from program import main as program
from program.settings import RunSettingsError, Settings

REPOSITORY = Path(__file__).resolve().parents[2]
DEMO = REPOSITORY / "examples" / "demo" / "snapshot.yaml"
NOW = "2026-01-01T12:00:00Z"


def test_unset_it_is_magicstick_as_pulumi_yaml_and_deploy_stack_yaml_say():
    settings, _ = run_offline(Settings.from_config, {})

    declared = yaml.safe_load((REPOSITORY / "Pulumi.yaml").read_text())["config"]["magicstick:stackName"]
    (stack,) = [
        d
        for d in yaml.safe_load_all((REPOSITORY / "deploy" / "stack.yaml").read_text())
        if d and d.get("kind") == "Stack"
    ]
    assert settings.plan.stack_name == DEFAULT_STACK_NAME == declared["default"] == stack["metadata"]["name"]


def test_a_set_name_reaches_the_plan_settings():
    settings, _ = run_offline(Settings.from_config, {"stackName": "appliance-loop"})

    assert settings.plan.stack_name == "appliance-loop"


@pytest.mark.parametrize("value", ["Magic_Stick", "x" * 43, "-magicstick"])
def test_a_name_pko_would_refuse_stops_the_run_naming_the_key(value):
    with pytest.raises(RunSettingsError, match=r"^magicstick:stackName: '.*' is not a Stack name"):
        run_offline(program.run, {"snapshotFile": str(DEMO), "now": NOW, "stackName": value})
