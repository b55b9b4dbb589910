"""The engine's order and its recovery contract, in process (the fast layer).

The same contract is proven with the console script, a real SIGKILL and the real API server
in test_agent_recovery.py; here each rule is one quick case.
"""

from __future__ import annotations

from pathlib import Path

from services.host_agent.engine import Engine
from services.host_agent.journal import Entry, Journal, Stage
from tests.services.host_agent.fake_host import strix_halo
from tests.services.host_agent.stand_ins import RecordingCluster, RecordingRunner, context, operation


def _engine(root: Path, **kwargs: object) -> tuple[Engine, RecordingCluster, RecordingRunner]:
    cluster, runner = RecordingCluster(), RecordingRunner()
    ctx = context(root, cluster=cluster, runner=runner, **kwargs)  # type: ignore[arg-type]
    return Engine(Journal(root / "var/lib/magicstick/journal"), ctx), cluster, runner


def test_a_reboot_says_so_in_its_status_before_systemd_is_asked(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    engine.run_once([operation(engine.context, "reboot")])
    assert runner.calls == [("systemctl", "reboot")]
    assert [status["reason"] for _, status in cluster.statuses] == ["Rebooting"]
    entry = engine.journal.read("op-uid-1")
    assert entry is not None and entry.stage is Stage.FINISHED


def test_a_reboot_completes_once_the_boot_id_has_changed(tmp_path: Path) -> None:
    host = strix_halo(tmp_path)
    engine, _, _ = _engine(tmp_path)
    obj = operation(engine.context, "reboot")
    engine.run_once([obj])
    obj["status"] = engine.context.cluster.statuses[-1][1]  # type: ignore[attr-defined]
    host.boot("a-new-boot")
    after, cluster, runner = _engine(tmp_path)
    after.run_once([obj])
    assert runner.calls == []
    assert cluster.statuses[-1][1]["phase"] == "Succeeded"


def test_an_operation_for_another_boot_is_stale_and_never_run(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    engine.run_once([operation(engine.context, "poweroff", bootID="an-old-boot")])
    assert runner.calls == []
    assert (cluster.statuses[-1][1]["phase"], cluster.statuses[-1][1]["reason"]) == ("Failed", "Stale")


def test_an_operation_of_another_node_is_left_alone(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    engine.run_once([operation(engine.context, "reboot", nodeUID="another-node")])
    assert (runner.calls, cluster.statuses) == ([], [])


def test_a_plan_bound_request_against_an_old_plan_is_refused_naming_plan_id(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, _ = _engine(tmp_path)
    engine.run_once([operation(engine.context, "clear-model-cache", planId="model-cache-old")])
    status = cluster.statuses[-1][1]
    assert (status["phase"], status["reason"]) == ("Failed", "PlanChanged")
    assert "spec.planId" in status["message"]
    assert (tmp_path / "var/lib/magicstick/model-cache/ollama/models--example/blob.bin").exists()


def test_an_invalid_spec_is_rejected_naming_the_field(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    engine.run_once([operation(engine.context, "reboot", gpuMemory={"carveoutIndex": 0, "dynamicLimitMi": 1024})])
    status = cluster.statuses[-1][1]
    assert (status["phase"], status["reason"]) == ("Failed", "Rejected")
    assert "spec.gpuMemory" in status["message"] and runner.calls == []


def test_an_action_started_but_not_recorded_is_uncertain_and_not_repeated(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    obj = operation(
        engine.context,
        "reboot",
        status={"phase": "Running", "reason": "Rebooting", "message": "", "lastTransitionTime": "2026-12-02T11:59:00Z"},
    )
    engine.journal.write(
        Entry(
            operation_uid="op-uid-1",
            operation="ai-system/op-1",
            request_id="request-op-1",
            action="reboot",
            boot_id=engine.context.host.facts.boot_id,
            stage=Stage.STARTED,
            started_at="2026-12-02T11:59:00Z",
        )
    )
    engine.run_once([obj])
    assert runner.calls == []
    status = cluster.statuses[-1][1]
    assert (status["phase"], status["reason"]) == ("Failed", "OutcomeUncertain")
    assert "not repeated" in status["message"]


def test_a_converged_operation_is_not_written_again(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, _ = _engine(tmp_path)
    obj = operation(engine.context, "poweroff", bootID="an-old-boot")
    engine.run_once([obj])
    obj["status"] = cluster.statuses[-1][1]
    again, cluster_again, _ = _engine(tmp_path)
    again.run_once([obj])
    assert cluster_again.statuses == []


def test_the_journal_forgets_operations_that_no_longer_exist(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, _, _ = _engine(tmp_path)
    engine.run_once([operation(engine.context, "reboot")])
    assert engine.journal.operation_uids() == {"op-uid-1"}
    engine.run_once([])
    assert engine.journal.operation_uids() == frozenset()


def test_clear_model_cache_empties_only_the_fixed_locations(tmp_path: Path) -> None:
    host = strix_halo(tmp_path)
    keep = tmp_path / "var/lib/magicstick/journal-neighbour.txt"
    keep.write_text("kept")
    engine, cluster, _ = _engine(tmp_path)
    engine.run_once([operation(engine.context, "clear-model-cache")])
    assert cluster.statuses[-1][1]["phase"] == "Succeeded"
    assert host.cache("ollama").is_dir() and not any(host.cache("ollama").iterdir())
    assert keep.read_text() == "kept"


def test_a_request_whose_node_name_is_not_the_node_of_its_uid_is_refused_naming_both_fields_and_not_run(
    tmp_path: Path,
) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    engine.run_once([operation(engine.context, "reboot", nodeName="node-b")])
    assert runner.calls == []
    status = cluster.statuses[-1][1]
    assert (status["phase"], status["reason"]) == ("Failed", "Rejected")
    assert "spec.nodeName" in status["message"] and "spec.nodeUID" in status["message"]
    assert "node-b" in status["message"] and "halo" in status["message"]
    assert engine.journal.operation_uids() == frozenset()
