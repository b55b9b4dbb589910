"""The settings a configure-network Secret holds, validated, and the netplan file they make.

The rules are configure-network's (network.py): a refusal names the key and its rule, never the
value. Every value is bounded (MAX_VALUE_CHARS) and printable text: no control, format or
line-break character reaches the netplan file, whose values are quoted anyway. IP addresses
take no zone ID (`fe80::1%eth0`: Python's ipaddress accepts any text after the `%`, netplan
refuses every zone ID, and the interface of a link-local address is key 'interface' already).
Interface names are Linux's: 1 to 15 of [A-Za-z0-9_.-]. There is no route but the default
route through 'gateway', and no DNS search domain: any other key is refused.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from services.host_agent.actions.text import one_line
from services.host_agent.facts import NetworkInterface
from services.host_agent.requests import HostOperation

SECRET_KEYS: Final = ("interface", "ssid", "password", "addresses", "gateway", "nameservers")
"""Every key a configure-network Secret may hold."""
MAX_SSID_BYTES: Final = 32
MAX_LIST_ITEMS: Final = 16
MAX_VALUE_CHARS: Final = 1024
"""Longer than 16 IPv6 addresses with their prefixes: no setting needs more."""
_HEX_KEY = re.compile(r"[0-9a-fA-F]{64}")
_INTERFACE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_IP_KEYS: Final = ("addresses", "gateway", "nameservers")


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


@dataclass(frozen=True)
class SecretRefusal:
    """Why a Secret's data cannot be used: a key and its rule, never a value."""

    key: str
    """The key the rule is about; "" when the data as a whole breaks it."""
    rule: str

    @property
    def names_a_setting(self) -> bool:
        """The key is one of SECRET_KEYS: naming it tells nothing of the Secret's other keys."""
        return self.key in SECRET_KEYS

    def text(self, where: str) -> str:
        return f"{where} key {self.key!r}: {self.rule}" if self.key else f"{where}: {self.rule}"


def where(namespace: str, name: str) -> str:
    """How a status names the Secret `name` of the network Secrets' namespace."""
    return f"Secret {namespace}/{name}"


def _decoded(data: Mapping[str, Any]) -> dict[str, str] | SecretRefusal:
    """The Secret's values as bounded printable text; an unknown key or any other value is refused."""
    values: dict[str, str] = {}
    for key in sorted(data):
        if key not in SECRET_KEYS:
            return SecretRefusal(key, f"is not a configure-network setting (the keys are {', '.join(SECRET_KEYS)})")
        raw = data[key]
        try:
            if not isinstance(raw, str):
                raise ValueError
            value = base64.b64decode(raw, validate=True).decode("utf-8")
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return SecretRefusal(key, "must be base64-encoded UTF-8 text")
        if len(value) > MAX_VALUE_CHARS:
            return SecretRefusal(key, f"must be at most {MAX_VALUE_CHARS} characters")
        if not value.isprintable():
            return SecretRefusal(key, "must be printable text: no control, format or line-break character")
        values[key] = value
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
    return 1 <= len(ssid.encode()) <= MAX_SSID_BYTES and ssid.isprintable()


def _password_ok(password: str) -> bool:
    """A WPA passphrase (8 to 63 printable ASCII characters) or a raw key (64 hex digits)."""
    if _HEX_KEY.fullmatch(password):
        return True
    return 8 <= len(password) <= 63 and all(" " <= ch <= "~" for ch in password)


