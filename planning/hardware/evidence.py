"""Host evidence: the one sanitized Node annotation the host evidence timer publishes.

The annotation's format and fingerprint rule are api/host_evidence.py's, shared with the host
agent that writes it.

Evidence is current only when it parses, its fingerprint matches its content, its node UID is
the Node's, its boot ID and kernel are the Node's as the kubelet reports them now, and it is no
older than EVIDENCE_MAX_AGE (nor written more than EVIDENCE_CLOCK_SKEW in the future). Anything
else is reported with its state and never used: a foreign annotation (another Node's, copied
with a node object) or a stale one (written before a reboot or a kernel change, or by a timer
that stopped) says nothing about this host as it is now.

Age alone turns current evidence stale (after EVIDENCE_MAX_AGE) and evidence from the near
future current (once within EVIDENCE_CLOCK_SKEW); `evidence_deadline` says when
(planning.deadlines), from observedAt, so it moves only when the host writes again.

The annotation is runtime-owned: the host writes it, the program only reads it, and public
manifests never seed it. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final

from api.host_evidence import EVIDENCE_FIELDS as _FIELDS
from api.host_evidence import HOST_EVIDENCE_ANNOTATION, MAX_EVIDENCE_CHARS, fingerprint_of
from planning.deadlines import Deadline, whole_second_after, whole_second_from
from planning.snapshot import Node

EVIDENCE_MAX_AGE: Final = timedelta(minutes=30)
"""The timer writes every few minutes; evidence older than this is stale."""
EVIDENCE_CLOCK_SKEW: Final = timedelta(minutes=5)


class EvidenceState(StrEnum):
    """What the host evidence of one node is worth this run."""

    CURRENT = "Current"
    MISSING = "Missing"
    MALFORMED = "Malformed"
    """Not JSON, a field missing or of the wrong type, or a fingerprint that does not match."""
    FOREIGN = "Foreign"
    """Written for another Node (UID differs)."""
    STALE = "Stale"
    """Another boot, another kernel, or too old (or from the future)."""


@dataclass(frozen=True)
class HostEvidence:
    """The parsed annotation; `state` says whether it may be used."""

    state: EvidenceState
    message: str
    node_uid: str = ""
    boot_id: str = ""
    kernel: str = ""
    architecture: str = ""
    driver_ready: bool = False
    pci_devices: tuple[str, ...] = ()
    observed_at: str = ""
    fingerprint: str = ""

    @property
    def current(self) -> bool:
        return self.state is EvidenceState.CURRENT


def _timestamp(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _typed(raw: dict[str, Any]) -> str | None:
    """Why `raw` is not an evidence document of this version, or None. Pure."""
    missing = [key for key in _FIELDS if key not in raw]
    if missing:
        return f"misses {', '.join(missing)}"
    strings = [key for key in _FIELDS if key not in ("driverReady", "pciDevices") and not isinstance(raw[key], str)]
    if strings:
        return f"{', '.join(strings)} must be strings"
    if not isinstance(raw["driverReady"], bool):
        return "driverReady must be true or false"
    if not isinstance(raw["pciDevices"], list) or not all(isinstance(d, str) for d in raw["pciDevices"]):
        return "pciDevices must be a list of vendor:device strings"
    if raw["fingerprint"] != fingerprint_of(raw):
        return "its fingerprint does not match its content"
    if _timestamp(raw["observedAt"]) is None:
        return f"observedAt {raw['observedAt']!r} is not an RFC 3339 time with a zone"
    return None


def read_evidence(node: Node, now: datetime) -> HostEvidence:
    """The host evidence of `node` and whether it is current at `now`. Pure."""
    raw_text = node.meta.annotations.get(HOST_EVIDENCE_ANNOTATION)
    name = node.meta.name
    if not raw_text:
        return HostEvidence(EvidenceState.MISSING, f"node {name} has no host evidence ({HOST_EVIDENCE_ANNOTATION})")
    if len(raw_text) > MAX_EVIDENCE_CHARS:
        return HostEvidence(
            EvidenceState.MALFORMED, f"host evidence of node {name} exceeds {MAX_EVIDENCE_CHARS} characters"
        )
    try:
        raw = json.loads(raw_text)
    except json.JSONDecodeError as error:
        return HostEvidence(EvidenceState.MALFORMED, f"host evidence of node {name} is not JSON ({error.msg})")
    if not isinstance(raw, dict):
        return HostEvidence(EvidenceState.MALFORMED, f"host evidence of node {name} is not a JSON object")
    problem = _typed(raw)
    if problem is not None:
        return HostEvidence(EvidenceState.MALFORMED, f"host evidence of node {name} {problem}")
    state, message = _judge(raw, node, now)
    return HostEvidence(
        state=state,
        message=message,
        node_uid=raw["nodeUID"],
        boot_id=raw["bootID"],
        kernel=raw["kernel"],
        architecture=raw["architecture"],
        driver_ready=raw["driverReady"],
        pci_devices=tuple(sorted(d.lower() for d in raw["pciDevices"])),
        observed_at=raw["observedAt"],
        fingerprint=raw["fingerprint"],
    )


def _judge(raw: dict[str, Any], node: Node, now: datetime) -> tuple[EvidenceState, str]:
    name = node.meta.name
    if raw["nodeUID"] != node.meta.uid:
        return (
            EvidenceState.FOREIGN,
            f"host evidence on node {name} was written for node UID {raw['nodeUID']}, not {node.meta.uid}",
        )
    boot = node.node_info.get("bootID")
    if raw["bootID"] != boot:
        return (
            EvidenceState.STALE,
            f"host evidence of node {name} is from boot {raw['bootID']}; the node now runs boot {boot}",
        )
    kernel = node.node_info.get("kernelVersion")
    if raw["kernel"] != kernel:
        return (
            EvidenceState.STALE,
            f"host evidence of node {name} is from kernel {raw['kernel']}; the node now runs {kernel}",
        )
    observed = _timestamp(raw["observedAt"])
    assert observed is not None
    if observed - now > EVIDENCE_CLOCK_SKEW:
        return EvidenceState.STALE, f"host evidence of node {name} is dated {raw['observedAt']}, in the future"
    if now - observed > EVIDENCE_MAX_AGE:
        minutes = int(EVIDENCE_MAX_AGE.total_seconds() // 60)
        return (
            EvidenceState.STALE,
            f"host evidence of node {name} was written at {raw['observedAt']}, more than {minutes} minutes ago",
        )
    return EvidenceState.CURRENT, f"host evidence of node {name} is current"


def evidence_deadline(node: Node, now: datetime) -> Deadline | None:
    """When the host evidence of `node` changes state with time alone, if it will. Pure.

    Current evidence turns stale the first second after observedAt + EVIDENCE_MAX_AGE;
    evidence dated too far ahead becomes current once observedAt - EVIDENCE_CLOCK_SKEW is
    reached, if nothing else keeps it stale. Evaluated again at that moment to be sure.
    """
    evidence = read_evidence(node, now)
    observed = _timestamp(evidence.observed_at) if evidence.observed_at else None
    if observed is None:
        return None
    if evidence.state is EvidenceState.CURRENT:
        moment, change = whole_second_after(observed + EVIDENCE_MAX_AGE), "turns stale"
    elif evidence.state is EvidenceState.STALE and observed - now > EVIDENCE_CLOCK_SKEW:
        moment, change = whole_second_from(observed - EVIDENCE_CLOCK_SKEW), "becomes current"
    else:
        return None
    if read_evidence(node, moment).state is evidence.state:
        return None
    return Deadline(at=moment, reason=f"Node {node.meta.name}: host evidence {change}")
