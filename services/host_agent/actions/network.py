"""configure-network and scan-wifi: the host's network, changed only with a way back.

configure-network binds the network plan (the interface inventory and the netplan files, by
planId) and names one Secret of the operation's namespace, pinned by UID (spec.networkRef). The
Secret's data (base64, as the API server returns it) holds the whole configuration:

- `interface` (required): one of the host's interfaces;
- `ssid`, optional `password`: a Wi-Fi network (the interface must be wireless; a wireless
  interface needs an ssid); no password is an open network;
- `addresses` (comma-separated CIDRs), `gateway` (an IP, with addresses), `nameservers`
  (comma-separated IPs): a static configuration; without addresses the interface uses DHCP.

Any other key, or a value that breaks its rule, is refused (NetworkSecretInvalid) in a message
naming the key and the rule, never the value; the password is never put in a status, a log
line, the journal or an exception.

The `started` entry keeps every netplan file as it was (netplan.saved_configuration). The agent
then writes its own file (/etc/netplan/90-magicstick.yaml, mode 0600), lets `netplan generate`
judge the whole configuration (refused: the saved files are restored, nothing was applied) and
runs `netplan apply`. The operation then waits (AwaitingConfirmation, stage `applied`) until
the annotation CONFIRMATION_ANNOTATION carries its requestID (Succeeded: Confirmed) or the
confirmation deadline passes: the saved files are restored and applied again (RolledBack:
ConfirmationTimedOut). The deadline is kept in the journal entry, so it survives restarts. An
agent that stopped mid-change (`started` only) restores and applies the saved files too
(RolledBack: Interrupted): a rollback, never a repeat of the change.

scan-wifi runs `iw dev <interface> scan` on each wireless interface and reports the networks
(SSID, signal, security) in its status, strongest first: hidden networks are left out, each SSID
appears once (its strongest signal), and no BSSID (a MAC address) is ever read into the result.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from api.hostoperations import HostPhase, CONFIRMATION_ANNOTATION, HostOperationReason
from services.host_agent.actions.base import Action, ActionContext, Step, uncertain
from services.host_agent.commands import CommandResult
from services.host_agent.evidence import rfc3339
from services.host_agent.facts import NetworkInterface
from services.host_agent.journal import Entry, Outcome, Stage, durable_write
from services.host_agent.netplan import NETPLAN_DIR, NETPLAN_FILE, netplan_dir, restore_configuration, saved_configuration
from services.host_agent.requests import HostOperation, failed

SECRET_KEYS: Final = ("interface", "ssid", "password", "addresses", "gateway", "nameservers")
"""Every key a configure-network Secret may hold."""
MAX_SSID_BYTES: Final = 32
MAX_LIST_ITEMS: Final = 16
MAX_NETWORKS: Final = 50
"""scan-wifi reports at most this many networks, the strongest."""
REDACTED: Final = "[redacted]"
_CREDENTIAL_WORDS = re.compile(r"password|passphrase|psk", re.IGNORECASE)
_HEX_KEY = re.compile(r"[0-9a-fA-F]{64}")
_TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class NetworkSettings:
    """A configure-network Secret's settings, validated. Its repr never shows the password."""

    interface: str
    wireless: bool
    ssid: str | None = None
    password: str | None = field(default=None, repr=False)
    addresses: tuple[str, ...] = ()
    gateway: str | None = None
    nameservers: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """What is configured, without the SSID or the password: "Wi-Fi with DHCP on wlan0"."""
        kind = "Wi-Fi" if self.wireless else "Ethernet"
        addressing = f"static addresses ({len(self.addresses)})" if self.addresses else "DHCP"
        return f"{kind} with {addressing} on {self.interface}"


def _where(operation: HostOperation, name: str) -> str:
    return f"Secret {operation.namespace}/{name}"


def _invalid(where: str, key: str, rule: str) -> Outcome:
    return failed(HostOperationReason.NETWORK_SECRET_INVALID, f"{where} key {key!r}: {rule}")


