"""deploy/ci-preview.yaml: the pure tests, the demo's offline render diff beside the preview, pinned actions."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.deploy.manifests import WORKFLOW_FILE, documents

PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_./-]+)?@([0-9a-f]{40}|v\d+\.\d+\.\d+)$")
"""`owner/repo[/path]@<commit SHA>` or `@vX.Y.Z`: an exact release, never a moving major tag or a branch."""
DEMO = "examples/demo/snapshot.yaml"


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    (document,) = documents(WORKFLOW_FILE)
    return document


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job["steps"])


def runs(job: dict[str, Any]) -> list[str]:
    """The shell commands of a job's steps, one entry per line, in order."""
    return [line.strip() for step in steps(job) for line in step.get("run", "").splitlines() if line.strip()]


def first_index(lines: list[str], pattern: str) -> int:
    return next(index for index, line in enumerate(lines) if re.search(pattern, line))


def test_a_job_installs_the_test_extra_and_then_runs_every_test_that_needs_no_cluster(workflow):
    jobs = [job for job in workflow["jobs"].values() if any("pytest" in line for line in runs(job))]

    (job,) = jobs
    lines = runs(job)
    install = first_index(lines, r"pip install (-e )?'?\.\[test\]'?")
    test = first_index(lines, r"pytest -m \"not cluster\"")
    assert install < test
    assert any(step.get("uses", "").startswith("actions/checkout@") for step in steps(job))


def test_the_offline_job_diffs_the_base_branchs_render_of_the_demo_against_the_pull_requests(workflow):
    offline = workflow["jobs"]["offline"]
    checkouts = [step for step in steps(offline) if step.get("uses", "").startswith("actions/checkout@")]
    lines = runs(offline)

    assert {c["with"]["path"] for c in checkouts} == {"head", "base"}
    assert (
        next(c for c in checkouts if c["with"]["path"] == "base")["with"]["ref"]
        == "${{ github.event.pull_request.base.sha }}"
    )
    head_render = first_index(lines, rf"magicstick render --snapshot {re.escape(DEMO)} --out \.\./out/demo-head")
    base_render = first_index(lines, rf"magicstick render --snapshot {re.escape(DEMO)} --out \.\./out/demo-base")
    diff = first_index(lines, r"magicstick diff out/demo-base out/demo-head > report/demo-diff\.txt")
    assert max(head_render, base_render) < diff
    uploads = [step for step in steps(offline) if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert any(
        step["with"]["name"].startswith("magicstick-report-") and step["with"]["path"] == "report" for step in uploads
    )


def test_the_preview_job_runs_pulumi_preview_with_a_diff_into_the_report(workflow):
    lines = runs(workflow["jobs"]["preview"])

    assert any(re.search(r"pulumi preview --diff .*\| tee \.\./report/preview\.txt", line) for line in lines)


def test_one_comment_posts_the_demo_render_diff_next_to_the_preview(workflow):
    comment = workflow["jobs"]["comment"]
    script = next(step for step in steps(comment) if step.get("uses", "").startswith("actions/github-script@"))["with"][
        "script"
    ]
    download = next(step for step in steps(comment) if step.get("uses", "").startswith("actions/download-artifact@"))

    assert set(comment["needs"]) >= {"offline", "preview"}
    assert download["with"]["pattern"] == "magicstick-report-*"
    assert script.index("report/demo-diff.txt") < script.index("report/preview.txt")
    assert comment["permissions"] == {"contents": "read", "pull-requests": "write"}


def test_every_action_is_pinned_to_an_exact_release_or_commit(workflow):
    used = [step["uses"] for job in workflow["jobs"].values() for step in steps(job) if "uses" in step]

    assert used
    assert [action for action in used if not PINNED.fullmatch(action)] == []


def test_no_job_but_the_comment_may_write_to_the_repository(workflow):
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        if name != "comment":
            assert "permissions" not in job, name
