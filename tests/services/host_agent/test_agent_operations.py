"""The agent from its console script, against the test API server, on a fake Strix Halo host:
its evidence, and its HostOperations as an administrator requests them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from api.host_evidence import GPU_ALLOCATION_MODE_ANNOTATION, HOST_EVIDENCE_ANNOTATION, HOST_PLANS_ANNOTATION, PHYSICAL_MEMORY_ANNOTATION
from planning.hardware.evidence import EvidenceState, read_evidence
from planning.models.plan import clear_cache_pending
from planning.snapshot import Snapshot
from providers.kinds import NODE, POD
from providers.kube import ResourceKind
from tests.services.host_agent.world import NAMESPACE, AgentWorld

SERVICE_ACCOUNT = ResourceKind(group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True)


def _phase(*phases: str) -> Any:
    return lambda status: status.get("phase") in phases


def _plans(world: AgentWorld) -> dict[str, Any]:
    return json.loads(world.node_now()["metadata"]["annotations"][HOST_PLANS_ANNOTATION])


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


def _model_pod(world: AgentWorld) -> dict[str, Any]:
    """A KubeAI model Pod scheduled on the world's node (the namespace's default ServiceAccount
    made first: no controller manager makes it here)."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "ai"}}
    world.admin.apply(SERVICE_ACCOUNT, account, field_manager="kube-controller-manager")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"model-qwen-{world.node_name}", "namespace": "ai", "labels": {"model": "qwen"}},
        "spec": {"nodeName": world.node_name, "containers": [{"name": "server", "image": "registry.example.com/vllm:CHANGEME"}]},
    }
    return world.admin.create(POD, pod, field_manager="kubeai")


def test_clear_model_cache_waits_for_the_node_to_be_idle_and_defers_the_programs_new_runtimes_until_done(world: AgentWorld) -> None:
    agent = world.start()
    pod = _model_pod(world)
    plan = _plans(world)
    world.request("clear-cache", "clear-model-cache", planId=plan["modelCache"]["planId"])
    waiting = world.wait_for("clear-cache", _phase("Pending"), process=agent)
    assert waiting["status"]["reason"] == "WaitingForIdle" and pod["metadata"]["name"] in waiting["status"]["message"]
    assert clear_cache_pending(Snapshot.from_objects([waiting]), NAMESPACE) == world.object_name("clear-cache")
    assert any(world.host.cache("ollama").iterdir())
    world.admin.request(
        "PATCH", POD.object_path(pod["metadata"]["name"], "ai") + "/status",
        body={"status": {"phase": "Succeeded"}}, content_type="application/merge-patch+json",
    )  # fmt: skip
    done = world.wait_for("clear-cache", _phase("Succeeded", "Failed"), process=agent)
    assert done["status"]["phase"] == "Succeeded", done["status"]
    assert not any(world.host.cache("ollama").iterdir())
    assert clear_cache_pending(Snapshot.from_objects([done]), NAMESPACE) is None