def _decoded(data: Mapping[str, Any], where: str) -> dict[str, str] | Outcome:
    """The Secret's values as text; an unknown key or a value that is not base64 UTF-8 is refused."""
    values: dict[str, str] = {}
    for key in sorted(data):
        if key not in SECRET_KEYS:
            return _invalid(where, key, f"is not a configure-network setting (the keys are {', '.join(SECRET_KEYS)})")
        raw = data[key]
        try:
            if not isinstance(raw, str):
                raise ValueError
            values[key] = base64.b64decode(raw, validate=True).decode("utf-8")
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return _invalid(where, key, "must be base64-encoded UTF-8 text")
    return values


def _items(text: str) -> list[str] | None:
    """The comma-separated items of `text`, or None when one is empty or there are too many."""
    items = [item.strip() for item in text.split(",")]
    if not items or any(not item for item in items) or len(items) > MAX_LIST_ITEMS:
        return None
    return items


def _addresses(text: str) -> tuple[str, ...] | None:
    items = _items(text)
    if items is None or any("/" not in item for item in items):
        return None
    try:
        return tuple(str(ipaddress.ip_interface(item)) for item in items)
    except ValueError:
        return None


def _ips(text: str) -> tuple[str, ...] | None:
    items = _items(text)
    if items is None:
        return None
    try:
        return tuple(str(ipaddress.ip_address(item)) for item in items)
    except ValueError:
        return None


def _ssid_ok(ssid: str) -> bool:
    return 1 <= len(ssid.encode()) <= MAX_SSID_BYTES and all(ch.isprintable() for ch in ssid)


def _password_ok(password: str) -> bool:
    """A WPA passphrase (8 to 63 printable ASCII characters) or a raw key (64 hex digits)."""
    if _HEX_KEY.fullmatch(password):
        return True
    return 8 <= len(password) <= 63 and all(" " <= ch <= "~" for ch in password)


def network_settings(data: Any, interfaces: Sequence[NetworkInterface], where: str) -> NetworkSettings | Outcome:
    """The settings a Secret's `data` describes on a host with `interfaces`, or the refusal
    naming the key and its rule (never the value). Pure."""
    if not isinstance(data, Mapping):
        return failed(HostOperationReason.NETWORK_SECRET_INVALID, f"{where}: its data must map keys to base64 values")
    values = _decoded(data, where)
    if isinstance(values, Outcome):
        return values
    known = {interface.name: interface for interface in interfaces}
    name = values.get("interface", "").strip()
    if name not in known:
        listed = ", ".join(sorted(known)) or "none"
        return _invalid(where, "interface", f"is required and must name one of this host's network interfaces ({listed})")
    wireless = known[name].wireless
    ssid, password = values.get("ssid"), values.get("password")
    if password is not None and ssid is None:
        return _invalid(where, "password", "is accepted only with key 'ssid' (a Wi-Fi network)")
    if ssid is not None and not wireless:
        return _invalid(where, "ssid", "needs a wireless interface; the interface of key 'interface' is not wireless")
    if ssid is None and wireless:
        return _invalid(where, "ssid", "is required: the interface of key 'interface' is wireless")
    if ssid is not None and not _ssid_ok(ssid):
        return _invalid(where, "ssid", f"must be 1 to {MAX_SSID_BYTES} bytes of UTF-8 without control characters")
    if password is not None and not _password_ok(password):
        return _invalid(where, "password", "must be a WPA passphrase of 8 to 63 printable ASCII characters (no newline) or 64 hexadecimal digits")
    addresses: tuple[str, ...] = ()
    if "addresses" in values:
        parsed = _addresses(values["addresses"])
        if not parsed:
            return _invalid(
                where, "addresses", f"must be 1 to {MAX_LIST_ITEMS} comma-separated IP addresses, each with its prefix length (192.0.2.10/24)"
            )
        addresses = parsed
    gateway: str | None = None
    if "gateway" in values:
        parsed = _ips(values["gateway"])
        if parsed is None or len(parsed) != 1:
            return _invalid(where, "gateway", "must be one IP address")
        if not addresses:
            return _invalid(where, "gateway", "is accepted only with key 'addresses' (DHCP provides the gateway)")
        versions = {ipaddress.ip_interface(address).version for address in addresses}
        if ipaddress.ip_address(parsed[0]).version not in versions:
            return _invalid(where, "gateway", "must be of the IP version of one of the addresses")
        gateway = parsed[0]
    nameservers: tuple[str, ...] = ()
    if "nameservers" in values:
        parsed = _ips(values["nameservers"])
        if not parsed:
            return _invalid(where, "nameservers", f"must be 1 to {MAX_LIST_ITEMS} comma-separated IP addresses")
        nameservers = parsed
    return NetworkSettings(
        interface=name, wireless=wireless, ssid=ssid, password=password, addresses=addresses, gateway=gateway, nameservers=nameservers
    )


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(text, ensure_ascii=False)


