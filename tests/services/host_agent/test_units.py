"""magic-cluster/host/systemd/: the host agent's units, judged by systemd itself.

`systemd-analyze verify` (systemd 252 on Debian 12) loads each unit as the service manager
would and checks every ExecStart binary exists. It runs with `--root=TMP`: the units are placed
under TMP/etc/systemd/system, an executable stand-in of the console script at
TMP/opt/magicstick/host-agent/bin/magicstick-host-agent, and a copy of the host's own
/usr/lib/systemd/system (read, never changed) supplies the targets every unit depends on by
default (sysinit.target, basic.target, ...): with --root, verify looks for units only below
the root. Nothing outside the temporary directory is written. A control test removes the
stand-in and sees verify refuse, so a green verify means the binary check really ran.

The timer's pace is read from the unit file and converted by `systemd-analyze timespan`, then
held against the program's own staleness bound (planning.hardware.evidence.EVIDENCE_MAX_AGE).
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Final

import pytest

from planning.hardware.evidence import EVIDENCE_MAX_AGE

REPO_ROOT: Final = Path(__file__).resolve().parents[3]
UNIT_SOURCE: Final = REPO_ROOT / "magic-cluster" / "host" / "systemd"
AGENT: Final = "magicstick-host-agent.service"
EVIDENCE: Final = "magicstick-host-evidence.service"
TIMER: Final = "magicstick-host-evidence.timer"
UNITS: Final = (AGENT, EVIDENCE, TIMER)
CONSOLE_SCRIPT: Final = "/opt/magicstick/host-agent/bin/magicstick-host-agent"
SYSTEM_UNITS: Final = Path("/usr/lib/systemd/system")
SYSTEMD_ANALYZE: Final = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
MISSED_RUNS_TOLERATED: Final = 4
"""Evidence stays fresh though this many timer runs in a row fail (the API server away a while)."""


def unit(name: str) -> configparser.RawConfigParser:
    """A unit file as sections of keys; a repeated key keeps its last value."""
    parser = configparser.RawConfigParser(strict=False, interpolation=None, empty_lines_in_values=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string((UNIT_SOURCE / name).read_text(), source=name)
    return parser


def timespan(value: str) -> timedelta:
    """A systemd time span as systemd itself reads it."""
    answer = subprocess.run([SYSTEMD_ANALYZE, "timespan", value], capture_output=True, text=True, check=True)
    micros = next(
        int(m.group(1)) for line in answer.stdout.splitlines() if (m := re.fullmatch(r"\s*\S*s:\s*(\d+)\s*", line))
    )
    return timedelta(microseconds=micros)


def verify(root: Path) -> subprocess.CompletedProcess[str]:
    paths = [str(root / "etc" / "systemd" / "system" / name) for name in UNITS]
    return subprocess.run(
        [SYSTEMD_ANALYZE, "verify", f"--root={root}", "--man=no", *paths],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd=root,
    )


@pytest.fixture
def verify_root(tmp_path: Path) -> Path:
    """TMP with the host's system units, our units and a stand-in console script."""
    assert SYSTEM_UNITS.is_dir(), f"{SYSTEM_UNITS} is needed (systemd's own units)"
    shutil.copytree(SYSTEM_UNITS, tmp_path / SYSTEM_UNITS.relative_to("/"), symlinks=True)
    units = tmp_path / "etc" / "systemd" / "system"
    units.mkdir(parents=True)
    for name in UNITS:
        shutil.copyfile(UNIT_SOURCE / name, units / name)
    stand_in = tmp_path / CONSOLE_SCRIPT.lstrip("/")
    stand_in.parent.mkdir(parents=True)
    stand_in.write_text("#!/bin/sh\nexit 0\n")
    stand_in.chmod(0o755)
    return tmp_path


def test_systemd_analyze_verifies_the_three_units_without_a_warning(verify_root: Path):
    answer = verify(verify_root)
    about_ours = [line for line in answer.stderr.splitlines() if "magicstick" in line]
    assert (answer.returncode, about_ours) == (0, []), answer.stderr


