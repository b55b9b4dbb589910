"""The pure parts of benchmarks/edit_latency_pko.py: the splits of one edit, the workspace log's
timestamps, and what "met" means. The benchmark itself needs a real node of its own (root, port
53 of the node's address, the test bridge), so it runs by hand, never beside tests/node."""

from __future__ import annotations

from pathlib import Path

from benchmarks.edit_latency_pko import SPLITS, PkoEdit, _selected_times, report
from tests.node.pko import PROGRAM_NAMESPACE, WORKSPACE_POD


class _Node:
    def __init__(self, pod_logs: Path) -> None:
        self.pod_logs = pod_logs


def _edit(total: float, *, applied: bool = True) -> PkoEdit:
    start = 1_000.0
    return PkoEdit(
        value=2,
        edited_at=start,
        requested_at=start + 0.5,
        update_at=start + 0.55,
        selected_at=start + 0.8,
        applied_at=start + total if applied else None,
    )


def test_the_splits_of_an_edit_add_up_to_its_total() -> None:
    edit = _edit(7.0)
    splits = edit.splits()
    assert tuple(splits) == SPLITS
    assert round(sum(splits.values()), 6) == edit.total == 7.0
    assert round(splits["PKO scheduling"], 6) == 0.05


def test_an_edit_never_seen_applied_has_no_splits_and_is_reported_as_lost() -> None:
    lost = _edit(0.0, applied=False)
    assert lost.total is None and lost.splits() == {}
    text = report([_edit(7.0), lost], first_update=90.0, load_before=(0.1, 0.1, 0.1))
    assert "1 edits were not seen through to the Model" in text
    assert "goal 1 (edit -> applied p95 <= 10 s): met" in text


def test_a_p95_over_ten_seconds_is_not_met() -> None:
    text = report([_edit(7.0), _edit(12.0)], first_update=90.0, load_before=(0.1, 0.1, 0.1))
    assert "NOT met" in text


def test_the_agents_selected_a_stack_lines_are_read_with_the_kubelets_timestamps(tmp_path: Path) -> None:
    log = tmp_path / f"{PROGRAM_NAMESPACE}_{WORKSPACE_POD}_0123" / "pulumi" / "0.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        '2026-12-04T19:00:00.250000000Z stderr F {"level":"info","msg":"selected a stack","name":"organization/appliance"}\n'
        '2026-12-04T19:00:01.000000000Z stderr F {"level":"info","msg":"up completed"}\n'
        "2026-12-04T19:00:02.500000000Z stderr F selected a stack\n"
    )
    assert _selected_times(_Node(tmp_path)) == [1796410800.25, 1796410802.5]  # type: ignore[arg-type]