def netplan_yaml(settings: NetworkSettings, operation: HostOperation) -> str:
    """The agent's netplan file (YAML, version 2) for `settings`. Pure."""
    lines = [
        f"# Written by the Magic Stick host agent for HostOperation {operation.key} (request {operation.request_id}).",
        "# Rolled back unless confirmed in time; the previous files are kept in the agent's journal.",
        "network:",
        "  version: 2",
        f"  {'wifis' if settings.wireless else 'ethernets'}:",
        f"    {_quoted(settings.interface)}:",
    ]
    if settings.addresses:
        lines += ["      dhcp4: false", "      dhcp6: false", "      addresses:"]
        lines += [f"        - {_quoted(address)}" for address in settings.addresses]
        if settings.gateway is not None:
            lines += ["      routes:", "        - to: default", f"          via: {_quoted(settings.gateway)}"]
    else:
        lines.append("      dhcp4: true")
    if settings.nameservers:
        lines += ["      nameservers:", f"        addresses: [{', '.join(_quoted(ip) for ip in settings.nameservers)}]"]
    if settings.ssid is not None:
        lines.append("      access-points:")
        if settings.password is None:
            lines.append(f"        {_quoted(settings.ssid)}: {{}}")
        else:
            lines += [f"        {_quoted(settings.ssid)}:", f"          password: {_quoted(settings.password)}"]
    return "\n".join(lines) + "\n"


def _withheld(result: CommandResult, secrets: Sequence[str]) -> str:
    """The command's failure in one line, with no credential in it: a known secret is replaced,
    and a line that speaks of a password or key is not shown at all."""
    text = result.failure()
    for secret in secrets:
        for form in {secret, _quoted(secret), _quoted(secret)[1:-1]}:
            if form:
                text = text.replace(form, REDACTED)
    if _CREDENTIAL_WORDS.search(text):
        return f"`{' '.join(result.argv)}` exited with {result.returncode} (its output is withheld: it may quote a credential)"
    return text


def _saved(entry: Entry) -> dict[str, dict[str, str | int]] | None:
    saved = entry.data.get("saved")
    return saved if isinstance(saved, dict) else None


def _restore(context: ActionContext, saved: dict[str, dict[str, str | int]]) -> str | None:
    """Put the saved netplan files back; None, or why it failed."""
    try:
        restore_configuration(context.settings.root, saved)
    except (OSError, ValueError, KeyError) as error:
        detail = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
        return f"the saved netplan files cannot be restored in /{NETPLAN_DIR}: {detail}"
    return None


def _restore_and_apply(context: ActionContext, saved: dict[str, dict[str, str | int]], secrets: Sequence[str] = ()) -> str | None:
    """Restore the saved files and `netplan apply` them; None, or what failed."""
    problem = _restore(context, saved)
    if problem is not None:
        return problem
    applied = context.runner.run(["netplan", "apply"])
    return None if applied.ok else _withheld(applied, secrets)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _deadline(entry: Entry) -> datetime | None:
    try:
        return datetime.strptime(str(entry.data.get("confirmationDeadline") or ""), _TIMESTAMP).replace(tzinfo=UTC)
    except ValueError:
        return None