def test_verify_refuses_the_units_when_the_console_script_is_missing(verify_root: Path):
    (verify_root / CONSOLE_SCRIPT.lstrip("/")).unlink()
    answer = verify(verify_root)
    assert answer.returncode != 0
    assert f"Command {CONSOLE_SCRIPT} is not executable" in answer.stderr


def test_the_evidence_timer_fires_a_minute_after_boot_then_every_five_minutes():
    timer = unit(TIMER)["Timer"]
    assert (timespan(timer["OnBootSec"]), timespan(timer["OnUnitActiveSec"])) == (
        timedelta(minutes=1),
        timedelta(minutes=5),
    )


def test_the_timer_keeps_evidence_fresh_though_several_runs_in_a_row_fail():
    timer = unit(TIMER)["Timer"]
    worst_gap = timespan(timer["OnUnitActiveSec"]) + timespan(timer["AccuracySec"])
    assert worst_gap * (MISSED_RUNS_TOLERATED + 1) <= EVIDENCE_MAX_AGE


def test_the_timer_is_enabled_by_timers_target_and_starts_the_evidence_service():
    timer = unit(TIMER)
    assert timer["Install"]["WantedBy"] == "timers.target"
    assert timer["Timer"].get("Unit", EVIDENCE) == EVIDENCE


def test_the_evidence_service_is_a_oneshot_that_runs_the_evidence_command():
    service = unit(EVIDENCE)["Service"]
    assert (service["Type"], service["ExecStart"]) == ("oneshot", f"{CONSOLE_SCRIPT} evidence")


def test_the_agent_service_notifies_readiness_and_runs_the_serve_command():
    service = unit(AGENT)["Service"]
    assert (service["Type"], service["ExecStart"]) == ("notify", f"{CONSOLE_SCRIPT} serve")


def test_the_agent_service_restarts_always_after_five_seconds():
    service = unit(AGENT)["Service"]
    assert (service["Restart"], timespan(service["RestartSec"])) == ("always", timedelta(seconds=5))


def test_the_agent_starts_after_the_network_is_online_and_with_multi_user_target():
    agent = unit(AGENT)
    assert (agent["Unit"]["After"], agent["Unit"]["Wants"]) == ("network-online.target", "network-online.target")
    assert agent["Install"]["WantedBy"] == "multi-user.target"


@pytest.mark.parametrize("name", [AGENT, EVIDENCE])
def test_both_services_run_as_root_and_read_the_optional_environment_file(name: str):
    service = unit(name)["Service"]
    assert "User" not in service and "DynamicUser" not in service
    assert service["EnvironmentFile"] == "-/etc/magicstick/host-agent/environment"


def test_the_agent_may_write_netplan_modprobe_its_own_directory_and_its_state_only():
    service = unit(AGENT)["Service"]
    writable = {path.lstrip("-") for path in service["ReadWritePaths"].split()}
    assert writable == {"/etc/netplan", "/etc/modprobe.d", "/etc/magicstick/host-agent"}
    assert service["StateDirectory"] == "magicstick"
    # full: /usr, /boot and /etc read-only; /var and /run stay writable for netplan apply.
    assert service["ProtectSystem"] == "full"


def test_the_agent_is_hardened_without_losing_modules_or_host_interfaces():
    service = unit(AGENT)["Service"]
    assert {key: service.get(key) for key in ("ProtectHome", "PrivateTmp", "NoNewPrivileges")} == dict.fromkeys(
        ("ProtectHome", "PrivateTmp", "NoNewPrivileges"), "yes"
    )
    # modprobe loads GPU modules; netplan and iw configure the host's own interfaces.
    assert not {"ProtectKernelModules", "PrivateNetwork", "RestrictAddressFamilies", "PrivateDevices"} & set(service)


def test_the_evidence_service_sees_the_host_read_only_but_for_its_state_and_token():
    service = unit(EVIDENCE)["Service"]
    assert service["ProtectSystem"] == "strict"
    assert {path.lstrip("-") for path in service["ReadWritePaths"].split()} == {"/etc/magicstick/host-agent"}
    assert service["StateDirectory"] == "magicstick"
