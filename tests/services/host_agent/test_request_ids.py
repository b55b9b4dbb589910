"""A request ID names one request: a second HostOperation carrying a spec.requestID that another
HostOperation already carries is refused (Failed / DuplicateRequestID, naming the field and the
other operation) and never run, while the first goes on.

The first is the operation an agent has already claimed (it has a status other than this
refusal), else the earliest by creationTimestamp, then by name: every node's agent reads the
same HostOperations, so each decides alike. The console-script cases run against the test API
server; the ordering cases are the fast layer's (in process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.host_agent.engine import Engine
from services.host_agent.journal import Journal
from tests.services.host_agent.fake_host import strix_halo
from tests.services.host_agent.stand_ins import RecordingCluster, RecordingRunner, context, operation
from tests.services.host_agent.world import AgentWorld


def _phase(*phases: str) -> Any:
    return lambda status: status.get("phase") in phases


def _refused_as_a_duplicate_of(status: dict[str, Any], first: str) -> bool:
    return (
        (status.get("phase"), status.get("reason")) == ("Failed", "DuplicateRequestID")
        and "spec.requestID" in status.get("message", "")
        and f"HostOperation ai-system/{first}, which came first" in status.get("message", "")
    )


def test_a_second_operation_carrying_a_used_request_id_is_refused_naming_the_first_and_only_the_first_runs(
    world: AgentWorld,
) -> None:
    request_id = world.object_name("one-request")
    world.request("a-reboot", "reboot", requestID=request_id)
    world.request("b-reboot-again", "reboot", requestID=request_id)
    agent = world.start()
    refused = world.wait_for("b-reboot-again", _phase("Failed"), process=agent)["status"]
    assert _refused_as_a_duplicate_of(refused, world.object_name("a-reboot")), refused
    assert request_id in refused["message"]
    first = world.wait_for("a-reboot", _phase("Running"), process=agent)["status"]
    assert first["reason"] == "Rebooting"
    assert world.commands() == ["systemctl reboot"]


def test_an_operation_that_reuses_the_request_id_of_a_running_one_is_refused_even_when_its_name_sorts_first(
    world: AgentWorld,
) -> None:
    request_id = world.object_name("running-request")
    agent = world.start()
    world.request("z-reboot", "reboot", requestID=request_id)
    world.wait_for("z-reboot", _phase("Running"), process=agent)
    world.request("a-poweroff", "poweroff", requestID=request_id)
    refused = world.wait_for("a-poweroff", _phase("Failed"), process=agent)["status"]
    assert _refused_as_a_duplicate_of(refused, world.object_name("z-reboot")), refused
    assert world.operation("z-reboot")["status"]["reason"] == "Rebooting"
    assert world.commands() == ["systemctl reboot"]


def test_a_request_id_carried_by_an_operation_of_another_node_is_not_used_again_on_this_one(
    world: AgentWorld,
) -> None:
    request_id = world.object_name("shared-request")
    world.request("a-elsewhere", "reboot", requestID=request_id, nodeUID="uid-of-another-node")
    world.request("b-here", "reboot", requestID=request_id)
    agent = world.start()
    refused = world.wait_for("b-here", _phase("Failed"), process=agent)["status"]
    assert _refused_as_a_duplicate_of(refused, world.object_name("a-elsewhere")), refused
    assert "status" not in world.operation("a-elsewhere")
    assert world.commands() == []


def _engine(root: Path) -> tuple[Engine, RecordingCluster, RecordingRunner]:
    cluster, runner = RecordingCluster(), RecordingRunner()
    return (
        Engine(Journal(root / "var/lib/magicstick/journal"), context(root, cluster=cluster, runner=runner)),
        cluster,
        runner,
    )


def _created(obj: dict[str, Any], timestamp: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "creationTimestamp": timestamp}}


def _last(cluster: RecordingCluster, name: str) -> dict[str, Any]:
    return [status for written, status in cluster.statuses if written == name][-1]


def test_the_earlier_creation_keeps_the_request_id_whatever_the_names(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    later = operation(engine.context, "poweroff", name="a-later", uid="uid-a", requestID="r-1")
    earlier = operation(engine.context, "reboot", name="b-earlier", uid="uid-b", requestID="r-1")
    engine.run_once([_created(later, "2026-12-02T11:00:01Z"), _created(earlier, "2026-12-02T11:00:00Z")])
    assert _refused_as_a_duplicate_of(_last(cluster, "a-later"), "b-earlier")
    assert runner.calls == [("systemctl", "reboot")]


def test_operations_created_in_the_same_second_are_ordered_by_name(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    second = operation(engine.context, "poweroff", name="op-b", uid="uid-b", requestID="r-1")
    first = operation(engine.context, "reboot", name="op-a", uid="uid-a", requestID="r-1")
    engine.run_once([_created(second, "2026-12-02T11:00:00Z"), _created(first, "2026-12-02T11:00:00Z")])
    assert _refused_as_a_duplicate_of(_last(cluster, "op-b"), "op-a")
    assert runner.calls == [("systemctl", "reboot")]


def test_an_operation_already_claimed_keeps_its_request_id_against_an_earlier_one_seen_later(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    claimed = operation(
        engine.context,
        "reboot",
        name="op-b",
        uid="uid-b",
        requestID="r-1",
        status={"phase": "Failed", "reason": "Stale", "message": "", "lastTransitionTime": "2026-12-02T11:00:00Z"},
    )
    unseen = operation(engine.context, "poweroff", name="op-a", uid="uid-a", requestID="r-1")
    engine.run_once([_created(claimed, "2026-12-02T11:00:00Z"), _created(unseen, "2026-12-02T11:00:00Z")])
    assert _refused_as_a_duplicate_of(_last(cluster, "op-a"), "op-b")
    assert runner.calls == []


def test_distinct_request_ids_are_each_run(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    engine, cluster, runner = _engine(tmp_path)
    engine.run_once(
        [
            operation(engine.context, "reboot", name="op-a", uid="uid-a", requestID="r-1"),
            operation(engine.context, "clear-model-cache", name="op-b", uid="uid-b", requestID="r-2"),
        ]
    )
    assert {name: status["phase"] for name, status in cluster.statuses} == {"op-a": "Running", "op-b": "Succeeded"}
    assert runner.calls == [("systemctl", "reboot")]
