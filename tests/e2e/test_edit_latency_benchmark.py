"""The edit-latency benchmark runs end to end with one edit: the edit reaches its KubeAI Model
through the real trigger and the real engine, and the splits account for the total. No time is
checked: the figures are the benchmark's to print."""

from __future__ import annotations

import pytest

from benchmarks.edit_latency import ENGINE_PARTS, SPLITS, measure, report

pytestmark = pytest.mark.e2e

EPSILON = 1e-9
"""Floating-point slack for sums of differences of time.monotonic() readings."""


def test_one_edit_reaches_its_model_and_the_splits_add_up_to_at_most_the_total() -> None:
    result = measure(edits=1)

    (edit,) = result.edits
    assert edit.activation.startswith("model-") and edit.value > 0
    assert edit.edited_at <= edit.requested_at <= edit.launched_at
    assert edit.applied_at > edit.edited_at, "the Model showed the edit only after it was written"
    assert edit.program_started_at is not None and edit.declared_at is not None, "the engine's events were read as they came"
    splits = edit.splits()
    assert all(splits[name] >= 0 for name in (*SPLITS, *ENGINE_PARTS)), splits
    assert sum(splits[name] for name in SPLITS) <= edit.total + EPSILON
    assert splits["engine start"] + splits["engine apply"] <= splits["engine"] + EPSILON
    assert sum(edit.requests.values()) > 0
    assert result.converge_seconds and result.resources > 0
    text = report(result)
    assert "goal 1 (edit -> applied p95 <= 10 s over 20 edits): " in text and "only 1 edits were measured" in text
