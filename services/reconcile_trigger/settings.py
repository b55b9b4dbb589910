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

from services.flags import (
    LOG_LEVELS,
    Flag,
    ListenAddress,
    ServiceFlagError,
    listen_address,
    one_of,
    raw_values,
    required,
    whole_number,
)

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
    Flag(
        "--max-delay-ms",
        "request a run at the latest this long after the first change, milliseconds",
        str(DEFAULT_MAX_DELAY_MS),
    ),
    Flag(
        "--resync-seconds",
        "the Stack's resyncFrequencySeconds: status churn is held back at most this long",
        str(DEFAULT_RESYNC_SECONDS),
    ),
    Flag(
        "--probe-address",
        "where /healthz and /readyz are served, HOST:PORT ([HOST]:PORT for IPv6)",
        str(DEFAULT_PROBE_ADDRESS),
    ),
    Flag("--log-level", f"one of {', '.join(LOG_LEVELS)}", "info"),
)


DESCRIPTION = "Request a run of the Magic Stick program's PKO Stack when what it reads changes."


def parse_settings(argv: Sequence[str], environ: Mapping[str, str]) -> TriggerSettings:
    """The validated settings from `argv` (without the program name) and `environ`.

    Raises ServiceFlagError with a one-line message naming the offending flag.
    """
    raw = raw_values(_FLAGS, argv, environ, program=PROGRAM, description=DESCRIPTION, env_prefix=ENV_PREFIX)
    system_namespace = _namespace(*raw["system_namespace"])
    gateway_value, gateway_origin = raw["gateway_namespace"]
    quiet_ms = _milliseconds(*raw["quiet_ms"])
    max_delay_ms = _milliseconds(*raw["max_delay_ms"])
    if max_delay_ms < quiet_ms:
        raise ServiceFlagError(f"{raw['max_delay_ms'][1]}: {max_delay_ms} is shorter than --quiet-ms ({quiet_ms})")
    resync_seconds = _seconds(*raw["resync_seconds"])
    if resync_seconds * 1000 < max_delay_ms:
        raise ServiceFlagError(
            f"{raw['resync_seconds'][1]}: {resync_seconds} s is shorter than --max-delay-ms ({max_delay_ms} ms)"
        )
    return TriggerSettings(
        stack_namespace=_namespace(*raw["stack_namespace"]),
        stack_name=_name(*raw["stack_name"]),
        system_namespace=system_namespace,
        target_namespaces=_namespaces(*raw["target_namespaces"]),
        gateway_namespace=system_namespace if gateway_value is None else _namespace(gateway_value, gateway_origin),
        quiet_seconds=quiet_ms / 1000,
        max_delay_seconds=max_delay_ms / 1000,
        resync_seconds=resync_seconds,
        probe_address=listen_address(required(*raw["probe_address"]), raw["probe_address"][1]),
        log_level=one_of(*raw["log_level"], LOG_LEVELS),
    )


def _namespace(value: str | None, origin: str) -> str:
    text = required(value, origin)
    if not _DNS_LABEL.fullmatch(text):
        raise ServiceFlagError(
            f"{origin}: {text!r} is not a namespace name (a DNS label: lower case, digits, '-', at most 63)"
        )
    return text


def _namespaces(value: str | None, origin: str) -> tuple[str, ...]:
    text = required(value, origin)
    names = [part.strip() for part in text.split(",")]
    if any(not name for name in names):
        raise ServiceFlagError(f"{origin}: {text!r} holds an empty namespace name")
    for name in names:
        if not _DNS_LABEL.fullmatch(name):
            raise ServiceFlagError(
                f"{origin}: {name!r} is not a namespace name (a DNS label: lower case, digits, '-', at most 63)"
            )
    return tuple(sorted(set(names)))


def _name(value: str | None, origin: str) -> str:
    text = required(value, origin)
    if not _DNS_SUBDOMAIN.fullmatch(text):
        raise ServiceFlagError(f"{origin}: {text!r} is not an object name (a DNS subdomain)")
    return text


def _milliseconds(value: str | None, origin: str) -> int:
    return whole_number(value, origin, maximum=MAX_MILLISECONDS, unit="milliseconds")


def _seconds(value: str | None, origin: str) -> int:
    return whole_number(value, origin, maximum=MAX_SECONDS, unit="seconds")
