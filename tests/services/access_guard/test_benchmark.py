"""The access guard benchmark runs end to end on a tiny load (its timings are not checked)."""

from __future__ import annotations

import pytest

from benchmarks import access_guard


def test_the_benchmark_reports_rate_and_latency_of_allow_decisions(capsys: pytest.CaptureFixture[str]) -> None:
    access_guard.main(["--requests", "50", "--rate", "500", "--clients", "2"])
    output = capsys.readouterr().out
    assert "allow decisions" in output and "(200: 50)" in output
    assert "p50" in output and "p99" in output and "dominates" in output
