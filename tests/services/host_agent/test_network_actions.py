"""configure-network and scan-wifi, called directly on a fake root, judged by the real netplan.

How the network namespace enters: the module creates a real network namespace
(`ip netns add mstest-<random>`) holding a veth pair, `eth-test` and `eth-peer` (this kernel
offers no `dummy` link type). `ip netns exec` mounts the namespace's own sysfs, so inside it
services.host_agent.facts.network_interfaces reads /sys/class/net exactly as on a node; that
inventory (names, wireless or not, operstate) is mirrored into the fake root's sys/class/net,
and each test's facts are read from the fake root by the same reader. A Wi-Fi card cannot exist
in a namespace without loading mac80211_hwsim (a change to the host's kernel), so the tests
that need one add `wlan0` to the fake root as sysfs shows a wireless interface (a `wireless`
directory). The namespace is deleted by the fixture's finalizer.

`netplan generate --root-dir <fake root>` is the real /usr/sbin/netplan: it judges the YAML the
action writes and generates networkd/wpa_supplicant files below <fake root>/run. `netplan
apply` and `iw` are recording stand-ins first on PATH (MSTEST_NETPLAN_FAIL makes `generate`,
`apply` or only the first `apply` fail); nothing touches the host's network.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from api.hostoperations import CONFIRMATION_ANNOTATION
from services.host_agent.actions.base import ActionContext, Step
from services.host_agent.actions.network import CONFIGURE_NETWORK
from services.host_agent.actions.network_settings import NetworkSettings, netplan_yaml, network_settings
from services.host_agent.actions.wifi_scan import SCAN_WIFI
from services.host_agent.cluster import AgentCluster
from services.host_agent.commands import CommandRunner
from services.host_agent.engine import Engine
from services.host_agent.evidence import rfc3339, view_host
from services.host_agent.facts import HostFacts, network_interfaces
from services.host_agent.journal import Entry, Journal, Stage
from services.host_agent.netplan import netplan_hashes
from services.host_agent.requests import HostOperation
from services.host_agent.settings import AgentSettings, Command

REPO = Path(__file__).resolve().parents[3]
REAL_NETPLAN = "/usr/sbin/netplan"
NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
CONFIRMATION_SECONDS = 300
NODE_UID = "3f2a1b0c-9d8e-4f7a-8b6c-5d4e3f2a1b0c"
BOOT_ID = "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d"
NAMESPACE = "ai-system"
SECRET_NAME = "home-network"
SECRET_UID = "5e4d3c2b-1a09-4f8e-a7d6-c5b4a3928170"
PASSWORD = "correct-Horse-battery-9"
CLOUD_INIT = "network:\n  version: 2\n  ethernets:\n    eth-peer:\n      dhcp4: true\n"
LAB = "# the administrator's own file\nnetwork:\n  version: 2\n  ethernets:\n    eth-peer:\n      dhcp6: true\n"
MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}", re.IGNORECASE)

NETPLAN_STAND_IN = f"""#!/bin/sh
# Recording stand-in for netplan: `generate --root-dir DIR` goes to the real netplan, `apply` is recorded.
echo "$*" >> "$MSTEST_LOG_DIR/netplan.log"
case "$1" in
  generate)
    root=""
    previous=""
    for argument in "$@"; do
      [ "$previous" = "--root-dir" ] && root="$argument"
      previous="$argument"
    done
    if [ -z "$root" ]; then echo "stand-in: generate without --root-dir is refused here" >&2; exit 2; fi
    if [ "$MSTEST_NETPLAN_FAIL" = generate ]; then
      # as netplan reports a parse error: the file, then the offending line quoted
      echo "$root/etc/netplan/90-magicstick.yaml:14:21: Error in network definition: invalid access point (stand-in)" >&2
      grep -h "password" "$root/etc/netplan/90-magicstick.yaml" >&2
      exit 1
    fi
    exec {REAL_NETPLAN} "$@"
    ;;
  apply)
    if [ "$MSTEST_NETPLAN_FAIL" = apply-once ] && [ ! -e "$MSTEST_LOG_DIR/apply-failed" ]; then
      touch "$MSTEST_LOG_DIR/apply-failed"
      MSTEST_NETPLAN_FAIL=apply
    fi
    if [ "$MSTEST_NETPLAN_FAIL" = apply ]; then echo "Failed to apply: systemd-networkd did not start (stand-in)" >&2; exit 1; fi
    exit 0
    ;;
