"""examples/strix-halo/: its render shows the whole path, from NFD and host evidence to a
validation run in progress and the digest that passed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import yaml

from planning.hardware.amd import ELIGIBLE_LABEL
from planning.plan import plan
from planning.snapshot import Snapshot
from tests.planning.builders import CATALOGS, status_of

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "strix-halo" / "snapshot.yaml"
RENDERED_AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def rendered():
    snapshot = Snapshot.from_objects(list(yaml.safe_load_all(EXAMPLE.read_text())))
    return plan(snapshot=snapshot, catalogs=CATALOGS, now=RENDERED_AT)


def test_the_strix_halo_example_renders_eligibility_engines_validation_and_runtime_image():
    result = rendered()
    (node,) = [o for o in result.objects if o.kind == "Node"]
    assert node.body["metadata"]["labels"] == {
        ELIGIBLE_LABEL: "true",
        "appliance.magicstick.dev/amd-gpu-engine-ollama": "true",
        "appliance.magicstick.dev/amd-gpu-engine-vllm": "true",
    }
    assert any(o.kind == "DeviceConfig" for o in result.objects)
    operator = status_of(result, "Appliance", "local")["hardwareOperators"]["amd-gpu"]
    compatibility = operator["compatibility"]
    assert operator["phase"] == "Ready"
    assert (compatibility["profileId"], compatibility["optedIn"], compatibility["eligible"]) == (
        "strix-halo",
        True,
        True,
    )
    assert {engine: v["state"] for engine, v in compatibility["validation"].items()} == {
        "OLlama": "Passed",
        "VLLM": "Running",
    }
    assert compatibility["runtimeImages"]["OLlama"].endswith("@sha256:" + "4f" * 32)
    assert compatibility["runtimeReady"] is True
    (run,) = result.validation_runs
    assert (run.run_id, run.host_current) == ("strix-halo-2026-01-01", True)
    assert result.validation_history is not None


def test_the_same_example_a_day_later_has_stale_evidence_and_no_eligibility():
    snapshot = Snapshot.from_objects(list(yaml.safe_load_all(EXAMPLE.read_text())))
    later = plan(snapshot=snapshot, catalogs=CATALOGS, now=datetime(2026, 1, 2, 12, 0, tzinfo=UTC))
    compatibility = status_of(later, "Appliance", "local")["hardwareOperators"]["amd-gpu"]["compatibility"]
    assert (compatibility["eligible"], compatibility["reason"]) == (False, "HostEvidenceNotCurrent")
    (run,) = later.validation_runs
    assert run.host_current is False
