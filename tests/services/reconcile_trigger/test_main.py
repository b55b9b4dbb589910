"""`magicstick-reconcile-trigger` as a process: its flags, its exits, one change end to end, its probes."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
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
    assert lines == [
        "magicstick-reconcile-trigger: --quiet-ms: 'soon' is not a whole number of milliseconds from 1 to 3600000"
    ]


def test_unusable_cluster_access_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent.yaml"))
    monkeypatch.setenv("HOME", str(tmp_path))

    assert main([]) == EXIT_BAD_INPUT

    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("magicstick-reconcile-trigger: cluster access: no kubeconfig")


def a_copied_kubeconfig(cluster: ClusterInfo, tmp_path: Path) -> Path:
    """A copy of its own: the helper rewrites its file on every call."""
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(cluster.kubeconfig_path(ADMIN_USER).read_text())
    return kubeconfig


@contextlib.contextmanager
def trigger_process(
    cluster: ClusterInfo, namespace: str, tmp_path: Path, extra: Sequence[str] = ()
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """The trigger as its real process on `namespace`, its log file; killed at the end if still running."""
    log = tmp_path / "trigger.log"
    environment = {
        **os.environ,
        "KUBECONFIG": str(a_copied_kubeconfig(cluster, tmp_path)),
        "MAGICSTICK_RECONCILE_TRIGGER_QUIET_MS": "50",
    }
    flags = [
        "--stack-namespace",
        namespace,
        "--system-namespace",
        namespace,
        "--target-namespaces",
        namespace,
        "--max-delay-ms",
        "200",
        *extra,
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.reconcile_trigger.main", *flags],
            cwd=REPO_ROOT,
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process, log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=STOP_SECONDS)


def test_the_process_requests_a_run_at_start_and_on_a_change_and_stops_on_sigterm(
    trigger_cluster: ClusterInfo, admin: KubeClient, namespace: str, stack: StackRef, tmp_path: Path
):
    with trigger_process(trigger_cluster, namespace, tmp_path, ["--probe-address", "127.0.0.1:0"]) as (process, log):
        started = stack_request_after(admin, stack)
        admin.apply(MODEL_ACTIVATION, model_activation(namespace, "qwen"), field_manager=LOADER)
        stack_request_after(admin, stack, started)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=STOP_SECONDS) == EXIT_OK, log.read_text()
    text = log.read_text()
    assert "requested a run of Stack" in text and "ModelActivation" in text, text


def a_free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_process_serves_readyz_once_every_watch_listed_and_healthz(
    trigger_cluster: ClusterInfo, admin: KubeClient, namespace: str, stack: StackRef, tmp_path: Path
):
    port = a_free_port()
    with trigger_process(trigger_cluster, namespace, tmp_path, ["--probe-address", f"127.0.0.1:{port}"]) as (
        process,
        log,
    ):
        stack_request_after(admin, stack)  # made once every watch listed
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz")
        healthy = httpx.get(f"http://127.0.0.1:{port}/healthz")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=STOP_SECONDS) == EXIT_OK, log.read_text()

    assert (ready.status_code, ready.text) == (200, "ok\n")
    assert (healthy.status_code, healthy.text) == (200, "ok\n")
    assert f"serving /healthz and /readyz on 127.0.0.1:{port}" in log.read_text()


def test_a_probe_address_that_cannot_be_bound_exits_2_with_one_line_naming_the_flag(
    trigger_cluster: ClusterInfo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv("KUBECONFIG", str(a_copied_kubeconfig(trigger_cluster, tmp_path)))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        assert main(["--probe-address", f"127.0.0.1:{port}"]) == EXIT_BAD_INPUT

    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"magicstick-reconcile-trigger: --probe-address: cannot listen on 127.0.0.1:{port}: ")
