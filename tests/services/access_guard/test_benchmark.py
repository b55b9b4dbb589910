"""The access guard benchmark runs end to end on a tiny load, and prints every figure it promises
(the figures themselves are not checked: they depend on the machine)."""

from __future__ import annotations

import re

import pytest

from benchmarks import access_guard

NUMBER = r"[0-9.]+"


def test_the_benchmark_reports_latency_decision_parts_and_both_attacks(capsys: pytest.CaptureFixture[str]) -> None:
    access_guard.main(
        ["--requests", "50", "--rates", "500", "--connections", "2", "--idle-connections", "1100", "--burst", "1100"]
    )
    output = capsys.readouterr().out
    for label in ("allow, 2 conns, 500/s", "allow, a new token each, 2 conns, 500/s", "healthz, 2 conns, 500/s"):
        row = re.search(
            rf"^{re.escape(label)} +50 in .* p50 +{NUMBER} +p99 +{NUMBER} +max +{NUMBER} ms .*guard CPU .*\(200: 50\)$",
            output,
            re.MULTILINE,
        )
        assert row, (label, output)
    assert re.search(
        rf"signature verification {NUMBER} µs, verified-token cache hit {NUMBER} µs, grant lookup \(stat \+ cache\) {NUMBER} µs",
        output,
    )
    assert re.search(r"p50 split: .* dominates", output)
    assert re.search(
        rf"1100 idle connections: opened in {NUMBER} s \(the last one answered 503\); guard holds \d+ files; peak RSS {NUMBER} MiB",
        output,
    )
    assert re.search(
        rf"closed at once in \d+ ms; then a check on the pooled connection 200 in {NUMBER} ms, on a fresh one 200 in {NUMBER} ms",
        output,
    )
    assert re.search(
        r"burst of 1100 checks: all answered in [0-9.]+ s \(200: \d+, 503: \d+; closed unanswered 0, unfinished 0\)",
        output,
    )
