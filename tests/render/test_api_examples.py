"""Every example object of the API documentation renders, in the demo cluster, without InvalidSpec.

The fixtures are the documented objects exactly as a user writes them; the cluster is the demo
snapshot with an NVIDIA GPU node added, so every compute target the examples name is there.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
import yaml

from api.crdgen import CRD_DIRECTORY
from cli.render import render
from tests.planning.hardware.nodes import node
from tests.support.crd_defaults import with_defaults
from tests.support.crd_schema import CrdSchemaRegistry

REPOSITORY = Path(__file__).resolve().parents[2]
DEMO = REPOSITORY / "examples" / "demo" / "snapshot.yaml"
FIXTURES = REPOSITORY / "tests" / "fixtures" / "api-examples"
NOW = "2026-01-01T12:00:00Z"
OWN_CRDS = CrdSchemaRegistry(CRD_DIRECTORY)


def identity(obj: dict) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def stored(obj: dict) -> dict:
    """`obj` as the API server keeps it: CRD defaults, generation and uid."""
    found = with_defaults(obj, registry=OWN_CRDS)
    found["metadata"] |= {
        "generation": 1,
        "uid": f"00000000-0000-4000-8000-5eed{zlib.crc32(repr(identity(obj)).encode()):08x}",
    }
    return found


def nvidia_node() -> dict:
    return node("worker-gpu-1", "nvidia", allocatable={"nvidia.com/gpu": "1"})


def snapshot_with(example: dict, directory: Path) -> Path:
    """The demo snapshot, with `example` in place of the demo's object of the same identity."""
    documents = [d for d in yaml.safe_load_all(DEMO.read_text()) if d and identity(d) != identity(example)]
    path = directory / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all([*documents, nvidia_node(), stored(example)], sort_keys=False))
    return path


FILES = sorted(path.name for path in FIXTURES.glob("*.yaml"))


def test_every_documented_kind_has_a_fixture():
    kinds = {yaml.safe_load((FIXTURES / name).read_text())["kind"] for name in FILES}
    assert kinds == {"Appliance", "ModuleActivation", "AppInstance", "ModelActivation", "ApplianceSetup"}


@pytest.mark.parametrize("name", FILES)
def test_the_documented_example_renders_without_an_invalid_spec(name, tmp_path):
    example = yaml.safe_load((FIXTURES / name).read_text())
    render(snapshot=snapshot_with(example, tmp_path), out=tmp_path / "out", now=NOW)
    invalid = {}
    for path in sorted((tmp_path / "out" / "status").iterdir()):
        status = yaml.safe_load(path.read_text())["status"]
        if status.get("reason") == "InvalidSpec":
            invalid[path.name] = status.get("message")
    assert invalid == {}


def test_the_preset_only_example_runs_on_the_gpu_its_preset_prefers_and_says_so(tmp_path):
    example = yaml.safe_load((FIXTURES / "modelactivation-qwen3635b.yaml").read_text())
    render(snapshot=snapshot_with(example, tmp_path), out=tmp_path / "out", now=NOW)
    status = yaml.safe_load((tmp_path / "out" / "status" / "modelactivation.ai-system.qwen3635b.yaml").read_text())[
        "status"
    ]
    assert (status["computeTarget"], status["engine"], status["computeTargetChoice"]) == (
        "nvidia-gpu",
        "VLLM",
        "PresetDefault",
    )
    assert "computeTarget nvidia-gpu chosen: the preset's default" in status["message"]
