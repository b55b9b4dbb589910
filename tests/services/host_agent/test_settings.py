"""The agent's command line: a command first, flags with environment fallbacks, one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from services.flags import ServiceFlagError
from services.host_agent.settings import Command, parse_settings
from tests.services.host_agent.fake_host import cpu_only

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_serve_takes_its_defaults_from_a_node() -> None:
    settings = parse_settings(["serve", "--node-name", "halo"], {})
    assert settings.command is Command.SERVE
    assert (str(settings.root), settings.kubeconfig, str(settings.state_path)) == (
        "/",
        "/etc/magicstick/host-agent/kubeconfig",
        "/var/lib/magicstick",
    )


def test_a_flag_wins_over_its_environment_variable() -> None:
    settings = parse_settings(
        ["evidence", "--node-name", "halo"],
        {"MAGICSTICK_HOST_AGENT_NODE_NAME": "other", "MAGICSTICK_HOST_AGENT_ROOT": "/srv/host"},
    )
    assert (settings.node_name, str(settings.root), str(settings.state_path)) == (
        "halo",
        "/srv/host",
        "/srv/host/var/lib/magicstick",
    )


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([], "the first argument must be a command"),
        (["start"], "serve or evidence; got 'start'"),
        (["serve", "--node-name", "Halo_1"], "--node-name: 'Halo_1' is not a Node name"),
        (["serve", "--node-name", "halo", "--root", "relative"], "--root: 'relative' is not an absolute path"),
        (["serve", "--node-name", "halo", "--poll-seconds", "0"], "--poll-seconds"),
        (["serve", "--node-name", "halo", "--namespace", "Not A Namespace"], "--namespace"),
    ],
)
def test_a_bad_value_is_refused_naming_the_flag(argv: list[str], words: str) -> None:
    with pytest.raises(ServiceFlagError, match=words):
        parse_settings(argv, {})


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.host_agent.main", *argv],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )


def test_the_console_script_exits_2_on_a_bad_flag_with_one_line() -> None:
    done = _run("serve", "--node-name", "halo", "--root", "relative")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["magicstick-host-agent: --root: 'relative' is not an absolute path"]


def test_the_console_script_exits_2_on_a_kubeconfig_that_does_not_exist(tmp_path: Path) -> None:
    cpu_only(tmp_path)
    done = _run("evidence", "--node-name", "halo", "--root", str(tmp_path), "--kubeconfig", str(tmp_path / "missing"))
    assert done.returncode == 2
    assert "kubeconfig" in done.stderr and "not found" in done.stderr