esac
echo "stand-in: netplan $1 is not expected" >&2
exit 64
"""

IW_STAND_IN = """#!/bin/sh
# Recording stand-in for iw: prints a canned scan of wlan0.
echo "$*" >> "$MSTEST_LOG_DIR/iw.log"
if [ "$1 $2 $3" = "dev wlan0 scan" ]; then cat "$MSTEST_IW_SCAN"; exit 0; fi
echo "command failed: No such device (-19)" >&2
exit 237
"""

# `iw dev wlan0 scan` as iw 5.19 prints it: a strong WPA2 network, the same SSID again weaker
# (another band), a hidden network, an open one with a non-ASCII name, an old WPA-only router.
IW_SCAN = """BSS 3c:37:86:12:34:56(on wlan0) -- associated
\tlast seen: 2081.664s [boottime]
\tTSF: 2081664103 usec (0d, 00:34:41)
\tfreq: 5180
\tbeacon interval: 100 TUs
\tcapability: ESS Privacy SpectrumMgmt ShortSlotTime RadioMeasure (0x1511)
\tsignal: -41.00 dBm
\tlast seen: 120 ms ago
\tInformation elements from Probe Response frame:
\tSSID: Halo Home
\tSupported rates: 6.0* 9.0 12.0* 18.0 24.0* 36.0 48.0 54.0\x20
\tDS Parameter set: channel 36
\tRSN:\t * Version: 1
\t\t * Group cipher: CCMP
\t\t * Pairwise ciphers: CCMP
\t\t * Authentication suites: PSK
\t\t * Capabilities: 16-PTKSA-RC 1-GTKSA-RC (0x000c)
BSS 3c:37:86:12:34:57(on wlan0)
\tlast seen: 2081.120s [boottime]
\tfreq: 2437
\tcapability: ESS Privacy ShortSlotTime (0x0411)
\tsignal: -67.50 dBm
\tSSID: Halo Home
\tDS Parameter set: channel 6
\tRSN:\t * Version: 1
\t\t * Group cipher: CCMP
\t\t * Pairwise ciphers: CCMP
\t\t * Authentication suites: PSK
BSS 10:20:30:40:50:60(on wlan0)
\tfreq: 2412
\tcapability: ESS Privacy ShortSlotTime (0x0411)
\tsignal: -55.00 dBm
\tSSID:\x20
\tRSN:\t * Version: 1
\t\t * Group cipher: CCMP
BSS a0:b1:c2:d3:e4:f5(on wlan0)
\tfreq: 2462
\tcapability: ESS ShortSlotTime (0x0401)
\tsignal: -72.25 dBm
\tSSID: Caf\\xc3\\xa9 Guest
\tDS Parameter set: channel 11
BSS de:ad:be:ef:00:01(on wlan0)
\tfreq: 2422
\tcapability: ESS Privacy (0x0011)
\tsignal: -80.00 dBm
\tSSID: OldRouter
\tWPA:\t * Version: 1
\t\t * Group cipher: TKIP
\t\t * Pairwise ciphers: TKIP
\t\t * Authentication suites: PSK
"""

READ_INVENTORY = (
    "import json; from pathlib import Path; from services.host_agent.facts import network_interfaces; "
    "print(json.dumps([[i.name, i.wireless, i.operstate] for i in network_interfaces(Path('/'))]))"
)


@pytest.fixture(scope="module")
def namespace_interfaces() -> Iterator[list[tuple[str, bool, str]]]:
    """The interfaces of a fresh network namespace, as the agent's reader sees them inside it."""
    if os.geteuid() != 0 or shutil.which("ip") is None or not Path(REAL_NETPLAN).exists():
        pytest.fail(
            "these tests need root, iproute2's `ip netns` and Debian's netplan.io (scripts/system-packages.sh, `make system`, installs them)"
        )
    name = f"mstest-{secrets.token_hex(4)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(
            ["ip", "-n", name, "link", "add", "eth-test", "type", "veth", "peer", "name", "eth-peer"], check=True
        )
        read = subprocess.run(
            ["ip", "netns", "exec", name, sys.executable, "-c", READ_INVENTORY],
            check=True,
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        yield [(str(n), bool(w), str(o)) for n, w, o in json.loads(read.stdout)]
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=True)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@dataclass
class StandInCluster:
    """What the actions and the engine ask of the API server: one Secret, and status writes."""

    node_name: str = "halo"
    network_namespace: str = "magicstick-host-network"
    secrets: dict[str, dict[str, Any]] = field(default_factory=dict)
    statuses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def secret(self, name: str) -> dict[str, Any] | None:
        found = self.secrets.get(name)
        return json.loads(json.dumps(found)) if found is not None else None

    def write_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        self.statuses.append((name, status))
        return {"status": status}

    def put_secret(self, data: dict[str, str], *, uid: str = SECRET_UID, name: str = SECRET_NAME) -> None:
        self.secrets[name] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": uid, "resourceVersion": "4711"},
            "data": {key: _b64(value) for key, value in data.items()},
        }


