"""CI preview as deploy/ci-preview.yaml runs it, against the test API server with a stack that a
previous `pulumi up` converged: `magicstick snapshot`, two `magicstick render`s and
`magicstick diff`, beside the real `pulumi preview --diff`; then the `pulumi up` that follows.

The edits are a user's: a ModelActivation asks for more memory, an AppInstance is no longer
public, a ModuleActivation is disabled. The renders compare the cluster before and after them
(the workflow compares two branches on one snapshot; one codebase here, so the change comes
from the cluster), with the workflow's fixed clock.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest

from providers.kinds import APPLIANCE_KINDS
from providers.kube import KubeClient
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.e2e.engine import PulumiProject, Run
from tests.e2e.lifecycle import CHANGING_OPS, STATUS_TYPE, changes, converge, render_paths, resource_type
from tests.e2e.world import load_demo
from tests.live.ollama_double import OllamaDouble
from tests.toolchain import REPO_ROOT

NOW: Final = "2026-01-01T12:00:00Z"
"""The workflow's clock (deploy/ci-preview.yaml, env NOW)."""
MAGICSTICK: Final = REPO_ROOT / "venv" / "bin" / "magicstick"


def magicstick(
    *args: str, kubeconfig: Path | None = None, ok: tuple[int, ...] = (0,)
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"KUBECONFIG": str(kubeconfig)} if kubeconfig else {})}
    done = subprocess.run(
        [str(MAGICSTICK), *args], env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
    )
    assert done.returncode in ok, f"magicstick {' '.join(args)} exited with {done.returncode}:\n{done.stderr[-3000:]}"
    return done


def edit(kube: KubeClient) -> None:
    """The user's three edits, each a merge of the spec field it changes."""
    kinds = {kind.kind: kind for kind in APPLIANCE_KINDS.values()}

    def patch(kind: str, name: str, spec: dict[str, Any]) -> None:
        current = kube.get(kinds[kind], name, "ai-system")
        body = {
            "apiVersion": current["apiVersion"],
            "kind": kind,
            "metadata": {"name": name, "namespace": "ai-system"},
            "spec": spec,
        }
        kube.apply(kinds[kind], body, field_manager="user-edit")

    patch(
        "ModelActivation",
        "qwen2505bcpu",
        {"type": "local", "local": {"preset": "qwen2505bcpu", "memoryRequiredMi": 6144}},
    )
    patch(
        "AppInstance",
        "openclaw-default",
        {"application": "openclaw", "access": {"authentication": "sso", "role": "user", "exposure": "local"}},
    )
    patch("ModuleActivation", "dashboard", {"module": "dashboard", "enabled": False})


def diff_paths(text: str) -> set[str]:
    """The files `magicstick diff` names as added, removed or changed."""
    paths = set()
    for line in text.splitlines():
        verb, _, path = line.partition(": ")
        if verb in ("added", "removed", "changed") and path:
            paths.add(path)
    return paths


def preview_steps(run: Run) -> list[dict[str, Any]]:
    return [step for step in run.json().get("steps", []) if step.get("op") in CHANGING_OPS]


@pytest.fixture(scope="module")
def world(
    project: PulumiProject,
    kube: KubeClient,
    demo: list[dict],
    ollama: OllamaDouble,
    engine_cluster: ClusterInfo,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """The demo converged, captured, edited and captured again, rendered and diffed, previewed, then updated."""
    project.pulumi("up", "--yes", "--skip-preview")
    load_demo(kube, demo)
    converge(project, kube, ollama)
    scratch = tmp_path_factory.mktemp("ci-preview")
    kubeconfig = engine_cluster.kubeconfig_path(ADMIN_USER)
    magicstick("snapshot", "--out", str(scratch / "before.yaml"), kubeconfig=kubeconfig)
    edit(kube)
    magicstick("snapshot", "--out", str(scratch / "after.yaml"), kubeconfig=kubeconfig)
    magicstick(
        "render", "--snapshot", str(scratch / "before.yaml"), "--out", str(scratch / "out" / "live-base"), "--now", NOW
    )
    magicstick(
        "render", "--snapshot", str(scratch / "after.yaml"), "--out", str(scratch / "out" / "live-head"), "--now", NOW
    )
    diff = magicstick("diff", str(scratch / "out" / "live-base"), str(scratch / "out" / "live-head"), ok=(0, 1))
    preview_text = project.pulumi("preview", "--diff")
    preview_json = project.pulumi("preview", "--json")
    update = project.pulumi("up", "--yes", "--skip-preview", events=True)
    head = {
        str(path.relative_to(scratch / "out" / "live-head")): path.read_text()
        for path in (scratch / "out" / "live-head").rglob("*.yaml")
    }
    return {"diff": diff.stdout, "head": head, "preview_text": preview_text, "preview": preview_json, "update": update}


def test_the_preview_lists_exactly_the_operations_the_following_up_performs(world: dict[str, Any]):
    previewed = {step["urn"]: step["op"] for step in preview_steps(world["preview"])}
    assert previewed, "the edits change something"
    assert previewed == changes(world["update"])


def test_magicstick_diff_and_pulumi_preview_agree_on_which_objects_change_but_a_spec_that_belongs_to_its_user(
    world: dict[str, Any],
):
    """A seeded ModuleActivation's spec is its user's once created: the program declares it as
    it finds it, with `ignore_changes` on spec, so the engine leaves it alone while the two renders,
    made from the cluster before and after the user's edit, differ."""
    previewed = {path for step in preview_steps(world["preview"]) for path in render_paths(step)}
    rendered = diff_paths(world["diff"])
    assert previewed <= rendered
    assert rendered - previewed == {"resources/moduleactivation.ai-system.dashboard.yaml"}
    assert (
        "appliance.magicstick.dev/seeded: 'true'"
        in world["head"]["resources/moduleactivation.ai-system.dashboard.yaml"]
    )


def test_the_preview_diff_text_names_each_changed_resource(world: dict[str, Any]):
    text = world["preview_text"].stdout
    for step in preview_steps(world["preview"]):
        assert step["urn"].split("::")[-1] in text, step["urn"]


def test_the_preview_diff_text_marks_each_object_whose_status_changes_and_no_other(world: dict[str, Any]):
    """Statuses are written in batches (components/status.py); `pulumi preview --diff` prints a
    changed batch's members by their keys, `<namespace>/<name>`, and marks with `~` those
    whose status changes, as the README says to read it."""
    text = world["preview_text"].stdout
    changed, unchanged = [], []
    for step in preview_steps(world["preview"]):
        if resource_type(step["urn"]) != STATUS_TYPE or step["op"] != "update":
            continue
        before = step["oldState"]["inputs"]["members"]
        for key, member in step["newState"]["inputs"]["members"].items():
            (unchanged if before.get(key) == member else changed).append(key)
    assert changed and unchanged, "the edits change some statuses of a batch and leave others"
    for key in changed:
        assert re.search(rf"^ +~ {re.escape(key)} *: {{$", text, flags=re.MULTILINE), key
    for key in unchanged:
        assert re.search(rf"^ +{re.escape(key)} *: {{$", text, flags=re.MULTILINE), key
