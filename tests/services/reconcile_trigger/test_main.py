"""`magicstick-reconcile-trigger` as a process: its flags, its exits, one change end to end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from providers.kinds import MODEL_ACTIVATION
from providers.kube import KubeClient
from services.reconcile_trigger.main import EXIT_BAD_INPUT, EXIT_OK, main
from services.reconcile_trigger.stack import StackRef
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.services.reconcile_trigger.world import LOADER, model_activation, stack_request_after
from tests.support.vendored import REPOSITORY_ROOT as REPO_ROOT

STOP_SECONDS = 10.0


def test_an_invalid_flag_exits_2_with_one_line_naming_the_flag(capsys: pytest.CaptureFixture[str]):
    assert main(["--quiet-ms", "soon"]) == EXIT_BAD_INPUT

    lines = capsys.readouterr().err.splitlines()
    assert lines == ["magicstick-reconcile-trigger: --quiet-ms: 'soon' is not a whole number of milliseconds from 1 to 3600000"]


def test_unusable_cluster_access_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent.yaml"))
    monkeypatch.setenv("HOME", str(tmp_path))

    assert main([]) == EXIT_BAD_INPUT

    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("magicstick-reconcile-trigger: cluster access: no kubeconfig")


def test_the_process_requests_a_run_at_start_and_on_a_change_and_stops_on_sigterm(
    trigger_cluster: ClusterInfo, admin: KubeClient, namespace: str, stack: StackRef, tmp_path: Path
):
    log = tmp_path / "trigger.log"
    kubeconfig = tmp_path / "kubeconfig.yaml"  # a copy of its own: the helper rewrites its file on every call
    kubeconfig.write_text(trigger_cluster.kubeconfig_path(ADMIN_USER).read_text())
    environment = {**os.environ, "KUBECONFIG": str(kubeconfig), "MAGICSTICK_RECONCILE_TRIGGER_QUIET_MS": "50"}
    flags = ["--stack-namespace", namespace, "--system-namespace", namespace, "--target-namespaces", namespace, "--max-delay-ms", "200"]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.reconcile_trigger.main", *flags], cwd=REPO_ROOT, env=environment, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        started = stack_request_after(admin, stack)
        admin.apply(MODEL_ACTIVATION, model_activation(namespace, "qwen"), field_manager=LOADER)
        stack_request_after(admin, stack, started)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=STOP_SECONDS) == EXIT_OK, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=STOP_SECONDS)
    text = log.read_text()
    assert "requested a run of Stack" in text and "ModelActivation" in text, text