@dataclass
class Host:
    root: Path
    logs: Path
    interfaces: tuple[str, ...]
    cluster: StandInCluster = field(default_factory=StandInCluster)

    @property
    def netplan(self) -> Path:
        return self.root / "etc/netplan"

    @property
    def ours(self) -> Path:
        return self.netplan / "90-magicstick.yaml"

    @property
    def journal(self) -> Journal:
        return Journal(self.root / "var/lib/magicstick/journal")

    def facts(self) -> HostFacts:
        return HostFacts(
            boot_id=BOOT_ID,
            kernel="6.12.0-test",
            pci_gpus=(),
            architecture="",
            driver_ready=False,
            memory_total_mi=65536,
            gpu_memory=None,
            interfaces=network_interfaces(self.root),
        )

    def context(self, now: datetime = NOW) -> ActionContext:
        settings = AgentSettings(
            command=Command.SERVE, node_name="halo", root=self.root, confirmation_seconds=CONFIRMATION_SECONDS
        )
        host = view_host(self.facts(), node_uid=NODE_UID, netplan_files=netplan_hashes(self.root), now=now)
        return ActionContext(
            settings=settings, host=host, cluster=cast(AgentCluster, self.cluster), runner=CommandRunner(), now=now
        )

    def add_wifi_card(self, name: str = "wlan0") -> None:
        """A wireless interface as sysfs shows one (no namespace can hold a real one)."""
        (self.root / "sys/class/net" / name / "wireless").mkdir(parents=True)
        (self.root / "sys/class/net" / name / "operstate").write_text("dormant\n")

    def operation(
        self, action: str = "configure-network", *, annotations: dict[str, str] | None = None, **spec: Any
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "action": action,
            "nodeName": "halo",
            "nodeUID": NODE_UID,
            "bootID": BOOT_ID,
            "requestID": f"req-{action}-1",
            "acknowledgeDisruption": True,
        }
        if action == "configure-network":
            body["planId"] = self.context().host.plans.network
            body["networkRef"] = {"name": SECRET_NAME, "uid": SECRET_UID}
        body.update(spec)
        metadata: dict[str, Any] = {
            "name": f"{action}-1",
            "namespace": NAMESPACE,
            "uid": f"uid-{action}-1",
            "generation": 1,
        }
        if annotations:
            metadata["annotations"] = annotations
        return {
            "apiVersion": "appliance.magicstick.dev/v1alpha1",
            "kind": "HostOperation",
            "metadata": metadata,
            "spec": body,
        }

    def calls(self, program: str) -> list[str]:
        log = self.logs / f"{program}.log"
        return log.read_text().splitlines() if log.exists() else []

    def applies(self) -> int:
        return self.calls("netplan").count("apply")

    def snapshot(self) -> dict[str, tuple[bytes, int]]:
        """Every file of the netplan directory: name -> (contents, mode)."""
        return {
            path.name: (path.read_bytes(), stat.S_IMODE(path.stat().st_mode)) for path in sorted(self.netplan.iterdir())
        }


@pytest.fixture
def host(tmp_path: Path, namespace_interfaces: list[tuple[str, bool, str]], monkeypatch: pytest.MonkeyPatch) -> Host:
    root = tmp_path / "root"
    netplan = root / "etc/netplan"
    netplan.mkdir(parents=True)
    for name, text, mode in (("50-cloud-init.yaml", CLOUD_INIT, 0o600), ("60-lab.yaml", LAB, 0o640)):
        (netplan / name).write_text(text)
        os.chmod(netplan / name, mode)
    for name, wireless, operstate in namespace_interfaces:
        entry = root / "sys/class/net" / name
        entry.mkdir(parents=True)
        (entry / "operstate").write_text(operstate + "\n")
        if wireless:
            (entry / "wireless").mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program, script in (("netplan", NETPLAN_STAND_IN), ("iw", IW_STAND_IN)):
        (bin_dir / program).write_text(script)
        os.chmod(bin_dir / program, 0o755)
    (tmp_path / "iw-scan.txt").write_text(IW_SCAN)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("MSTEST_LOG_DIR", str(logs))
    monkeypatch.setenv("MSTEST_IW_SCAN", str(tmp_path / "iw-scan.txt"))
    monkeypatch.delenv("MSTEST_NETPLAN_FAIL", raising=False)
    return Host(root=root, logs=logs, interfaces=tuple(name for name, _, _ in namespace_interfaces))


def _started(
    host: Host, obj: dict[str, Any], context: ActionContext, action: Any = CONFIGURE_NETWORK
) -> tuple[HostOperation, Entry]:
    """The operation and its `started` entry, as the engine makes it before execute."""
    operation = HostOperation.from_object(obj)
    assert operation.spec is not None, operation.spec_error
    entry = Entry(
        operation_uid=operation.uid,
        operation=operation.key,
        request_id=operation.request_id,
        action=operation.action,
        boot_id=BOOT_ID,
        stage=Stage.STARTED,
        started_at=rfc3339(context.now),
        data=action.journal(operation, context),
    )
    return operation, entry


def _applied(host: Host, data: dict[str, str]) -> tuple[HostOperation, Entry, Step]:
    """configure-network checked, journaled and executed at NOW; the entry as the engine records it."""
    host.cluster.put_secret(data)
    context = host.context()
    operation, entry = _started(host, host.operation(), context)
    assert CONFIGURE_NETWORK.check(operation, context) is None
    step = CONFIGURE_NETWORK.execute(operation, context, entry)
    return operation, replace(entry, stage=step.stage, outcome=step.outcome, data=step.data or entry.data), step


def _with_annotation(operation: HostOperation, value: str) -> HostOperation:
    return replace(operation, annotations={**operation.annotations, CONFIRMATION_ANNOTATION: value})


def test_the_inventory_is_the_namespace_s_interfaces(host: Host) -> None:
    assert {"eth-test", "eth-peer"} <= set(host.interfaces)
    assert [i.name for i in host.facts().interfaces] == sorted(host.interfaces)
    assert not any(i.wireless for i in host.facts().interfaces)


