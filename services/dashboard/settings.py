"""The dashboard's configuration: command-line flags, each with an environment fallback.

A flag given on the command line wins over its environment variable
(`MAGICSTICK_DASHBOARD_<FLAG>`), which wins over the default. Every value is validated before
the server starts; an invalid one is reported in one line that names the flag.
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
    header_name,
    http_url,
    listen_address,
    one_of,
    raw_values,
    required,
    seconds,
)

PROGRAM = "magicstick-dashboard"
ENV_PREFIX = "MAGICSTICK_DASHBOARD_"
DEFAULT_TOKEN_HEADER = "X-Magicstick-Id-Token"
DEFAULT_LISTEN = "0.0.0.0:8080"
DEFAULT_SYSTEM_NAMESPACE = "ai-system"
DEFAULT_USER_PREFIX = "oidc:"
DEFAULT_STACK_NAME = "magicstick"
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_HOST = re.compile(
    r"(?=.{1,253}(:|$))[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?"
)


@dataclass(frozen=True)
class ClaimNames:
    """Where the identity is in an ID token; a dotted name reads a nested claim."""

    subject: str = "sub"
    roles: str = "roles"
    groups: str = "groups"


@dataclass(frozen=True)
class DashboardSettings:
    issuer: str
    """The OIDC issuer; a token's `iss` must equal it exactly."""
    audience: str
    """The OIDC client ID; a token's `aud` must contain it."""
    jwks_uri: str
    token_header: str = DEFAULT_TOKEN_HEADER
    listen: ListenAddress = ListenAddress("0.0.0.0", 8080)
    system_namespace: str = DEFAULT_SYSTEM_NAMESPACE
    """Where the runtime requests live (ModuleActivation, ModelActivation, AppInstance, HostOperation, Appliance)."""
    stack_name: str = DEFAULT_STACK_NAME
    """The Pulumi Kubernetes Operator Stack of the program (deploy/stack.yaml), in the system
    namespace: the overview shows its last update."""
    claims: ClaimNames = ClaimNames()
    user_prefix: str = DEFAULT_USER_PREFIX
    """Prepended to the subject to name the impersonated Kubernetes user, as the API server's
    `--oidc-username-prefix` would: a subject can never pass for a ServiceAccount or a system user."""
    jwks_cache_seconds: float = 300.0
    jwks_timeout_seconds: float = 2.0
    kubeconfig: str | None = None
    """A kubeconfig path; None: the in-cluster ServiceAccount."""
    log_level: str = "info"
    hosts: tuple[str, ...] = ()
    """The dashboard's own `host[:port]`s as browsers reach it (its route's hostnames), lower
    case: a change must come from a page of one of them (protection.py). Empty: the request's
    own Host header."""


_FLAGS = (
    Flag("--issuer", "OIDC issuer URL tokens must name in `iss` (required)"),
    Flag("--audience", "OIDC client ID tokens must name in `aud` (required)"),
    Flag("--jwks-uri", "URL of the issuer's JSON Web Key Set (required)"),
    Flag("--token-header", "request header that carries the ID token", DEFAULT_TOKEN_HEADER),
    Flag("--listen", "address to listen on, HOST:PORT ([HOST]:PORT for IPv6)", DEFAULT_LISTEN),
    Flag("--system-namespace", "namespace of the runtime requests", DEFAULT_SYSTEM_NAMESPACE),
    Flag("--stack-name", "the program's Pulumi Kubernetes Operator Stack in that namespace", DEFAULT_STACK_NAME),
    Flag("--subject-claim", "claim holding the user's stable ID", "sub"),
    Flag("--roles-claim", "claim holding the dashboard roles (a dotted name reads a nested claim)", "roles"),
    Flag("--groups-claim", "claim holding the user's groups", "groups"),
    Flag("--user-prefix", "prefix of the impersonated Kubernetes user name", DEFAULT_USER_PREFIX),
    Flag("--jwks-cache-seconds", "lifetime of a fetched key set, seconds", "300"),
    Flag("--jwks-timeout-seconds", "timeout of one key set fetch, seconds", "2"),
    Flag("--kubeconfig", "kubeconfig path (default: the in-cluster ServiceAccount)"),
    Flag("--log-level", f"one of {', '.join(LOG_LEVELS)}", "info"),
    Flag(
        "--hosts",
        "comma-separated HOST[:PORT]s browsers reach the dashboard at; changes must come from their pages (default: the request's Host)",
        "",
    ),
)

DESCRIPTION = "The Magic Stick dashboard: the appliance's web console and its revision-checked API."


def parse_settings(argv: Sequence[str], environ: Mapping[str, str]) -> DashboardSettings:
    """The validated settings from `argv` (without the program name) and `environ`.

    Raises ServiceFlagError with a one-line message naming the offending flag.
    """
    raw = raw_values(_FLAGS, argv, environ, program=PROGRAM, description=DESCRIPTION, env_prefix=ENV_PREFIX)
    kubeconfig = raw["kubeconfig"][0]
    return DashboardSettings(
        issuer=http_url(*raw["issuer"]),
        audience=required(*raw["audience"]),
        jwks_uri=http_url(*raw["jwks_uri"]),
        token_header=header_name(*raw["token_header"]),
        listen=listen_address(required(*raw["listen"]), raw["listen"][1]),
        system_namespace=_namespace(*raw["system_namespace"]),
        stack_name=required(*raw["stack_name"]),
        claims=ClaimNames(
            subject=required(*raw["subject_claim"]),
            roles=required(*raw["roles_claim"]),
            groups=required(*raw["groups_claim"]),
        ),
        user_prefix=required(*raw["user_prefix"]),
        jwks_cache_seconds=seconds(*raw["jwks_cache_seconds"]),
        jwks_timeout_seconds=seconds(*raw["jwks_timeout_seconds"]),
        kubeconfig=kubeconfig or None,
        log_level=one_of(*raw["log_level"], LOG_LEVELS),
        hosts=_hosts(*raw["hosts"]),
    )


def _namespace(value: str | None, origin: str) -> str:
    text = required(value, origin)
    if not _NAMESPACE.fullmatch(text):
        raise ServiceFlagError(f"{origin}: {text!r} is not a namespace name (a DNS label)")
    return text


def _hosts(value: str | None, origin: str) -> tuple[str, ...]:
    hosts = tuple(item.strip().lower() for item in (value or "").split(",") if item.strip())
    for host in hosts:
        if not _HOST.fullmatch(host):
            raise ServiceFlagError(
                f"{origin}: {host!r} is not a HOST[:PORT] (a DNS name, lower case, and an optional port)"
            )
    return hosts
