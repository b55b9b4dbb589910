"""In-process stand-ins for the fast layer: a cluster that records what the agent writes, and a
context builder. The console-script tests (test_agent_*.py) run the agent against the real test
API server; these only exercise the agent's own decisions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from services.host_agent.actions.base import ActionContext
from services.host_agent.cluster import AgentCluster
from services.host_agent.commands import CommandResult, CommandRunner
from services.host_agent.evidence import view_host
from services.host_agent.facts import read_host_facts
from services.host_agent.netplan import netplan_hashes
from services.host_agent.settings import AgentSettings, Command

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
NODE_UID = "0d9e8f7a-1b2c-4d3e-8f4a-5b6c7d8e9f0a"


@dataclass
class RecordingCluster:
    node_name: str = "halo"
    namespace: str = "ai-system"
    statuses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    annotations: list[dict[str, str | None]] = field(default_factory=list)
    network_namespace: str = "magicstick-host-network"
    node_object: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, dict[str, Any]] = field(default_factory=dict)
    refusals: dict[str, Exception] = field(default_factory=dict)
    """A method's name -> the error it raises instead of answering (as the API server refuses it)."""
    secret_reads: list[str] = field(default_factory=list)

    def _refused(self, method: str) -> None:
        if method in self.refusals:
            raise self.refusals[method]

    def node(self) -> dict[str, Any]:
        self._refused("node")
        return self.node_object or {"metadata": {"name": self.node_name, "uid": NODE_UID}}

    def annotate_node(self, annotations: dict[str, str | None]) -> dict[str, Any]:
        self._refused("annotate_node")
        self.annotations.append(annotations)
        return self.node()

    def write_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        self._refused("write_status")
        self.statuses.append((name, status))
        return {"status": status}

    def secret(self, name: str) -> dict[str, Any] | None:
        self.secret_reads.append(name)
        self._refused("secret")
        return self.secrets.get(name)


@dataclass
class RecordingRunner(CommandRunner):
    calls: list[tuple[str, ...]] = field(default_factory=list)
    returncode: int = 0

    def run(self, argv: Any, *, timeout: float = 0) -> CommandResult:
        self.calls.append(tuple(argv))
        return CommandResult(tuple(argv), self.returncode, "", "" if self.returncode == 0 else "refused by the test")


def context(
    root: Path, *, cluster: RecordingCluster | None = None, runner: CommandRunner | None = None, now: datetime = NOW
) -> ActionContext:
    settings = AgentSettings(command=Command.SERVE, node_name="halo", root=root)
    host = view_host(read_host_facts(root), node_uid=NODE_UID, netplan_files=netplan_hashes(root), now=now)
    return ActionContext(
        settings=settings,
        host=host,
        cluster=cast(AgentCluster, cluster or RecordingCluster()),
        runner=runner or RecordingRunner(),
        now=now,
    )


def operation(
    context: ActionContext,
    action: str,
    *,
    name: str = "op-1",
    uid: str = "op-uid-1",
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A HostOperation object bound to the context's node and boot, as the API server returns it."""
    body: dict[str, Any] = {
        "action": action,
        "nodeName": "halo",
        "nodeUID": context.host.node_uid,
        "bootID": context.host.facts.boot_id,
        "requestID": f"request-{name}",
        "acknowledgeDisruption": True,
    }
    plan = context.host.plans.by_action().get(action)
    if plan is not None:
        body["planId"] = plan
    body.update({key: value for key, value in spec.items() if value is not None})
    obj: dict[str, Any] = {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "HostOperation",
        "metadata": {"name": name, "namespace": "ai-system", "uid": uid, "generation": 1},
        "spec": body,
    }
    if status is not None:
        obj["status"] = status
    return obj
