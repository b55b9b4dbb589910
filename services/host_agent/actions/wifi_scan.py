"""scan-wifi runs `iw dev <interface> scan` on each wireless interface and reports the networks
(SSID, signal, security) in its status, strongest first: hidden networks are left out, each SSID
appears once (its strongest signal), and no BSSID (a MAC address) is ever read into the result.

An SSID is any 1 to 32 bytes, chosen by whoever runs the access point, and a status is read in
terminals: an SSID is published as printable text (text.printable), with `ssidEscaped: true`
when it had to be escaped. One longer than 32 bytes is no SSID and is left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from api.hostoperations import MAX_SCANNED_NETWORKS, HostOperationReason, HostPhase
from services.host_agent.actions.base import Action, ActionContext, Step
from services.host_agent.actions.text import printable
from services.host_agent.journal import Entry, Outcome
from services.host_agent.requests import HostOperation, failed

MAX_NETWORKS: Final = MAX_SCANNED_NETWORKS
"""scan-wifi reports at most this many networks, the strongest."""
MAX_SSID_BYTES: Final = 32


@dataclass(frozen=True)
class WifiNetwork:
    interface: str
    ssid: str
    """Printable: escaped when ssid_escaped (text.printable)."""
    signal_dbm: int
    security: str
    ssid_escaped: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {
            "interface": self.interface,
            "ssid": self.ssid,
            "ssidEscaped": self.ssid_escaped,
            "signalDbm": self.signal_dbm,
            "security": self.security,
        }


_ESCAPED_BYTE = re.compile(r"\\x([0-9a-fA-F]{2})")


def _unescaped(text: str) -> bytes:
    """The SSID's bytes: iw prints those that are not printable ASCII (and spaces at either end,
    backslashes) as \\xNN."""
    out = bytearray()
    position = 0
    for match in _ESCAPED_BYTE.finditer(text):
        out += text[position : match.start()].encode()
        out.append(int(match.group(1), 16))
        position = match.end()
    out += text[position:].encode()
    return bytes(out)


def _network(block: Sequence[str], interface: str) -> WifiNetwork | None:
    ssid: bytes | None = None
    signal: int | None = None
    rsn = wpa = privacy = False
    for line in block:
        if not line.startswith("\t") or line.startswith("\t\t"):
            continue
        key, _, value = line[1:].partition(":")
        if key == "SSID":
            ssid = _unescaped(value.strip())
        elif key == "signal":
            try:
                signal = round(float(value.split()[0]))
            except (ValueError, IndexError):
                signal = None
        elif key == "RSN":
            rsn = True
        elif key == "WPA":
            wpa = True
        elif key == "capability":
            privacy = "Privacy" in value.split()
    if ssid is None or not ssid.strip(b"\x00") or len(ssid) > MAX_SSID_BYTES or signal is None:
        return None
    security = "wpa2" if rsn else "wpa" if wpa else "wep" if privacy else "open"
    shown, escaped = printable(ssid)
    return WifiNetwork(interface=interface, ssid=shown, ssid_escaped=escaped, signal_dbm=signal, security=security)


def parse_iw_scan(text: str, interface: str) -> list[WifiNetwork]:
    """The networks of `iw dev <interface> scan` output, hidden ones left out; BSSIDs are not read. Pure."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("BSS "):
            blocks.append([])
        elif blocks:
            blocks[-1].append(line)
    return [network for network in (_network(block, interface) for block in blocks) if network is not None]


def strongest(networks: Sequence[WifiNetwork], limit: int = MAX_NETWORKS) -> list[WifiNetwork]:
    """One network per SSID (its strongest signal), strongest first, at most `limit`. Pure."""
    best: dict[tuple[str, bool], WifiNetwork] = {}
    for network in networks:
        key = (network.ssid, network.ssid_escaped)
        if key not in best or network.signal_dbm > best[key].signal_dbm:
            best[key] = network
    return sorted(best.values(), key=lambda n: (-n.signal_dbm, n.ssid, n.interface))[:limit]


class ScanWifi(Action):
    action = "scan-wifi"

    def _wireless(self, context: ActionContext) -> list[str]:
        return [interface.name for interface in context.host.facts.interfaces if interface.wireless]

    def check(self, operation: HostOperation, context: ActionContext) -> Outcome | None:
        if not self._wireless(context):
            return failed(
                HostOperationReason.NO_WIFI_INTERFACE,
                "spec.action: scan-wifi needs a wireless interface; this host has none",
            )
        return None

    def announce(self, operation: HostOperation) -> Outcome:
        return Outcome(
            phase=HostPhase.RUNNING, reason=HostOperationReason.IN_PROGRESS.value, message="scanning for Wi-Fi networks"
        )

    def execute(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step:
        found: list[WifiNetwork] = []
        scanned: list[str] = []
        failures: list[str] = []
        for interface in self._wireless(context):
            result = context.runner.run(["iw", "dev", interface, "scan"])
            if result.ok:
                scanned.append(interface)
                found += parse_iw_scan(result.stdout, interface)
            else:
                failures.append(result.failure())
        if not scanned:
            return Step(
                failed(HostOperationReason.COMMAND_FAILED, "; ".join(failures) or "no wireless interface was scanned")
            )
        networks = strongest(found)
        unique = len({(network.ssid, network.ssid_escaped) for network in found})
        shown = f", the strongest {len(networks)} shown" if unique > len(networks) else ""
        failed_too = f"; {'; '.join(failures)}" if failures else ""
        return Step(
            Outcome(
                phase=HostPhase.SUCCEEDED,
                reason=HostOperationReason.COMPLETED.value,
                message=f"found {unique} Wi-Fi networks on {', '.join(scanned)}{shown}{failed_too}",
                details={"networks": [network.to_wire() for network in networks]},
            )
        )


SCAN_WIFI = ScanWifi()
