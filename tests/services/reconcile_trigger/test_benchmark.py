"""The reconcile trigger benchmark runs end to end with tiny counts (its figures are not checked)."""

from __future__ import annotations

from benchmarks import reconcile_trigger
from benchmarks.reconcile_trigger import ChurnScenario
from tests.cluster.apiserver import ClusterInfo


def test_the_benchmark_reports_latency_percentiles_requests_per_burst_and_runs_under_churn(
    trigger_cluster: ClusterInfo, namespace: str
):
    lines: list[str] = []

    reconcile_trigger.run(
        trigger_cluster,
        namespace=namespace,
        singles_count=3,
        burst_count=20,
        burst_seconds=0.5,
        quiet_ms=50,
        max_delay_ms=200,
        scenario=ChurnScenario(scale=100, minutes=5),
        out=lines.append,
    )

    output = "\n".join(lines)
    assert "3 single changes" in output and "p50" in output and "p95" in output and "max" in output
    assert "burst: 20 changes" in output and "requests" in output
    assert "churn, at time scale 1/100" in output and "resync 3 s" in output
    assert "runs (goal <= 10)" in output and "the edit's request came" in output
