"""Settings of one run, read from the stack's Pulumi config (namespace `magicstick`).

Every key is documented in Pulumi.yaml; this module only reads and types them. The access keys
(single sign-on, the shared Gateway, the access guard) are checked by program.access_config.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pulumi

from planning.settings import DEFAULT_STACK_NAME, DEFAULT_SYSTEM_NAMESPACE, PlanSettings
from program.access_config import ACCESS_KEYS, CONFIG_NAMESPACE, access_settings
from program.errors import RunSettingsError

__all__ = [
    "CONFIG_KEYS",
    "CONFIG_NAMESPACE",
    "RUN_KEYS",
    "RunSettingsError",
    "Settings",
    "parse_now",
    "parse_stack_name",
]

RUN_KEYS = (
    "kubeconfig",
    "context",
    "systemNamespace",
    "domain",
    "localDomain",
    "catalogDir",
    "snapshotFile",
    "now",
    "stackName",
)
"""The keys of the run itself; the access keys are program.access_config.ACCESS_KEYS."""
CONFIG_KEYS = RUN_KEYS + tuple(entry.key for entry in ACCESS_KEYS)
"""Every `magicstick:` key, as Pulumi.yaml declares them."""


@dataclass(frozen=True)
class Settings:
    plan: PlanSettings
    kubeconfig: str | None
    context: str | None
    catalog_dir: Path | None
    snapshot_file: Path | None
    now: datetime

    @classmethod
    def from_config(cls, config: pulumi.Config | None = None) -> Settings:
        config = config or pulumi.Config(CONFIG_NAMESPACE)
        catalog_dir = config.get("catalogDir")
        snapshot_file = config.get("snapshotFile")
        return cls(
            plan=PlanSettings(
                system_namespace=config.get("systemNamespace") or DEFAULT_SYSTEM_NAMESPACE,
                domain=config.get("domain") or PlanSettings.domain,
                local_domain=config.get("localDomain") or PlanSettings.local_domain,
                access=access_settings({entry.key: config.get(entry.key) for entry in ACCESS_KEYS}),
                stack_name=parse_stack_name(config.get("stackName")),
            ),
            # Pulumi.yaml declares "" for these (the CLI would otherwise require them): unset.
            kubeconfig=config.get("kubeconfig") or None,
            context=config.get("context") or None,
            catalog_dir=Path(catalog_dir) if catalog_dir else None,
            snapshot_file=Path(snapshot_file) if snapshot_file else None,
            now=parse_now(config.get("now")),
        )


STACK_NAME_LIMIT = 42
"""PKO refuses a Stack whose name is longer (its CRD's validation rule)."""
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def parse_stack_name(value: str | None) -> str:
    """The PKO Stack the program runs under: the configured name, else `magicstick`."""
    if not value:
        return DEFAULT_STACK_NAME
    if len(value) > STACK_NAME_LIMIT or not _DNS_SUBDOMAIN.fullmatch(value):
        raise RunSettingsError(
            f"magicstick:stackName: '{value}' is not a Stack name (lower case letters, digits, '-' and '.', "
            f"at most {STACK_NAME_LIMIT} characters)"
        )
    return value


def format_now(moment: datetime) -> str:
    """`moment` as parse_now reads it back: RFC 3339 in UTC, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_now(value: str | None) -> datetime:
    """The run's clock: the configured RFC 3339 instant (offline renders), else the wall clock."""
    if not value:
        return datetime.now(UTC).replace(microsecond=0)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as error:
        raise RunSettingsError(
            f"magicstick:now: '{value}' is not an RFC 3339 time such as 2026-01-01T00:00:00Z"
        ) from error
    if moment.tzinfo is None:
        raise RunSettingsError(f"magicstick:now: '{value}' needs a time zone, for example a trailing Z")
    return moment.astimezone(UTC)
