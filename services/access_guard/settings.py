"""The guard's configuration: command-line flags, each with an environment fallback.

A flag given on the command line wins over its environment variable, which wins over the
default. Every value is validated before the server starts; an invalid one is reported in
one line that names the flag (and the variable when the value came from there).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from services.flags import LOG_LEVELS, Flag, SettingsError, raw_values

PROGRAM = "magicstick-access-guard"
ENV_PREFIX = "MAGICSTICK_ACCESS_GUARD_"
DEFAULT_TOKEN_HEADER = "X-Magicstick-Id-Token"
DEFAULT_LISTEN = "0.0.0.0:8080"
DEFAULT_JWKS_CACHE_SECONDS = 300.0
DEFAULT_JWKS_TIMEOUT_SECONDS = 2.0

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")




@dataclass(frozen=True)
class Listen:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class GuardSettings:
    grants_dir: Path
    """The mounted ConfigMap `magicstick-access-grants`: one `<namespace>.<instance>.json` per instance."""
    issuer: str
    """The OIDC issuer; a token's `iss` must equal it exactly."""
    audience: str
    """The OIDC client ID; a token's `aud` must contain it."""
    jwks_uri: str
    token_header: str = DEFAULT_TOKEN_HEADER
    listen: Listen = Listen("0.0.0.0", 8080)
    jwks_cache_seconds: float = DEFAULT_JWKS_CACHE_SECONDS
    """How long a fetched key set is used; after that, without a fresh one, every token is refused."""
    jwks_timeout_seconds: float = DEFAULT_JWKS_TIMEOUT_SECONDS
    log_level: str = "info"



_FLAGS = (
    Flag("--grants-dir", "directory of the mounted grants ConfigMap (required)"),
    Flag("--issuer", "OIDC issuer URL tokens must name in `iss` (required)"),
    Flag("--audience", "OIDC client ID tokens must name in `aud` (required)"),
    Flag("--jwks-uri", "URL of the issuer's JSON Web Key Set (required)"),
    Flag("--token-header", "request header that carries the ID token", DEFAULT_TOKEN_HEADER),
    Flag("--listen", "address to listen on, HOST:PORT ([HOST]:PORT for IPv6)", DEFAULT_LISTEN),
    Flag("--jwks-cache-seconds", "lifetime of a fetched key set, seconds", str(DEFAULT_JWKS_CACHE_SECONDS)),
    Flag("--jwks-timeout-seconds", "timeout of one key set fetch, seconds", str(DEFAULT_JWKS_TIMEOUT_SECONDS)),
    Flag("--log-level", f"one of {', '.join(LOG_LEVELS)}", "info"),
)


DESCRIPTION = "Envoy HTTP external authorization for Magic Stick AppInstances."


def parse_settings(argv: Sequence[str], environ: Mapping[str, str]) -> GuardSettings:
    """The validated settings from `argv` (without the program name) and `environ`.

    Raises SettingsError with a one-line message naming the offending flag.
    """
    raw = raw_values(_FLAGS, argv, environ, program=PROGRAM, description=DESCRIPTION, env_prefix=ENV_PREFIX)
    return GuardSettings(
        grants_dir=_directory(*raw["grants_dir"]),
        issuer=_url(*raw["issuer"]),
        audience=_required(*raw["audience"]),
        jwks_uri=_url(*raw["jwks_uri"]),
        token_header=_header_name(*raw["token_header"]),
        listen=_listen(*raw["listen"]),
        jwks_cache_seconds=_seconds(*raw["jwks_cache_seconds"]),
        jwks_timeout_seconds=_seconds(*raw["jwks_timeout_seconds"]),
        log_level=_choice(*raw["log_level"], LOG_LEVELS),
    )


def _required(value: str | None, origin: str) -> str:
    if value is None or not value.strip():
        raise SettingsError(f"{origin}: a value is required")
    if value != value.strip():
        raise SettingsError(f"{origin}: {value!r} has surrounding whitespace")
    return value


def _directory(value: str | None, origin: str) -> Path:
    path = Path(_required(value, origin))
    if not path.is_dir():
        raise SettingsError(f"{origin}: {value!r} is not a directory")
    return path


def _url(value: str | None, origin: str) -> str:
    text = _required(value, origin)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"{origin}: {text!r} is not an http(s) URL")
    return text


def _header_name(value: str | None, origin: str) -> str:
    text = _required(value, origin)
    if not _HEADER_NAME.fullmatch(text):
        raise SettingsError(f"{origin}: {text!r} is not an HTTP header name")
    return text


def _listen(value: str | None, origin: str) -> Listen:
    text = _required(value, origin)
    host, separator, port_text = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        _ip_or_raise(host, text, origin)
    elif ":" in host:
        raise SettingsError(f"{origin}: {text!r}: write an IPv6 address in brackets, [HOST]:PORT")
    if not separator or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise SettingsError(f"{origin}: {text!r} is not HOST:PORT with a port from 0 to 65535")
    return Listen(host, int(port_text))


def _ip_or_raise(host: str, text: str, origin: str) -> None:
    try:
        ipaddress.IPv6Address(host)
    except ValueError as error:
        raise SettingsError(f"{origin}: {text!r} holds no IPv6 address in brackets") from error


def _seconds(value: str | None, origin: str) -> float:
    text = _required(value, origin)
    try:
        seconds = float(text)
    except ValueError as error:
        raise SettingsError(f"{origin}: {text!r} is not a number of seconds") from error
    if not math.isfinite(seconds) or seconds <= 0:
        raise SettingsError(f"{origin}: {text!r} must be a finite number of seconds above 0")
    return seconds


def _choice(value: str | None, origin: str, choices: tuple[str, ...]) -> str:
    text = _required(value, origin).lower()
    if text not in choices:
        raise SettingsError(f"{origin}: {value!r} is not one of {', '.join(choices)}")
    return text