def test_a_dhcp_ethernet_configuration_is_validated_by_netplan_generate_applied_once_and_awaits_confirmation(
    host: Host,
) -> None:
    operation, entry, step = _applied(host, {"interface": "eth-test"})

    assert yaml.safe_load(host.ours.read_text()) == {
        "network": {"version": 2, "ethernets": {"eth-test": {"dhcp4": True}}}
    }
    assert stat.S_IMODE(host.ours.stat().st_mode) == 0o600
    generated = host.root / "run/systemd/network/10-netplan-eth-test.network"
    assert "DHCP=ipv4" in generated.read_text()
    assert f"generate --root-dir {host.root}" in host.calls("netplan")
    assert host.applies() == 1
    deadline = rfc3339(NOW + timedelta(seconds=CONFIRMATION_SECONDS))
    assert (step.stage, step.outcome.phase, step.outcome.reason) == (
        Stage.APPLIED,
        "AwaitingConfirmation",
        "AwaitingConfirmation",
    )
    assert step.outcome.details == {"confirmationDeadline": deadline}
    assert step.data["confirmationDeadline"] == deadline
    assert f"{CONFIRMATION_ANNOTATION}={operation.request_id}" in step.outcome.message


def test_a_static_configuration_gets_its_addresses_default_route_and_nameservers(host: Host) -> None:
    _applied(
        host,
        {
            "interface": "eth-test",
            "addresses": "192.0.2.10/24, 2001:db8::10/64",
            "gateway": "192.0.2.1",
            "nameservers": "192.0.2.53,2001:db8::53",
        },
    )

    generated = (host.root / "run/systemd/network/10-netplan-eth-test.network").read_text()
    for line in (
        "Address=192.0.2.10/24",
        "Address=2001:db8::10/64",
        "Gateway=192.0.2.1",
        "DNS=192.0.2.53",
        "DNS=2001:db8::53",
    ):
        assert line in generated


def test_a_wifi_configuration_is_generated_for_wpa_supplicant(host: Host) -> None:
    host.add_wifi_card()
    _, _, step = _applied(host, {"interface": "wlan0", "ssid": "Halo Home", "password": PASSWORD})

    assert yaml.safe_load(host.ours.read_text())["network"]["wifis"] == {
        "wlan0": {"dhcp4": True, "access-points": {"Halo Home": {"password": PASSWORD}}}
    }
    wpa = host.root / "run/netplan/wpa-wlan0.conf"
    assert 'ssid="Halo Home"' in wpa.read_text() and stat.S_IMODE(wpa.stat().st_mode) == 0o600
    assert step.outcome.phase == "AwaitingConfirmation"


def test_the_confirmation_annotation_before_the_deadline_succeeds_and_the_files_stay(host: Host) -> None:
    operation, entry, _ = _applied(host, {"interface": "eth-test"})
    after = host.snapshot()

    step = CONFIGURE_NETWORK.follow(
        _with_annotation(operation, operation.request_id), host.context(NOW + timedelta(seconds=60)), entry
    )

    assert step is not None and (step.outcome.phase, step.outcome.reason) == ("Succeeded", "Confirmed")
    assert host.snapshot() == after and "90-magicstick.yaml" in after
    assert host.applies() == 1


def test_without_confirmation_before_the_deadline_the_operation_keeps_waiting(host: Host) -> None:
    operation, entry, _ = _applied(host, {"interface": "eth-test"})
    just_before = NOW + timedelta(seconds=CONFIRMATION_SECONDS - 1)

    assert (
        CONFIGURE_NETWORK.follow(
            _with_annotation(operation, "req-of-another-request"), host.context(just_before), entry
        )
        is None
    )
    assert host.applies() == 1


def test_no_confirmation_at_the_deadline_restores_the_files_byte_for_byte_applies_again_and_rolls_back(
    host: Host,
) -> None:
    before = host.snapshot()
    operation, entry, _ = _applied(host, {"interface": "eth-test"})
    assert host.snapshot() != before

    step = CONFIGURE_NETWORK.follow(operation, host.context(NOW + timedelta(seconds=CONFIRMATION_SECONDS)), entry)

    assert step is not None and (step.outcome.phase, step.outcome.reason) == ("RolledBack", "ConfirmationTimedOut")
    assert host.snapshot() == before
    assert host.applies() == 2