class ConfigureNetwork(Action):
    action = "configure-network"

    def _settings(self, operation: HostOperation, context: ActionContext) -> NetworkSettings | Outcome:
        spec = operation.spec
        assert spec is not None
        ref = spec.network_ref
        if ref is None:
            return failed(HostOperationReason.REJECTED, "spec.networkRef: is required for configure-network (the Secret holding the settings)")
        where = _where(operation, ref.name)
        secret = context.cluster.secret(ref.name)
        if secret is None:
            return failed(HostOperationReason.NETWORK_SECRET_INVALID, f"spec.networkRef.name: {where} does not exist")
        uid = str((secret.get("metadata") or {}).get("uid") or "")
        if uid != ref.uid:
            return failed(
                HostOperationReason.NETWORK_SECRET_INVALID,
                f"spec.networkRef.uid: {ref.uid} is not the UID of {where}: the Secret was replaced after the request was made; make a new request",
            )
        return network_settings(secret.get("data") or {}, context.host.facts.interfaces, where)

    def check(self, operation: HostOperation, context: ActionContext) -> Outcome | None:
        settings = self._settings(operation, context)
        return settings if isinstance(settings, Outcome) else None

    def announce(self, operation: HostOperation) -> Outcome:
        ref = operation.spec.network_ref if operation.spec is not None else None
        named = f" of {_where(operation, ref.name)}" if ref is not None else ""
        return Outcome(phase=HostPhase.APPLYING, reason=HostOperationReason.IN_PROGRESS.value, message=f"applying the network configuration{named}")

    def journal(self, operation: HostOperation, context: ActionContext) -> dict[str, Any]:
        return {"saved": saved_configuration(context.settings.root)}

    def execute(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step:
        settings = self._settings(operation, context)
        if isinstance(settings, Outcome):
            return Step(settings)
        saved = _saved(entry)
        if saved is None:
            return Step(failed(HostOperationReason.REJECTED, "the journal entry holds no saved netplan configuration; nothing was changed"))
        secrets = [settings.password] if settings.password else []
        root = context.settings.root
        path = netplan_dir(root) / NETPLAN_FILE
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            durable_write(path, netplan_yaml(settings, operation), mode=0o600)
            os.chmod(path, 0o600)
        except OSError as error:
            problem = _restore(context, saved)
            restored = problem or "the saved netplan files are restored"
            return Step(failed(HostOperationReason.COMMAND_FAILED, f"/{NETPLAN_DIR}/{NETPLAN_FILE} cannot be written: {error.strerror}; {restored}"))
        generated = context.runner.run(["netplan", "generate", "--root-dir", str(root)])
        if not generated.ok:
            problem = _restore(context, saved)
            restored = problem or "the saved netplan files are restored"
            return Step(failed(HostOperationReason.COMMAND_FAILED, f"netplan refused the configuration: {_withheld(generated, secrets)}; {restored}; nothing was applied"))
        applied = context.runner.run(["netplan", "apply"])
        if not applied.ok:
            failure = _withheld(applied, secrets)
            problem = _restore_and_apply(context, saved, secrets)
            if problem is None:
                return Step(
                    Outcome(
                        phase=HostPhase.ROLLED_BACK,
                        reason=HostOperationReason.COMMAND_FAILED.value,
                        message=f"{failure}; the saved netplan files are restored and applied again",
                    )
                )
            return Step(failed(HostOperationReason.ROLLBACK_FAILED, f"{failure}; rolling back failed too: {problem}"))
        deadline = rfc3339(_aware(context.now) + timedelta(seconds=context.settings.confirmation_seconds))
        confirm = f"kubectl annotate hostoperation {operation.name} -n {operation.namespace} {CONFIRMATION_ANNOTATION}={operation.request_id}"
        return Step(
            Outcome(
                phase=HostPhase.AWAITING_CONFIRMATION,
                reason=HostOperationReason.AWAITING_CONFIRMATION.value,
                message=f"{settings.summary} is applied; confirm it by {deadline} (`{confirm}`) or it is rolled back",
                details={"confirmationDeadline": deadline},
            ),
            stage=Stage.APPLIED,
            data={"saved": saved, "confirmationDeadline": deadline},
        )

    def follow(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step | None:
        if entry.stage is not Stage.APPLIED:
            return None
        deadline_text = str(entry.data.get("confirmationDeadline") or "")
        kept = {"confirmationDeadline": deadline_text} if deadline_text else {}
        ended = {"confirmationDeadline": deadline_text or "unknown"}
        """The ended entry's data: the saved files (old credentials among them) are not kept longer."""
        if operation.request_id and operation.annotations.get(CONFIRMATION_ANNOTATION) == operation.request_id:
            return Step(
                Outcome(
                    phase=HostPhase.SUCCEEDED,
                    reason=HostOperationReason.CONFIRMED.value,
                    message=f"the network configuration is confirmed ({CONFIRMATION_ANNOTATION}) and stays",
                    details=kept,
                ),
                data=ended,
            )
        deadline = _deadline(entry)
        if deadline is not None and _aware(context.now) < deadline:
            return None
        saved = _saved(entry)
        if saved is None:
            return Step(failed(HostOperationReason.ROLLBACK_FAILED, "not confirmed in time, and the journal entry holds no saved netplan configuration"))
        problem = _restore_and_apply(context, saved)
        if problem is not None:
            return Step(
                Outcome(
                    phase=HostPhase.FAILED,
                    reason=HostOperationReason.ROLLBACK_FAILED.value,
                    message=f"not confirmed by {deadline_text or 'the deadline'}; rolling back failed: {problem}",
                    details=kept,
                ),
                data=ended,
            )
        return Step(
            Outcome(
                phase=HostPhase.ROLLED_BACK,
                reason=HostOperationReason.CONFIRMATION_TIMED_OUT.value,
                message=f"not confirmed by {deadline_text or 'the deadline'}: the saved netplan files are restored and applied again",
                details=kept,
            ),
            data=ended,
        )

    def recover(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Outcome:
        saved = _saved(entry)
        if saved is None:
            return uncertain(entry, "The journal entry holds no saved netplan configuration to restore.")
        problem = _restore_and_apply(context, saved)
        if problem is not None:
            return failed(
                HostOperationReason.ROLLBACK_FAILED,
                f"the agent stopped while applying the network configuration (boot {entry.boot_id}); rolling back failed: {problem}",
            )
        return Outcome(
            phase=HostPhase.ROLLED_BACK,
            reason=HostOperationReason.INTERRUPTED.value,
            message=f"the agent stopped while applying the network configuration (boot {entry.boot_id}); the saved netplan files are "
            "restored and applied again, and the change is not repeated: make a new request if it is still wanted",
        )


@dataclass(frozen=True)
class WifiNetwork:
    interface: str
    ssid: str
    signal_dbm: int
    security: str

    def to_wire(self) -> dict[str, Any]:
        return {"interface": self.interface, "ssid": self.ssid, "signalDbm": self.signal_dbm, "security": self.security}


_ESCAPED_BYTE = re.compile(r"\\x([0-9a-fA-F]{2})")


def _unescaped(text: str) -> str:
    """iw's SSID: non-printable bytes (and spaces at either end, backslashes) as \\xNN."""
    out = bytearray()
    position = 0
    for match in _ESCAPED_BYTE.finditer(text):
        out += text[position : match.start()].encode()
        out.append(int(match.group(1), 16))
        position = match.end()
    out += text[position:].encode()
    return out.decode("utf-8", errors="replace")


def _network(block: Sequence[str], interface: str) -> WifiNetwork | None:
    ssid: str | None = None
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
    if ssid is None or not ssid.strip("\x00") or signal is None:
        return None
    security = "wpa2" if rsn else "wpa" if wpa else "wep" if privacy else "open"
    return WifiNetwork(interface=interface, ssid=ssid, signal_dbm=signal, security=security)


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
    best: dict[str, WifiNetwork] = {}
    for network in networks:
        if network.ssid not in best or network.signal_dbm > best[network.ssid].signal_dbm:
            best[network.ssid] = network
    return sorted(best.values(), key=lambda n: (-n.signal_dbm, n.ssid, n.interface))[:limit]


class ScanWifi(Action):
    action = "scan-wifi"

    def _wireless(self, context: ActionContext) -> list[str]:
        return [interface.name for interface in context.host.facts.interfaces if interface.wireless]

    def check(self, operation: HostOperation, context: ActionContext) -> Outcome | None:
        if not self._wireless(context):
            return failed(HostOperationReason.NO_WIFI_INTERFACE, "spec.action: scan-wifi needs a wireless interface; this host has none")
        return None

    def announce(self, operation: HostOperation) -> Outcome:
        return Outcome(phase=HostPhase.RUNNING, reason=HostOperationReason.IN_PROGRESS.value, message="scanning for Wi-Fi networks")

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
            return Step(failed(HostOperationReason.COMMAND_FAILED, "; ".join(failures) or "no wireless interface was scanned"))
        networks = strongest(found)
        unique = len({network.ssid for network in found})
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


CONFIGURE_NETWORK = ConfigureNetwork()
SCAN_WIFI = ScanWifi()
