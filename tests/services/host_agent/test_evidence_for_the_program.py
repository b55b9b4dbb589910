"""The agent's evidence, fed to the program's own reader: one format, one fingerprint rule."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from api.host_evidence import HOST_EVIDENCE_ANNOTATION
from planning.hardware.evidence import EvidenceState, read_evidence
from planning.snapshot import Snapshot
from tests.services.host_agent.fake_host import strix_halo
from tests.services.host_agent.stand_ins import NODE_UID, NOW, context


def _node(annotations: dict[str, Any], *, uid: str = NODE_UID, boot: str, kernel: str) -> Any:
    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "halo",
            "uid": uid,
            "annotations": {k: v for k, v in annotations.items() if v is not None},
        },
        "status": {"nodeInfo": {"bootID": boot, "kernelVersion": kernel}},
    }
    return Snapshot.from_objects([obj]).nodes[0]


def test_the_program_finds_the_agents_evidence_current_for_the_same_node_boot_and_kernel(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    view = context(tmp_path).host
    evidence = read_evidence(
        _node(view.annotations(), boot=view.facts.boot_id, kernel=view.facts.kernel), NOW + timedelta(minutes=1)
    )
    assert evidence.state is EvidenceState.CURRENT, evidence.message
    assert (evidence.architecture, evidence.driver_ready, evidence.pci_devices) == ("gfx1151", True, ("1002:1586",))


def test_the_program_finds_the_agents_evidence_stale_after_a_reboot(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    view = context(tmp_path).host
    evidence = read_evidence(_node(view.annotations(), boot="another-boot", kernel=view.facts.kernel), NOW)
    assert evidence.state is EvidenceState.STALE


def test_the_program_finds_the_agents_evidence_foreign_on_another_node(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    view = context(tmp_path).host
    evidence = read_evidence(
        _node(view.annotations(), uid="another-uid", boot=view.facts.boot_id, kernel=view.facts.kernel), NOW
    )
    assert evidence.state is EvidenceState.FOREIGN


def test_an_edited_evidence_annotation_no_longer_matches_its_fingerprint(tmp_path: Path) -> None:
    strix_halo(tmp_path)
    view = context(tmp_path).host
    annotations = view.annotations()
    annotations[HOST_EVIDENCE_ANNOTATION] = str(annotations[HOST_EVIDENCE_ANNOTATION]).replace("gfx1151", "gfx1100")
    evidence = read_evidence(_node(annotations, boot=view.facts.boot_id, kernel=view.facts.kernel), NOW)
    assert evidence.state is EvidenceState.MALFORMED and "fingerprint" in evidence.message