def test_a_failing_apply_of_the_rollback_is_rollback_failed_with_the_files_restored(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = host.snapshot()
    operation, entry, _ = _applied(host, {"interface": "eth-test"})
    monkeypatch.setenv("MSTEST_NETPLAN_FAIL", "apply")

    step = CONFIGURE_NETWORK.follow(operation, host.context(NOW + timedelta(hours=1)), entry)

    assert step is not None and (step.outcome.phase, step.outcome.reason) == ("Failed", "RollbackFailed")
    assert "systemd-networkd did not start" in step.outcome.message
    assert host.snapshot() == before


def test_recover_after_an_interruption_restores_the_saved_files_applies_them_and_reports_interrupted(
    host: Host,
) -> None:
    before = host.snapshot()
    host.cluster.put_secret({"interface": "eth-test"})
    context = host.context()
    operation, entry = _started(host, host.operation(), context)
    host.ours.write_text(
        "network:\n  version: 2\n  ethernets:\n    eth-test:\n      dhcp4: tr"
    )  # the crash came mid-change
    (host.netplan / "60-lab.yaml").unlink()

    outcome = CONFIGURE_NETWORK.recover(operation, host.context(NOW + timedelta(minutes=5)), entry)

    assert (outcome.phase, outcome.reason) == ("RolledBack", "Interrupted")
    assert host.snapshot() == before
    assert host.applies() == 1


def test_a_secret_whose_uid_differs_is_refused_as_unusable_and_nothing_is_written(host: Host) -> None:
    host.cluster.put_secret({"interface": "eth-test"}, uid="a-newer-secret-of-the-same-name")
    before = host.snapshot()
    engine = Engine(host.journal, host.context())

    engine.run_once([host.operation()])

    [(_, status)] = host.cluster.statuses
    assert (status["phase"], status["reason"]) == ("Failed", "NetworkSecretInvalid")
    assert status["message"].startswith("spec.networkRef: ") and "UID" in status["message"]
    assert host.snapshot() == before and not (host.root / "run").exists()
    assert host.calls("netplan") == [] and host.journal.operation_uids() == frozenset()


@pytest.mark.parametrize(
    ("data", "key", "value"),
    [
        pytest.param({"interface": "eth9"}, "interface", "eth9", id="an unknown interface"),
        pytest.param(
            {"interface": "eth-test", "ssid": "Halo Home", "password": PASSWORD},
            "ssid",
            "Halo Home",
            id="a Wi-Fi ssid on an Ethernet interface",
        ),
        pytest.param(
            {"interface": "eth-test", "addresses": "192.0.2.10/24,192.0.2.300/24"},
            "addresses",
            "192.0.2.300/24",
            id="a bad CIDR",
        ),
        pytest.param(
            {"interface": "eth-test", "addresses": "10.1.2.3"},
            "addresses",
            "10.1.2.3",
            id="an address without its prefix length",
        ),
        pytest.param(
            {"interface": "eth-test", "addresses": "192.0.2.10/24", "gateway": "2001:db8::1"},
            "gateway",
            "2001:db8::1",
            id="a gateway of another IP version",
        ),
        pytest.param(
            {"interface": "eth-test", "nameservers": "192.0.2.53,dns.example"},
            "nameservers",
            "dns.example",
            id="a nameserver that is no IP",
        ),
        pytest.param(
            {"interface": "wlan0", "ssid": "Halo Home", "password": "short"},
            "password",
            "short",
            id="a password too short for WPA",
        ),
    ],
)
def test_a_secret_value_that_breaks_its_rule_is_refused_naming_the_key_not_the_value(
    host: Host, data: dict[str, str], key: str, value: str
) -> None:
    host.add_wifi_card()
    host.cluster.put_secret(data)
    before = host.snapshot()
    context = host.context()

    refusal = CONFIGURE_NETWORK.check(HostOperation.from_object(host.operation()), context)

    assert refusal is not None and (refusal.phase, refusal.reason) == ("Failed", "NetworkSecretInvalid")
    assert refusal.message.startswith(f"Secret {host.cluster.network_namespace}/{SECRET_NAME} key {key!r}: ")
    assert value not in refusal.message and PASSWORD not in refusal.message
    assert host.snapshot() == before


def test_the_password_never_appears_in_the_statuses_the_journal_or_the_logs(
    host: Host, caplog: pytest.LogCaptureFixture
) -> None:
    host.add_wifi_card()
    host.cluster.put_secret({"interface": "wlan0", "ssid": "Halo Home", "password": PASSWORD})
    context = host.context()
    obj = host.operation()
    caplog.set_level(logging.DEBUG)

    Engine(host.journal, context).run_once([obj])
    operation, started = _started(host, obj, context)

    assert PASSWORD in host.ours.read_text()  # it is where netplan needs it, and nowhere else
    assert [status["phase"] for _, status in host.cluster.statuses] == ["Applying", "AwaitingConfirmation"]
    assert PASSWORD not in json.dumps(host.cluster.statuses)
    assert PASSWORD not in started.to_json()
    journal_file = host.root / "var/lib/magicstick/journal" / f"{operation.uid}.json"
    assert PASSWORD not in journal_file.read_text()
    assert PASSWORD not in caplog.text


def test_the_password_never_appears_in_a_refusal_or_a_command_failure(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    host.add_wifi_card()
    context = host.context()
    host.cluster.put_secret({"interface": "wlan0", "ssid": "Halo Home", "password": PASSWORD, "gateway": "192.0.2.1"})
    refusal = CONFIGURE_NETWORK.check(HostOperation.from_object(host.operation()), context)
    host.cluster.put_secret({"interface": "wlan0", "ssid": "Halo Home", "password": PASSWORD + "\n"})
    bad_password = CONFIGURE_NETWORK.check(HostOperation.from_object(host.operation()), context)
    monkeypatch.setenv("MSTEST_NETPLAN_FAIL", "generate")
    _, _, step = _applied(host, {"interface": "wlan0", "ssid": "Halo Home", "password": PASSWORD})

    settings = network_settings(
        {"interface": _b64("wlan0"), "ssid": _b64("Halo Home"), "password": _b64(PASSWORD)},
        context.host.facts.interfaces,
    )
    assert isinstance(settings, NetworkSettings) and PASSWORD not in repr(settings) and PASSWORD not in settings.summary
    assert refusal is not None and "'gateway'" in refusal.message
    assert bad_password is not None and "'password'" in bad_password.message
    assert step.outcome.reason == "CommandFailed"
    for message in (refusal.message, bad_password.message, step.outcome.message, json.dumps(step.outcome.details)):
        assert PASSWORD not in message


def test_a_failing_netplan_generate_restores_the_saved_files_fails_with_command_failed_and_applies_nothing(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = host.snapshot()
    monkeypatch.setenv("MSTEST_NETPLAN_FAIL", "generate")

    _, _, step = _applied(host, {"interface": "eth-test"})

    assert (step.stage, step.outcome.phase, step.outcome.reason) == (Stage.FINISHED, "Failed", "CommandFailed")
    assert "Error in network definition" in step.outcome.message
    assert host.snapshot() == before
    assert host.applies() == 0


def test_a_failing_netplan_apply_is_rolled_back_to_the_saved_files(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    before = host.snapshot()
    monkeypatch.setenv("MSTEST_NETPLAN_FAIL", "apply-once")

    _, _, step = _applied(host, {"interface": "eth-test"})

    assert (step.stage, step.outcome.phase, step.outcome.reason) == (Stage.FINISHED, "RolledBack", "CommandFailed")
    assert "systemd-networkd did not start" in step.outcome.message
    assert host.snapshot() == before and host.applies() == 2


def test_scan_wifi_reports_ssids_strongest_first_without_bssids_hidden_ones_or_duplicates(host: Host) -> None:
    host.add_wifi_card()
    context = host.context()
    operation, entry = _started(host, host.operation("scan-wifi"), context, SCAN_WIFI)

    assert SCAN_WIFI.check(operation, context) is None
    step = SCAN_WIFI.execute(operation, context, entry)

    assert (step.outcome.phase, step.outcome.reason) == ("Succeeded", "Completed")
    assert step.outcome.details == {
        "networks": [
            {"interface": "wlan0", "ssid": "Halo Home", "ssidEscaped": False, "signalDbm": -41, "security": "wpa2"},
            {"interface": "wlan0", "ssid": "Café Guest", "ssidEscaped": False, "signalDbm": -72, "security": "open"},
            {"interface": "wlan0", "ssid": "OldRouter", "ssidEscaped": False, "signalDbm": -80, "security": "wpa"},
        ]
    }
    assert not MAC.search(json.dumps(step.outcome.details)) and not MAC.search(step.outcome.message)
    assert host.calls("iw") == ["dev wlan0 scan"]


def test_scan_wifi_on_a_host_without_a_wireless_interface_is_refused_with_no_wifi_interface(host: Host) -> None:
    context = host.context()

    refusal = SCAN_WIFI.check(HostOperation.from_object(host.operation("scan-wifi")), context)

    assert refusal is not None and (refusal.phase, refusal.reason) == ("Failed", "NoWifiInterface")
    assert host.calls("iw") == []


def test_through_the_engine_configure_network_writes_applying_then_awaiting_confirmation_and_journals_applied(
    host: Host,
) -> None:
    host.cluster.put_secret({"interface": "eth-test"})
    obj = host.operation()

    Engine(host.journal, host.context()).run_once([obj])

    assert [(name, status["phase"]) for name, status in host.cluster.statuses] == [
        ("configure-network-1", "Applying"),
        ("configure-network-1", "AwaitingConfirmation"),
    ]
    assert host.cluster.statuses[-1][1]["confirmationDeadline"] == rfc3339(
        NOW + timedelta(seconds=CONFIRMATION_SECONDS)
    )
    entry = host.journal.read(obj["metadata"]["uid"])
    assert entry is not None and entry.stage is Stage.APPLIED
    assert host.applies() == 1


def test_through_the_engine_a_confirmed_change_succeeds_on_a_later_pass_without_being_applied_again(host: Host) -> None:
    host.cluster.put_secret({"interface": "eth-test"})
    obj = host.operation()
    Engine(host.journal, host.context()).run_once([obj])
    written = host.cluster.statuses[-1][1]
    confirmed = {
        **obj,
        "metadata": {**obj["metadata"], "annotations": {CONFIRMATION_ANNOTATION: obj["spec"]["requestID"]}},
        "status": written,
    }

    Engine(host.journal, host.context(NOW + timedelta(seconds=30))).run_once([confirmed])

    assert (host.cluster.statuses[-1][1]["phase"], host.cluster.statuses[-1][1]["reason"]) == ("Succeeded", "Confirmed")
    entry = host.journal.read(obj["metadata"]["uid"])
    assert entry is not None and entry.stage is Stage.FINISHED and "saved" not in entry.data
    assert host.applies() == 1 and host.ours.exists()


def _run(host: Host, *objects: dict[str, Any], now: datetime = NOW) -> None:
    Engine(host.journal, host.context(now)).run_once(list(objects))


def _named(obj: dict[str, Any], name: str) -> dict[str, Any]:
    """`obj` as another operation: its own name, UID and request ID."""
    return {
        **obj,
        "metadata": {**obj["metadata"], "name": name, "uid": f"uid-{name}"},
        "spec": {**obj["spec"], "requestID": f"req-{name}"},
    }


def _last_status(host: Host, name: str) -> dict[str, Any]:
    return [status for written, status in host.cluster.statuses if written == name][-1]


@pytest.mark.parametrize(
    ("data", "key"),
    [
        pytest.param(
            {"interface": "eth-test", "addresses": "fe80::10%eth-test\n  wifis: {}/64"},
            "addresses",
            id="an address whose zone ID carries a newline",
        ),
        pytest.param(
            {"interface": "eth-test", "addresses": "fe80::10%x: {}/64"},
            "addresses",
            id="an address whose zone ID carries YAML",
        ),
        pytest.param(
            {"interface": "eth-test", "addresses": "fe80::10%eth-test/64"},
            "addresses",
            id="an address with a zone ID naming the interface",
        ),
        pytest.param(
            {"interface": "eth-test", "nameservers": "fe80::53%\x00"},
            "nameservers",
            id="a nameserver whose zone ID is NUL",
        ),
        pytest.param(
            {"interface": "eth-test", "nameservers": "fe80::53%" + "z" * 200_000},
            "nameservers",
            id="a nameserver of 200 kB",
        ),
        pytest.param(
            {"interface": "eth-test", "addresses": "2001:db8::10/64", "gateway": "fe80::1%eth-test"},
            "gateway",
            id="a gateway with a zone ID",
        ),
        pytest.param({"interface": "eth-test\n"}, "interface", id="an interface name with a newline"),
        pytest.param(
            {"interface": "wlan0", "ssid": "Halo\x1b[2J Home", "password": PASSWORD}, "ssid", id="an SSID with ESC"
        ),
        pytest.param(
            {"interface": "wlan0", "ssid": "Halo Home", "password": PASSWORD + "\u202e"},
            "password",
            id="a password with U+202E",
        ),
    ],
)
def test_a_value_with_a_zone_id_a_control_character_or_no_bound_is_refused_naming_its_key_before_anything_is_written(
    host: Host, data: dict[str, str], key: str
) -> None:
    host.add_wifi_card()
    host.cluster.put_secret(data)
    before = host.snapshot()

    _run(host, host.operation())

    status = _last_status(host, "configure-network-1")
    assert (status["phase"], status["reason"]) == ("Failed", "NetworkSecretInvalid"), status["message"]
    assert f"key {key!r}: " in status["message"] and len(status["message"]) < 1000
    for value in data.values():
        assert value[:12] not in status["message"].replace("eth-test", "").replace("wlan0", "")
    assert host.snapshot() == before and host.calls("netplan") == []
    assert host.journal.operation_uids() == frozenset()


def test_a_request_id_that_is_no_identifier_is_refused_and_never_reaches_the_netplan_file(host: Host) -> None:
    host.cluster.put_secret({"interface": "eth-test"})
    before = host.snapshot()
    obj = host.operation(requestID="req-1\nnetwork:\n  version: 2\n  ethernets: {eth-peer: {dhcp4: true}}")

    _run(host, obj)

    status = _last_status(host, "configure-network-1")
    assert (status["phase"], status["reason"]) == ("Failed", "Rejected")
    assert status["message"].startswith("spec.requestID: ")
    assert host.snapshot() == before and host.calls("netplan") == []


def test_the_netplan_file_s_comment_stays_one_line_whatever_the_request_id(host: Host) -> None:
    operation = HostOperation.from_object(host.operation(requestID="req-1\n  wifis: {}\u2028#"))
    text = netplan_yaml(NetworkSettings(interface="eth-test", wireless=False), operation)

    assert [line for line in text.splitlines() if line.startswith("#")] == text.splitlines()[:2]
    assert yaml.safe_load(text) == {"network": {"version": 2, "ethernets": {"eth-test": {"dhcp4": True}}}}
    assert "\u2028" not in text


FIRST_PASSWORD = "first-Horse-battery-1"
SECOND_PASSWORD = "second-Horse-battery-2"


def _readable(text: str) -> Iterator[str]:
    """Every string of a journal entry, and what each decodes to when it is base64 (the saved files)."""
    stack: list[Any] = [json.loads(text)]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str):
            yield item
            try:
                yield base64.b64decode(item, validate=True).decode("utf-8", errors="replace")
            except ValueError:
                pass


def _passwords_in_journal(host: Host) -> list[str]:
    found = []
    for path in sorted((host.root / "var/lib/magicstick/journal").glob("*.json")):
        for text in _readable(path.read_text()):
            found += [f"{path.name}: {password}" for password in (FIRST_PASSWORD, SECOND_PASSWORD) if password in text]
    return found


def _confirmed(obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {
        **obj,
        "metadata": {**obj["metadata"], "annotations": {CONFIRMATION_ANNOTATION: obj["spec"]["requestID"]}},
        "status": status,
    }


@pytest.mark.parametrize(
    "ending", ["confirmed", "rolled back", "refused by generate", "refused by apply", "crashed and recovered"]
)
def test_no_journal_entry_keeps_a_password_once_its_change_has_ended(
    host: Host, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    host.add_wifi_card()
    host.cluster.put_secret({"interface": "wlan0", "ssid": "Halo Home", "password": FIRST_PASSWORD})
    first = _named(host.operation(), "first")
    _run(host, first)
    first = _confirmed(first, _last_status(host, "first"))
    _run(host, first, now=NOW + timedelta(seconds=30))
    first = {**first, "status": _last_status(host, "first")}
    assert first["status"]["phase"] == "Succeeded" and FIRST_PASSWORD in host.ours.read_text()
    host.cluster.put_secret({"interface": "wlan0", "ssid": "Halo Home", "password": SECOND_PASSWORD})
    second = _named(host.operation(), "second")
    later = NOW + timedelta(minutes=1)

    if ending == "confirmed":
        _run(host, first, second, now=later)
        _run(host, first, _confirmed(second, _last_status(host, "second")), now=later + timedelta(seconds=30))
    elif ending == "rolled back":
        _run(host, first, second, now=later)
        _run(
            host,
            first,
            {**second, "status": _last_status(host, "second")},
            now=later + timedelta(seconds=CONFIRMATION_SECONDS),
        )
    elif ending == "refused by generate":
        monkeypatch.setenv("MSTEST_NETPLAN_FAIL", "generate")
        _run(host, first, second, now=later)
    elif ending == "refused by apply":
        monkeypatch.setenv("MSTEST_NETPLAN_FAIL", "apply-once")
        _run(host, first, second, now=later)
    else:
        context = host.context(later)
        _, started = _started(host, second, context)
        host.journal.write(started)
        host.ours.write_text(
            "network:\n  version: 2\n  wifis:\n    wlan0:\n      access-points:\n        "
        )  # the crash came mid-change
        _run(
            host,
            first,
            {**second, "status": {"phase": "Applying", "reason": "InProgress", "message": ""}},
            now=later + timedelta(minutes=5),
        )

    status = _last_status(host, "second")
    expected = {
        "confirmed": ("Succeeded", "Confirmed"),
        "rolled back": ("RolledBack", "ConfirmationTimedOut"),
        "refused by generate": ("Failed", "CommandFailed"),
        "refused by apply": ("RolledBack", "CommandFailed"),
        "crashed and recovered": ("RolledBack", "Interrupted"),
    }[ending]
    assert (status["phase"], status["reason"]) == expected, status["message"]
    assert host.journal.operation_uids() == {"uid-first", "uid-second"}
    assert _passwords_in_journal(host) == []


# iw prints an SSID's bytes that are not printable ASCII (and a backslash) as \xNN.
HOSTILE_SCAN = "".join(
    f"BSS 02:00:00:00:00:{index:02x}(on wlan0)\n\tcapability: ESS (0x0401)\n\tsignal: -{40 + index}.00 dBm\n\tSSID: {ssid}\n"
    for index, ssid in enumerate(
        [
            "Halo Home",
            "Clear\\x1b[2J\\x1b]0;owned\\x07",
            "Two\\x0aLines",
            "Nul\\x00Byte",
            "\\xe2\\x80\\xaegpj.exe",
            "Back\\x5cslash",
            "Caf\\xc3\\xa9",
            "Bad\\xffUTF-8",
        ]
    )
)


def test_scan_wifi_publishes_only_printable_ssids_escaping_the_others_and_saying_so(host: Host, tmp_path: Path) -> None:
    host.add_wifi_card()
    (tmp_path / "iw-scan.txt").write_text(HOSTILE_SCAN)

    _run(host, host.operation("scan-wifi"))

    status = _last_status(host, "scan-wifi-1")
    assert status["phase"] == "Succeeded", status["message"]
    published = [(network["ssid"], network["ssidEscaped"]) for network in status["networks"]]
    assert published == [
        ("Halo Home", False),
        ("Clear\\x1b[2J\\x1b]0;owned\\x07", True),
        ("Two\\x0aLines", True),
        ("Nul\\x00Byte", True),
        ("\\u202egpj.exe", True),
        ("Back\\slash", False),
        ("Café", False),
        ("Bad\\xffUTF-8", True),
    ]
    assert all(network["ssid"].isprintable() for network in status["networks"])
    assert all(text.isprintable() for text in (status["message"], status["reason"]))


def test_an_unexpected_error_in_the_middle_of_a_network_change_rolls_it_back_and_keeps_no_saved_file(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.host_agent.actions import network

    host.add_wifi_card()
    host.cluster.put_secret({"interface": "wlan0", "ssid": "Halo Home", "password": PASSWORD})
    before = host.snapshot()
    write = network.durable_write

    def written_then_broken(path: Path, text: str | bytes, *, mode: int = 0o600) -> None:
        write(path, text, mode=mode)
        raise RuntimeError("a stand-in's unexpected error")

    monkeypatch.setattr(network, "durable_write", written_then_broken)

    _run(host, host.operation())

    status = _last_status(host, "configure-network-1")
    assert (status["phase"], status["reason"]) == ("RolledBack", "Interrupted")
    assert "RuntimeError" in status["message"] and PASSWORD not in status["message"]
    assert host.snapshot() == before and host.applies() == 1
    entry = host.journal.read("uid-configure-network-1")
    assert entry is not None and entry.stage is Stage.FINISHED and entry.data == {}
