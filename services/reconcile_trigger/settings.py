"""The trigger's configuration: command-line flags, each with an environment fallback.

A flag given on the command line wins over its environment variable, which wins over the
default. Every value is validated before anything connects; an invalid one is reported in one
line that names the flag (and the variable when the value came from there).

Cluster access is not a flag: the kubeconfig named by KUBECONFIG, else ~/.kube/config, else the
in-cluster ServiceAccount (providers.kube.KubeAccess, client-go's loading rules).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.flags import LOG_LEVELS, Flag, ListenAddress, SettingsError, listen_address, raw_values

PROGRAM = "magicstick-reconcile-trigger"
ENV_PREFIX = "MAGICSTICK_RECONCILE_TRIGGER_"
DEFAULT_STACK_NAMESPACE = "ai-system"
DEFAULT_STACK_NAME = "magicstick"
DEFAULT_SYSTEM_NAMESPACE = "ai-system"
DEFAULT_TARGET_NAMESPACES = "ai"
DEFAULT_QUIET_MS = 500
DEFAULT_MAX_DELAY_MS = 2000
DEFAULT_RESYNC_SECONDS = 300
"""PKO's resyncFrequencySeconds of the Stack (deploy/stack.yaml)."""
DEFAULT_PROBE_ADDRESS = ListenAddress("0.0.0.0", 8081)
MAX_MILLISECONDS = 3_600_000
MAX_SECONDS = 86_400

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_DIGITS = re.compile(r"[0-9]{1,10}")


@dataclass(frozen=True)
class TriggerSettings:
    stack_namespace: str = DEFAULT_STACK_NAMESPACE
    stack_name: str = DEFAULT_STACK_NAME
    """The PKO Stack whose `pulumi.com/reconciliation-request` annotation requests a run."""
    system_namespace: str = DEFAULT_SYSTEM_NAMESPACE
    """Where the runtime resources (but ApplianceSetup), the HelmReleases and shared ConfigMaps live."""
    target_namespaces: tuple[str, ...] = (DEFAULT_TARGET_NAMESPACES,)
    """Where KubeAI Models, their Pods and the direct runtimes run; sorted, each once."""
    gateway_namespace: str = DEFAULT_SYSTEM_NAMESPACE
    """Where the instances' HTTPRoutes and SecurityPolicies live (by default the system namespace)."""
    quiet_seconds: float = DEFAULT_QUIET_MS / 1000
    """A burst of changes is requested once it has been quiet this long..."""
    max_delay_seconds: float = DEFAULT_MAX_DELAY_MS / 1000
    """...or once its first change is this old, whichever comes first."""
    resync_seconds: int = DEFAULT_RESYNC_SECONDS
    """The Stack's resync interval: status churn is held back at most this long."""
    probe_address: ListenAddress = DEFAULT_PROBE_ADDRESS
    """Where /healthz and /readyz are served."""
    log_level: str = "info"


_FLAGS = (
    Flag("--stack-namespace", "namespace of the PKO Stack to request runs of", DEFAULT_STACK_NAMESPACE),
    Flag("--stack-name", "name of the PKO Stack to request runs of", DEFAULT_STACK_NAME),
    Flag("--system-namespace", "the program's system namespace (magicstick:systemNamespace)", DEFAULT_SYSTEM_NAMESPACE),
    Flag("--target-namespaces", "comma-separated namespaces of models and instances", DEFAULT_TARGET_NAMESPACES),
    Flag("--gateway-namespace", "namespace of the instances' routes and policies; default: the system namespace"),
    Flag("--quiet-ms", "request a run once changes have been quiet this long, milliseconds", str(DEFAULT_QUIET_MS)),
    Flag("--max-delay-ms", "request a run at the latest this long after the first change, milliseconds", str(DEFAULT_MAX_DELAY_MS)),
    Flag("--resync-seconds", "the Stack's resyncFrequencySeconds: status churn is held back at most this long", str(DEFAULT_RESYNC_SECONDS)),
    Flag("--probe-address", "where /healthz and /readyz are served, HOST:PORT ([HOST]:PORT for IPv6)", str(DEFAULT_PROBE_ADDRESS)),
    Flag("--log-level", f"one of {', '.join(LOG_LEVELS)}", "info"),
)


