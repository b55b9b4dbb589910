"""`magicstick render` of a snapshot holding catalog ConfigMaps or the operator's Stack shows what a run would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

import catalogs as catalogs_package
from cli.main import main
from cli.offline import run_offline
from program import main as program

REPOSITORY = Path(__file__).resolve().parents[2]
DEMO = REPOSITORY / "examples" / "demo" / "snapshot.yaml"
NOW = "2026-01-01T12:00:00Z"
LITELLM = "resources/kustomization.flux-system.app-litellm.yaml"
APPLIANCE = "status/appliance.ai-system.local.yaml"


def modules_text(litellm_path: str) -> str:
    document = yaml.safe_load((Path(catalogs_package.__file__).parent / "modules.yaml").read_text())
    next(m for m in document["modules"] if m["name"] == "litellm")["path"] = litellm_path
    return yaml.safe_dump(document, sort_keys=False)


def module_catalog(text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "magicstick-module-catalog", "namespace": "ai-system"},
        "data": {"modules.yaml": text},
    }


def operator_stack() -> dict[str, Any]:
    return {
        "apiVersion": "pulumi.com/v1",
        "kind": "Stack",
        "metadata": {"name": "magicstick", "namespace": "ai-system", "generation": 2},
        "status": {
            "observedGeneration": 2,
            "lastUpdate": {
                "state": "failed",
                "type": "up",
                "lastAttemptedCommit": "0123456789abcdef0123456789abcdef01234567",
                "lastResyncTime": "2026-01-01T11:00:00Z",
                "failures": 3,
            },
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "NotReadyStalled",
                    "message": "reconciliation is stalled",
                    "lastTransitionTime": "2026-01-01T11:00:00Z",
                },
                {
                    "type": "Stalled",
                    "status": "True",
                    "reason": "UpdateFailed",
                    "message": "up failed 3 times; not retrying until the spec or source changes",
                    "lastTransitionTime": "2026-01-01T11:00:00Z",
                },
            ],
        },
    }


def rendered(tmp_path: Path, *extra: dict[str, Any]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(DEMO.read_text() + "".join("\n---\n" + yaml.safe_dump(obj) for obj in extra))
    out = tmp_path / "out"
    assert main(["render", "--snapshot", str(snapshot), "--out", str(out), "--now", NOW]) == 0
    return out


def read(out: Path, relative: str) -> dict[str, Any]:
    return yaml.safe_load((out / relative).read_text())


def test_a_valid_module_catalog_config_map_changes_what_the_render_declares(tmp_path):
    out = rendered(tmp_path, module_catalog(modules_text("./site/litellm")))

    assert read(out, LITELLM)["spec"]["path"] == "./site/litellm"
    assert read(out, APPLIANCE)["status"]["conditions"][0]["reason"] != "CatalogInvalid"


def test_an_invalid_module_catalog_config_map_renders_the_base_and_a_degraded_appliance_naming_the_field(tmp_path):
    base = read(rendered(tmp_path / "base"), LITELLM)
    broken = modules_text("./site/litellm").replace(
        "kustomization: app-litellm", "kustomization: app-litellm\n  colour: red", 1
    )

    out = rendered(tmp_path / "broken", module_catalog(broken))

    assert read(out, LITELLM) == base
    status = read(out, APPLIANCE)["status"]
    ready = status["conditions"][0]
    assert (status["phase"], ready["reason"]) == ("Degraded", "CatalogInvalid")
    assert ready["message"].startswith(
        "ConfigMap ai-system/magicstick-module-catalog key modules.yaml is not applied: entry 'litellm', field colour: unknown field"
    )


def test_the_operators_stack_in_a_snapshot_reaches_the_rendered_appliance_status(tmp_path):
    status = read(rendered(tmp_path, operator_stack()), APPLIANCE)["status"]

    assert status["operator"] == {
        "stack": "ai-system/magicstick",
        "lastUpdate": {
            "result": "failed",
            "commit": "0123456789abcdef0123456789abcdef01234567",
            "type": "up",
            "time": "2026-01-01T11:00:00Z",
        },
    }
    stalled = next(c for c in status["conditions"] if c["type"] == "OperatorStalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "UpdateFailed")


def test_the_demo_without_either_renders_no_operator_and_no_catalog_problem(tmp_path):
    status = read(rendered(tmp_path), APPLIANCE)["status"]

    assert "operator" not in status
    assert [c["type"] for c in status["conditions"]] == ["Ready", "Reconciling"]


def run_with(tmp_path: Path, *objects: dict[str, Any]) -> None:
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(objects))
    run_offline(program.run, {"snapshotFile": str(snapshot), "now": NOW})


def test_a_rejected_catalog_config_map_is_logged_once_through_the_appliance_warning(tmp_path, caplog):
    caplog.set_level("WARNING")
    appliance = {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "Appliance",
        "metadata": {"name": "local", "namespace": "ai-system", "generation": 1},
        "spec": {"profile": "ai-workstation"},
    }

    run_with(tmp_path, appliance, module_catalog("modules: ["))

    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    (line,) = [w for w in warnings if "magicstick-module-catalog" in w]
    assert line.startswith(
        "Appliance ai-system/local is Degraded: CatalogInvalid: ConfigMap ai-system/magicstick-module-catalog key modules.yaml"
    )


def test_without_an_appliance_a_rejected_catalog_config_map_is_still_logged(tmp_path, caplog):
    caplog.set_level("WARNING")

    run_with(tmp_path, module_catalog("modules: ["))

    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert [w for w in warnings if "magicstick-module-catalog" in w] == [
        "CatalogInvalid: ConfigMap ai-system/magicstick-module-catalog key modules.yaml is not applied: the document, field line 1, "
        "column 11: invalid YAML: expected the node content, but found '<stream end>'. The modules catalog in force is "
        "magicstick:catalogDir's, else the shipped one."
    ]
