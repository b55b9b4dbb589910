"""The edit-latency benchmark runs end to end with one edit: the edit reaches its KubeAI Model
through the real trigger and the real engine, and the splits account for the total. No time is
checked: the figures are the benchmark's to print."""

from __future__ import annotations

from benchmarks.edit_latency import PARTS, SPLITS, measure, report

EPSILON = 1e-9
"""Floating-point slack for sums of differences of time.monotonic() readings."""


def test_one_edit_reaches_its_model_and_the_splits_add_up_to_at_most_the_total(own_engine: None) -> None:
    result = measure(edits=1)

    (edit,) = result.edits
    assert edit.activation.startswith("model-") and edit.value > 0
    assert edit.edited_at <= edit.requested_at <= edit.launched_at
    assert edit.applied_at > edit.edited_at, "the Model showed the edit only after it was written"
    markers = (edit.program_started_at, edit.declared_at, edit.registered_at, edit.model_step_at)
    assert None not in markers, f"the engine's events were read as they came: {markers}"
    splits = edit.splits()
    parts = [part for pair in PARTS.values() for part in pair]
    assert all(splits[name] >= 0 for name in (*SPLITS, *parts)), splits
    assert sum(splits[name] for name in SPLITS) <= edit.total + EPSILON
    for whole, (first, second) in PARTS.items():
        assert splits[first] + splits[second] <= splits[whole] + EPSILON
    assert sum(edit.requests.values()) > 0
    assert result.converge_seconds and result.resources > 0
    text = report(result)
    assert "goal 1 (edit -> applied p95 <= 10 s over 20 edits): " in text and "only 1 edits were measured" in text