DESCRIPTION = "Request a run of the Magic Stick program's PKO Stack when what it reads changes."


def parse_settings(argv: Sequence[str], environ: Mapping[str, str]) -> TriggerSettings:
    """The validated settings from `argv` (without the program name) and `environ`.

    Raises SettingsError with a one-line message naming the offending flag.
    """
    raw = raw_values(_FLAGS, argv, environ, program=PROGRAM, description=DESCRIPTION, env_prefix=ENV_PREFIX)
    system_namespace = _namespace(*raw["system_namespace"])
    gateway_value, gateway_origin = raw["gateway_namespace"]
    quiet_ms = _milliseconds(*raw["quiet_ms"])
    max_delay_ms = _milliseconds(*raw["max_delay_ms"])
    if max_delay_ms < quiet_ms:
        raise SettingsError(f"{raw['max_delay_ms'][1]}: {max_delay_ms} is shorter than --quiet-ms ({quiet_ms})")
    resync_seconds = _seconds(*raw["resync_seconds"])
    if resync_seconds * 1000 < max_delay_ms:
        raise SettingsError(f"{raw['resync_seconds'][1]}: {resync_seconds} s is shorter than --max-delay-ms ({max_delay_ms} ms)")
    return TriggerSettings(
        stack_namespace=_namespace(*raw["stack_namespace"]),
        stack_name=_name(*raw["stack_name"]),
        system_namespace=system_namespace,
        target_namespaces=_namespaces(*raw["target_namespaces"]),
        gateway_namespace=system_namespace if gateway_value is None else _namespace(gateway_value, gateway_origin),
        quiet_seconds=quiet_ms / 1000,
        max_delay_seconds=max_delay_ms / 1000,
        resync_seconds=resync_seconds,
        probe_address=listen_address(_required(*raw["probe_address"]), raw["probe_address"][1]),
        log_level=_choice(*raw["log_level"], LOG_LEVELS),
    )


def _required(value: str | None, origin: str) -> str:
    if value is None or not value.strip():
        raise SettingsError(f"{origin}: a value is required")
    if value != value.strip():
        raise SettingsError(f"{origin}: {value!r} has surrounding whitespace")
    return value


def _namespace(value: str | None, origin: str) -> str:
    text = _required(value, origin)
    if not _DNS_LABEL.fullmatch(text):
        raise SettingsError(f"{origin}: {text!r} is not a namespace name (a DNS label: lower case, digits, '-', at most 63)")
    return text


def _namespaces(value: str | None, origin: str) -> tuple[str, ...]:
    text = _required(value, origin)
    names = [part.strip() for part in text.split(",")]
    if any(not name for name in names):
        raise SettingsError(f"{origin}: {text!r} holds an empty namespace name")
    for name in names:
        if not _DNS_LABEL.fullmatch(name):
            raise SettingsError(f"{origin}: {name!r} is not a namespace name (a DNS label: lower case, digits, '-', at most 63)")
    return tuple(sorted(set(names)))


def _name(value: str | None, origin: str) -> str:
    text = _required(value, origin)
    if not _DNS_SUBDOMAIN.fullmatch(text):
        raise SettingsError(f"{origin}: {text!r} is not an object name (a DNS subdomain)")
    return text


def _milliseconds(value: str | None, origin: str) -> int:
    text = _required(value, origin)
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= MAX_MILLISECONDS:
        raise SettingsError(f"{origin}: {text!r} is not a whole number of milliseconds from 1 to {MAX_MILLISECONDS}")
    return int(text)


def _seconds(value: str | None, origin: str) -> int:
    text = _required(value, origin)
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= MAX_SECONDS:
        raise SettingsError(f"{origin}: {text!r} is not a whole number of seconds from 1 to {MAX_SECONDS}")
    return int(text)


def _choice(value: str | None, origin: str, choices: tuple[str, ...]) -> str:
    text = _required(value, origin).lower()
    if text not in choices:
        raise SettingsError(f"{origin}: {value!r} is not one of {', '.join(choices)}")
    return text
