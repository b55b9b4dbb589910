"""The plans this host offers, each with the planId a HostOperation binds. Pure.

A planId is a hash of what the plan was computed from, so a request made against a plan the
host no longer has (another netplan configuration, another memory layout, another GPU) is
refused as PlanChanged instead of acting on what the requester did not see:

- modelCache: the fixed model-cache locations of this node (the request holds no path);
- network: the interface inventory (names, kinds) and the netplan files (names, contents);
- gpuPreparation: the host evidence's fingerprint (node, boot, kernel, GPU, architecture);
- gpuMemory: the memory layout (OS-visible RAM, the firmware carve-out, the GTT pool), the
  firmware carve-out choices the OS can honour, the dynamic-limit steps and the RAM kept for
  the OS.

They are published as one JSON annotation (api.host_evidence.HOST_PLANS_ANNOTATION) on the
agent's own Node, beside the host evidence.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from api.model_cache import MODEL_CACHE_LOCATIONS
from services.host_agent.facts import HostFacts

OS_RAM_ALLOWANCE_MI: Final = 8192
"""RAM the dynamic GPU limit never takes from the OS."""
DYNAMIC_LIMIT_STEP_MI: Final = 1024


@dataclass(frozen=True)
class CarveoutChoice:
    index: int
    vram_mi: int
    current: bool


@dataclass(frozen=True)
class GpuMemoryPlan:
    plan_id: str
    memory_total_mi: int
    carveout_choices: tuple[CarveoutChoice, ...]
    """The firmware carve-outs a request may choose. The firmware's setup screen changes the
    carve-out, not the OS: the agent offers the current one only."""
    dynamic_limit_step_mi: int
    dynamic_limit_maximum_mi: int
    os_ram_allowance_mi: int
    current_gtt_mi: int

    def to_wire(self) -> dict[str, Any]:
        return {
            "planId": self.plan_id,
            "memoryTotalMi": self.memory_total_mi,
            "carveoutChoices": [
                {"index": c.index, "vramMi": c.vram_mi, "current": c.current} for c in self.carveout_choices
            ],
            "dynamicLimit": {
                "stepMi": self.dynamic_limit_step_mi,
                "minimumMi": self.dynamic_limit_step_mi,
                "maximumMi": self.dynamic_limit_maximum_mi,
            },
            "osRamAllowanceMi": self.os_ram_allowance_mi,
            "currentGttMi": self.current_gtt_mi,
        }


@dataclass(frozen=True)
class HostPlans:
    model_cache: str
    network: str
    gpu_preparation: str | None
    gpu_memory: GpuMemoryPlan | None
    interfaces: tuple[dict[str, Any], ...]

    def by_action(self) -> dict[str, str]:
        """The planId per plan-bound HostOperation action this host offers."""
        plans = {"clear-model-cache": self.model_cache, "configure-network": self.network}
        if self.gpu_preparation is not None:
            plans["prepare-gpu"] = self.gpu_preparation
        if self.gpu_memory is not None:
            plans["configure-gpu-memory"] = self.gpu_memory.plan_id
        return plans

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "modelCache": {"planId": self.model_cache, "locations": sorted(MODEL_CACHE_LOCATIONS)},
            "network": {"planId": self.network, "interfaces": list(self.interfaces)},
        }
        if self.gpu_preparation is not None:
            wire["gpuPreparation"] = {"planId": self.gpu_preparation}
        if self.gpu_memory is not None:
            wire["gpuMemory"] = self.gpu_memory.to_wire()
        return wire

    def annotation(self) -> str:
        return json.dumps(self.to_wire(), sort_keys=True, separators=(",", ":"))


def plan_id(kind: str, content: Any) -> str:
    """`<kind>-` and the first 32 hex digits of the SHA-256 of `content`'s canonical JSON. Pure."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}"


def gpu_memory_plan(facts: HostFacts, node_uid: str) -> GpuMemoryPlan | None:
    """The memory plan of an AMD host whose driver reports its memory, else None. Pure."""
    if facts.gpu_memory is None or not facts.amd_gpus or not facts.driver_ready:
        return None
    maximum = (facts.memory_total_mi - OS_RAM_ALLOWANCE_MI) // DYNAMIC_LIMIT_STEP_MI * DYNAMIC_LIMIT_STEP_MI
    if maximum < DYNAMIC_LIMIT_STEP_MI:
        return None
    identity = {
        "nodeUID": node_uid,
        "kernel": facts.kernel,
        "memoryTotalMi": facts.memory_total_mi,
        "vramMi": facts.gpu_memory.vram_mi,
        "gttMi": facts.gpu_memory.gtt_mi,
        "maximumMi": maximum,
    }
    return GpuMemoryPlan(
        plan_id=plan_id("gpu-memory", identity),
        memory_total_mi=facts.memory_total_mi,
        carveout_choices=(CarveoutChoice(index=0, vram_mi=facts.gpu_memory.vram_mi, current=True),),
        dynamic_limit_step_mi=DYNAMIC_LIMIT_STEP_MI,
        dynamic_limit_maximum_mi=maximum,
        os_ram_allowance_mi=OS_RAM_ALLOWANCE_MI,
        current_gtt_mi=facts.gpu_memory.gtt_mi,
    )


def host_plans(
    facts: HostFacts, *, node_uid: str, evidence_fingerprint: str, netplan_files: Mapping[str, str]
) -> HostPlans:
    """Every plan of this host now. `netplan_files`: name -> SHA-256 of the contents. Pure."""
    interfaces = tuple({"name": i.name, "wireless": i.wireless, "operstate": i.operstate} for i in facts.interfaces)
    network_identity = {
        "nodeUID": node_uid,
        "interfaces": [(i.name, i.wireless) for i in facts.interfaces],
        "netplan": dict(sorted(netplan_files.items())),
    }
    return HostPlans(
        model_cache=plan_id("model-cache", {"nodeUID": node_uid, "locations": MODEL_CACHE_LOCATIONS}),
        network=plan_id("network", network_identity),
        gpu_preparation=evidence_fingerprint if facts.amd_gpus else None,
        gpu_memory=gpu_memory_plan(facts, node_uid),
        interfaces=interfaces,
    )