def network_settings(data: Any, interfaces: Sequence[NetworkInterface]) -> NetworkSettings | SecretRefusal:
    """The settings a Secret's `data` describes on a host with `interfaces`, or the refusal
    naming the key and its rule (never the value). Pure."""
    if not isinstance(data, Mapping):
        return SecretRefusal("", "its data must map keys to base64 values")
    values = _decoded(data)
    if isinstance(values, SecretRefusal):
        return values
    zoned = next((key for key in _IP_KEYS if "%" in values.get(key, "")), None)
    if zoned is not None:
        return SecretRefusal(
            zoned,
            "must hold IP addresses without a zone ID ('%' and what follows): netplan accepts none, and the interface is key 'interface'",
        )
    known = {interface.name: interface for interface in interfaces}
    name = values.get("interface", "").strip()
    if not _INTERFACE.fullmatch(name) or name not in known:
        listed = ", ".join(sorted(known)) or "none"
        return SecretRefusal(
            "interface", f"is required and must name one of this host's network interfaces ({one_line(listed)})"
        )
    wireless = known[name].wireless
    ssid, password = values.get("ssid"), values.get("password")
    if password is not None and ssid is None:
        return SecretRefusal("password", "is accepted only with key 'ssid' (a Wi-Fi network)")
    if ssid is not None and not wireless:
        return SecretRefusal("ssid", "needs a wireless interface; the interface of key 'interface' is not wireless")
    if ssid is None and wireless:
        return SecretRefusal("ssid", "is required: the interface of key 'interface' is wireless")
    if ssid is not None and not _ssid_ok(ssid):
        return SecretRefusal("ssid", f"must be 1 to {MAX_SSID_BYTES} bytes of UTF-8 without control characters")
    if password is not None and not _password_ok(password):
        return SecretRefusal(
            "password",
            "must be a WPA passphrase of 8 to 63 printable ASCII characters (no newline) or 64 hexadecimal digits",
        )
    addresses: tuple[str, ...] = ()
    if "addresses" in values:
        parsed = _addresses(values["addresses"])
        if not parsed:
            return SecretRefusal(
                "addresses",
                f"must be 1 to {MAX_LIST_ITEMS} comma-separated IP addresses, each with its prefix length (192.0.2.10/24)",
            )
        addresses = parsed
    gateway: str | None = None
    if "gateway" in values:
        parsed = _ips(values["gateway"])
        if parsed is None or len(parsed) != 1:
            return SecretRefusal("gateway", "must be one IP address")
        if not addresses:
            return SecretRefusal("gateway", "is accepted only with key 'addresses' (DHCP provides the gateway)")
        versions = {ipaddress.ip_interface(address).version for address in addresses}
        if ipaddress.ip_address(parsed[0]).version not in versions:
            return SecretRefusal("gateway", "must be of the IP version of one of the addresses")
        gateway = parsed[0]
    nameservers: tuple[str, ...] = ()
    if "nameservers" in values:
        parsed = _ips(values["nameservers"])
        if not parsed:
            return SecretRefusal("nameservers", f"must be 1 to {MAX_LIST_ITEMS} comma-separated IP addresses")
        nameservers = parsed
    return NetworkSettings(
        interface=name,
        wireless=wireless,
        ssid=ssid,
        password=password,
        addresses=addresses,
        gateway=gateway,
        nameservers=nameservers,
    )


def quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(text, ensure_ascii=False)


def netplan_yaml(settings: NetworkSettings, operation: HostOperation) -> str:
    """The agent's netplan file (YAML, version 2) for `settings`. Pure."""
    lines = [
        f"# Written by the Magic Stick host agent for HostOperation {one_line(operation.key)} (request {one_line(operation.request_id)}).",
        "# Rolled back unless confirmed in time; the previous files are kept in the agent's journal.",
        "network:",
        "  version: 2",
        f"  {'wifis' if settings.wireless else 'ethernets'}:",
        f"    {quoted(settings.interface)}:",
    ]
    if settings.addresses:
        lines += ["      dhcp4: false", "      dhcp6: false", "      addresses:"]
        lines += [f"        - {quoted(address)}" for address in settings.addresses]
        if settings.gateway is not None:
            lines += ["      routes:", "        - to: default", f"          via: {quoted(settings.gateway)}"]
    else:
        lines.append("      dhcp4: true")
    if settings.nameservers:
        lines += ["      nameservers:", f"        addresses: [{', '.join(quoted(ip) for ip in settings.nameservers)}]"]
    if settings.ssid is not None:
        lines.append("      access-points:")
        if settings.password is None:
            lines.append(f"        {quoted(settings.ssid)}: {{}}")
        else:
            lines += [f"        {quoted(settings.ssid)}:", f"          password: {quoted(settings.password)}"]
    return "\n".join(lines) + "\n"
