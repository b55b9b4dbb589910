"""benchmarks/reader.py without the test API server: what it needs, in one line, and a failing exit."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.cli.inputs import REPOSITORY


def test_the_reader_benchmark_without_a_kube_apiserver_says_what_it_needs_and_exits_2(tmp_path):
    environment = {**os.environ, "MAGICSTICK_KUBE_APISERVER": str(tmp_path / "absent" / "kube-apiserver")}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.reader"],
        cwd=REPOSITORY,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(
        "benchmarks.reader: needs the test kube-apiserver and etcd: kube-apiserver not found at "
    )
    assert "scripts/toolchain/build.sh" in done.stderr
    assert len(done.stderr.splitlines()) == 1
