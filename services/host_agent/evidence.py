"""Publish the host evidence and the host plans on the agent's own Node, in one patch.

The evidence document is api/host_evidence.py's, the same module the program checks it with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from api.host_evidence import (
    GPU_ACCESSIBLE_ANNOTATION,
    GPU_ALLOCATION_MODE_ANNOTATION,
    HOST_EVIDENCE_ANNOTATION,
    HOST_PLANS_ANNOTATION,
    PHYSICAL_MEMORY_ANNOTATION,
    evidence_document,
)
from services.host_agent.cluster import AgentCluster
from services.host_agent.facts import HostFacts, read_host_facts
from services.host_agent.netplan import netplan_hashes
from services.host_agent.plans import HostPlans, host_plans
from services.host_agent.settings import AgentSettings


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class HostView:
    """One reading of the host: its facts, its Node's UID, its evidence and its plans."""

    facts: HostFacts
    node_uid: str
    evidence: dict[str, object]
    plans: HostPlans

    def annotations(self) -> dict[str, str | None]:
        """The annotations to set on the Node; None removes one (a memory fact the host lost)."""
        memory = self.facts.gpu_memory
        return {
            HOST_EVIDENCE_ANNOTATION: json.dumps(self.evidence, sort_keys=True, separators=(",", ":")),
            HOST_PLANS_ANNOTATION: self.plans.annotation(),
            PHYSICAL_MEMORY_ANNOTATION: str(self.facts.memory_total_mi) if self.facts.memory_total_mi else None,
            GPU_ACCESSIBLE_ANNOTATION: str(min(memory.gtt_mi, self.facts.memory_total_mi))
            if memory and self.facts.memory_total_mi
            else None,
            GPU_ALLOCATION_MODE_ANNOTATION: allocation_mode(self.facts) if memory else None,
        }


def allocation_mode(facts: HostFacts) -> str:
    """Where the GPU's memory comes from: shared-gtt when the GTT pool (Linux RAM) is at least the
    firmware carve-out, firmware-reserved when the carve-out is the larger, unknown without a report. Pure."""
    memory = facts.gpu_memory
    if memory is None:
        return "unknown"
    return "shared-gtt" if memory.gtt_mi >= memory.vram_mi else "firmware-reserved"


def view_host(facts: HostFacts, *, node_uid: str, netplan_files: dict[str, str], now: datetime) -> HostView:
    """The evidence and plans of `facts` at `now`. Pure."""
    evidence = evidence_document(
        node_uid=node_uid,
        boot_id=facts.boot_id,
        kernel=facts.kernel,
        architecture=facts.architecture,
        driver_ready=facts.driver_ready,
        pci_devices=facts.pci_gpus,
        observed_at=rfc3339(now),
    )
    plans = host_plans(
        facts, node_uid=node_uid, evidence_fingerprint=str(evidence["fingerprint"]), netplan_files=netplan_files
    )
    return HostView(facts=facts, node_uid=node_uid, evidence=evidence, plans=plans)


def read_host(settings: AgentSettings, node_uid: str, now: datetime) -> HostView:
    return view_host(
        read_host_facts(settings.root), node_uid=node_uid, netplan_files=netplan_hashes(settings.root), now=now
    )


def publish(cluster: AgentCluster, settings: AgentSettings, now: datetime) -> HostView:
    """Read the host now and publish its evidence and plans on its Node."""
    node_uid = str(cluster.node()["metadata"]["uid"])
    view = read_host(settings, node_uid, now)
    cluster.annotate_node(view.annotations())
    return view
