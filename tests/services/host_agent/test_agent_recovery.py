"""The recovery contract with a real crash: the agent is killed with SIGKILL (its failpoint)
right after the journal entry is durable, or right after the action, then started again.
Whatever happened, nothing runs twice and the status says what is known."""

from __future__ import annotations

import json
import signal
from typing import Any

from api.host_evidence import HOST_PLANS_ANNOTATION
from services.host_agent.failpoints import Failpoint
from tests.services.host_agent.world import AgentWorld

KILLED = -signal.SIGKILL


def _phase(*phases: str) -> Any:
    return lambda status: status.get("phase") in phases


def _crash(world: AgentWorld, point: Failpoint) -> None:
    agent = world.start(failpoint=point.value)
    assert agent.wait(timeout=60) == KILLED, world.log_text()
    world.processes.clear()


def test_a_reboot_killed_before_systemd_was_asked_is_uncertain_and_never_run(world: AgentWorld) -> None:
    world.request("reboot", "reboot")
    _crash(world, Failpoint.JOURNAL_WRITTEN)
    assert world.operation("reboot")["status"]["reason"] == "Rebooting"
    agent = world.start()
    status = world.wait_for("reboot", _phase("Failed"), process=agent)["status"]
    assert status["reason"] == "OutcomeUncertain" and "not repeated" in status["message"]
    assert world.commands() == []


def test_a_reboot_killed_after_systemd_was_asked_is_uncertain_in_the_same_boot_and_not_asked_again(
    world: AgentWorld,
) -> None:
    world.request("reboot", "reboot")
    _crash(world, Failpoint.ACTION_DONE)
    assert world.commands() == ["systemctl reboot"]
    agent = world.start()
    status = world.wait_for("reboot", _phase("Failed"), process=agent)["status"]
    assert status["reason"] == "OutcomeUncertain"
    assert world.commands() == ["systemctl reboot"]


def test_a_reboot_killed_after_systemd_was_asked_completes_once_the_host_has_rebooted(world: AgentWorld) -> None:
    world.request("reboot", "reboot")
    _crash(world, Failpoint.ACTION_DONE)
    world.host.boot("boot-after-the-crash")
    agent = world.start()
    status = world.wait_for("reboot", _phase("Succeeded"), process=agent)["status"]
    assert status["reason"] == "Completed"
    assert world.commands() == ["systemctl reboot"]


def _clear_cache(world: AgentWorld) -> None:
    world.publish_evidence()
    plans = json.loads(world.node_now()["metadata"]["annotations"][HOST_PLANS_ANNOTATION])
    world.request("clear-cache", "clear-model-cache", planId=plans["modelCache"]["planId"])


def test_clearing_the_cache_killed_before_it_began_is_uncertain_and_leaves_the_cache(world: AgentWorld) -> None:
    _clear_cache(world)
    _crash(world, Failpoint.JOURNAL_WRITTEN)
    agent = world.start()
    status = world.wait_for("clear-cache", _phase("Failed", "Succeeded"), process=agent)["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "OutcomeUncertain")
    assert any(world.host.cache("ollama").iterdir())


def test_clearing_the_cache_killed_after_it_ended_is_reported_completed(world: AgentWorld) -> None:
    _clear_cache(world)
    _crash(world, Failpoint.ACTION_DONE)
    assert not any(world.host.cache("ollama").iterdir())
    agent = world.start()
    status = world.wait_for("clear-cache", _phase("Failed", "Succeeded"), process=agent)["status"]
    assert (status["phase"], status["reason"]) == ("Succeeded", "Completed")
