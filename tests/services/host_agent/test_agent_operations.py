"""The agent from its console script, against the test API server, on a fake Strix Halo host:
its evidence, and its HostOperations as an administrator requests them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from api.host_evidence import GPU_ALLOCATION_MODE_ANNOTATION, HOST_EVIDENCE_ANNOTATION, PHYSICAL_MEMORY_ANNOTATION
from planning.hardware.evidence import EvidenceState, read_evidence
from planning.snapshot import Snapshot
from providers.kinds import NODE
from providers.kube import Invalid
from tests.services.host_agent.world import AgentWorld


def _phase(*phases: str) -> Any:
    return lambda status: status.get("phase") in phases


def test_the_evidence_command_publishes_what_the_program_finds_current(world: AgentWorld) -> None:
    done = world.publish_evidence()
    assert done.returncode == 0, done.stderr
    node = world.node_now()
    annotations = node["metadata"]["annotations"]
    assert annotations[PHYSICAL_MEMORY_ANNOTATION] == "128000"
    assert annotations[GPU_ALLOCATION_MODE_ANNOTATION] == "shared-gtt"
    evidence = read_evidence(Snapshot.from_objects([node]).nodes[0], datetime.now(UTC))
    assert evidence.state is EvidenceState.CURRENT, evidence.message
    assert json.loads(annotations[HOST_EVIDENCE_ANNOTATION])["architecture"] == "gfx1151"


def test_a_reboot_runs_once_and_completes_after_the_next_boot(world: AgentWorld) -> None:
    agent = world.start()
    world.request("reboot-now", "reboot")
    status = world.wait_for("reboot-now", _phase("Running"), process=agent)["status"]
    assert status["reason"] == "Rebooting"
    world.stop()
    assert world.commands() == ["systemctl reboot"]
    world.host.boot("boot-after-reboot")
    world.admin.request(
        "PATCH", NODE.object_path(world.node_name) + "/status",
        body={"status": {"nodeInfo": {"bootID": "boot-after-reboot"}}}, content_type="application/merge-patch+json",
    )  # fmt: skip
    agent = world.start()
    status = world.wait_for("reboot-now", _phase("Succeeded"), process=agent)["status"]
    assert status["reason"] == "Completed" and status["observedGeneration"] == 1
    assert world.commands() == ["systemctl reboot"]


def test_a_request_for_another_boot_is_refused_as_stale(world: AgentWorld) -> None:
    agent = world.start()
    world.request("poweroff-old", "poweroff", bootID="an-earlier-boot")
    status = world.wait_for("poweroff-old", _phase("Failed"), process=agent)["status"]
    assert status["reason"] == "Stale" and "spec.bootID" in status["message"]
    assert world.commands() == []


def test_a_request_for_another_node_is_left_to_that_nodes_agent(world: AgentWorld) -> None:
    agent = world.start()
    world.request("a-foreign-reboot", "reboot", nodeUID="uid-of-another-node")
    world.request("b-own-poweroff", "poweroff", bootID="an-earlier-boot")
    world.wait_for("b-own-poweroff", _phase("Failed"), process=agent)
    assert "status" not in world.operation("a-foreign-reboot")
    assert world.commands() == []


def test_the_api_server_refuses_a_network_ref_name_that_is_not_a_secret_name(world: AgentWorld) -> None:
    with pytest.raises(Invalid) as refused:
        world.request(
            "configure-beyond",
            "configure-network",
            planId="network-plan",
            networkRef={
                "name": "x/../../identity-system/secrets/idp-admin",
                "uid": "0f0e7a52-0000-4000-8000-000000000000",
            },
        )
    assert "spec.networkRef.name" in refused.value.message


def test_the_api_server_refuses_a_request_id_that_could_end_a_comment_line(world: AgentWorld) -> None:
    with pytest.raises(Invalid) as refused:
        world.request("reboot-injected", "reboot", requestID="req-1\ninstall amdgpu /bin/sh -c id")
    assert "spec.requestID" in refused.value.message


def test_a_request_naming_another_node_but_bound_to_this_node_s_uid_is_refused_by_this_node_s_agent_and_not_run(
    world: AgentWorld,
) -> None:
    agent = world.start()
    world.request("reboot-elsewhere", "reboot", nodeName="node-b")
    status = world.wait_for("reboot-elsewhere", _phase("Failed"), process=agent)["status"]
    assert status["reason"] == "Rejected"
    assert (
        "spec.nodeName 'node-b'" in status["message"]
        and "spec.nodeUID" in status["message"]
        and world.node_name in status["message"]
    )
    assert world.commands() == []


# `iw dev wlan0 scan` as iw prints SSID bytes that are not printable ASCII: \xNN.
HOSTILE_SCAN = """BSS 02:00:00:00:00:01(on wlan0)
\tcapability: ESS Privacy (0x0411)
\tsignal: -41.00 dBm
\tSSID: Halo Home
\tRSN:\t * Version: 1
BSS 02:00:00:00:00:02(on wlan0)
\tcapability: ESS (0x0401)
\tsignal: -50.00 dBm
\tSSID: Clear\\x1b[2J\\x07\\x0a\\x00\\xe2\\x80\\xae
"""


def test_scan_wifi_publishes_escaped_ssids_which_the_api_server_keeps_with_their_mark(world: AgentWorld) -> None:
    wlan = world.host.root / "sys/class/net/wlan0"
    (wlan / "wireless").mkdir(parents=True)
    (wlan / "operstate").write_text("dormant\n")
    (world.tools / "iw").write_text(f"#!/bin/sh\ncat <<'SCAN'\n{HOSTILE_SCAN}SCAN\n")
    (world.tools / "iw").chmod(0o755)
    agent = world.start()
    world.request("scan", "scan-wifi")
    status = world.wait_for("scan", _phase("Succeeded", "Failed"), process=agent)["status"]
    assert status["networks"] == [
        {"interface": "wlan0", "ssid": "Halo Home", "ssidEscaped": False, "signalDbm": -41, "security": "wpa2"},
        {
            "interface": "wlan0",
            "ssid": "Clear\\x1b[2J\\x07\\x0a\\x00\\u202e",
            "ssidEscaped": True,
            "signalDbm": -50,
            "security": "open",
        },
    ]
