"""End to end with the program: the Strix Halo example rendered by the real program, its Node
as the agent left it on the test API server. With the agent's evidence the node is eligible;
without it, it is not: the evidence is what makes the difference."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from api.host_evidence import AMD_GPU_ELIGIBLE_LABEL, HOST_EVIDENCE_ANNOTATION
from providers.kube import KubeClient
from tests.cluster.apiserver import ClusterInfo
from tests.services.host_agent.world import REPO_ROOT, new_world

EXAMPLE = REPO_ROOT / "examples" / "strix-halo" / "snapshot.yaml"


def _example() -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(EXAMPLE.read_text()) if document]


def _render(objects: list[dict[str, Any]], workdir: Path, now: datetime) -> dict[str, Any] | None:
    workdir.mkdir(parents=True)
    snapshot = workdir / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(objects))
    out = workdir / "out"
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "render", "-f", str(snapshot), "-o", str(out), "--now", now.strftime("%Y-%m-%dT%H:%M:%SZ")],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    node = out / "resources" / "node.halo-1.yaml"
    return yaml.safe_load(node.read_text()) if node.exists() else None


def test_the_agents_evidence_makes_the_strix_halo_example_eligible_in_a_real_render(
    host_agent_installed: ClusterInfo, admin: KubeClient, tmp_path: Path
) -> None:
    objects = _example()
    example_node = next(obj for obj in objects if obj["kind"] == "Node")
    worlds = new_world(
        host_agent_installed,
        admin,
        tmp_path,
        name="halo-1",
        labels=example_node["metadata"]["labels"],
        resources=example_node["status"]["allocatable"],
    )
    world = next(worlds)
    try:
        done = world.publish_evidence()
        assert done.returncode == 0, done.stderr
        live = world.node_now()
    finally:
        worlds.close()
    live["metadata"].pop("managedFields", None)
    with_evidence = [live if obj["kind"] == "Node" else obj for obj in objects]
    rendered = _render(with_evidence, tmp_path / "with", datetime.now(UTC))
    assert rendered is not None and rendered["metadata"]["labels"][AMD_GPU_ELIGIBLE_LABEL] == "true"

    live["metadata"]["annotations"].pop(HOST_EVIDENCE_ANNOTATION)
    without = _render(
        [live if obj["kind"] == "Node" else obj for obj in objects], tmp_path / "without", datetime.now(UTC)
    )
    assert without is None or AMD_GPU_ELIGIBLE_LABEL not in (without["metadata"].get("labels") or {})
