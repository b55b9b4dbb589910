"""The guard's configuration: command-line flags, each with an environment fallback.

A flag given on the command line wins over its environment variable, which wins over the
default. Every value is validated before the server starts; an invalid one is reported in
one line that names the flag (and the variable when the value came from there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    whole_number,
)

PROGRAM = "magicstick-access-guard"
ENV_PREFIX = "MAGICSTICK_ACCESS_GUARD_"
DEFAULT_TOKEN_HEADER = "X-Magicstick-Id-Token"
DEFAULT_LISTEN = "0.0.0.0:8080"
DEFAULT_JWKS_CACHE_SECONDS = 300.0
DEFAULT_JWKS_TIMEOUT_SECONDS = 2.0
DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_IDLE_TIMEOUT_SECONDS = 30.0
DEFAULT_REQUEST_TIMEOUT_SECONDS = 5.0
DEFAULT_VERIFY_WORKERS = 2
DEFAULT_VERIFY_QUEUE = 64
DEFAULT_TOKEN_CACHE_SIZE = 4096
DEFAULT_DRAIN_SECONDS = 20.0
TERMINATION_GRACE_SECONDS = 30.0
"""The Pod's default grace period between SIGTERM and SIGKILL; the drain must end before it."""
MAX_CONNECTIONS_LIMIT = 1_000_000
MAX_VERIFY_WORKERS = 64
MAX_VERIFY_QUEUE = 100_000
MAX_TOKEN_CACHE_SIZE = 1_000_000


@dataclass(frozen=True)
class ServerLimits:
    """What one guard process spends at most, and how long it waits for a client."""

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    """Open connections; one more is answered 503 and closed at once."""
    idle_timeout_seconds: float = DEFAULT_IDLE_TIMEOUT_SECONDS
    """A keep-alive connection with no request for this long is closed."""
    request_timeout_seconds: float = DEFAULT_REQUEST_TIMEOUT_SECONDS
    """A new connection must deliver a whole request (head and body) within this, and so must
    every later request once its first byte arrives; otherwise the connection is closed."""
    verify_workers: int = DEFAULT_VERIFY_WORKERS
    """Threads that verify the tokens whose verification may wait for a key set fetch."""
    verify_queue: int = DEFAULT_VERIFY_QUEUE
    """Such tokens waiting for or in verification; one more is answered 503 at once."""
    token_cache_size: int = DEFAULT_TOKEN_CACHE_SIZE
    """Verified tokens remembered (by their SHA-256) until they expire; the least recently used go first."""
    drain_seconds: float = DEFAULT_DRAIN_SECONDS
    """After SIGTERM, how long answers in progress may take before the guard exits anyway."""


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
    listen: ListenAddress = ListenAddress("0.0.0.0", 8080)
    jwks_cache_seconds: float = DEFAULT_JWKS_CACHE_SECONDS
    """How long a fetched key set is used; after that, without a fresh one, every token is refused."""
    jwks_timeout_seconds: float = DEFAULT_JWKS_TIMEOUT_SECONDS
    log_level: str = "info"
    limits: ServerLimits = ServerLimits()


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
    Flag(
        "--max-connections",
        "open connections at most; one more is answered 503 and closed",
        str(DEFAULT_MAX_CONNECTIONS),
    ),
    Flag(
        "--idle-timeout-seconds",
        "close a keep-alive connection idle this long, seconds",
        str(DEFAULT_IDLE_TIMEOUT_SECONDS),
    ),
    Flag(
        "--request-timeout-seconds",
        "close a connection whose request (or first request) is not complete within this, seconds",
        str(DEFAULT_REQUEST_TIMEOUT_SECONDS),
    ),
    Flag("--verify-workers", "threads verifying tokens that may wait for a key set fetch", str(DEFAULT_VERIFY_WORKERS)),
    Flag("--verify-queue", "such tokens in verification at most; beyond, 503", str(DEFAULT_VERIFY_QUEUE)),
    Flag("--token-cache-size", "verified tokens remembered until they expire", str(DEFAULT_TOKEN_CACHE_SIZE)),
    Flag(
        "--drain-seconds",
        f"after SIGTERM, finish answers in progress for at most this long, seconds (below {TERMINATION_GRACE_SECONDS:.0f})",
        str(DEFAULT_DRAIN_SECONDS),
    ),
)


DESCRIPTION = "Envoy HTTP external authorization for Magic Stick AppInstances."


def parse_settings(argv: Sequence[str], environ: Mapping[str, str]) -> GuardSettings:
    """The validated settings from `argv` (without the program name) and `environ`.

    Raises ServiceFlagError with a one-line message naming the offending flag.
    """
    raw = raw_values(_FLAGS, argv, environ, program=PROGRAM, description=DESCRIPTION, env_prefix=ENV_PREFIX)
    return GuardSettings(
        grants_dir=_directory(*raw["grants_dir"]),
        issuer=http_url(*raw["issuer"]),
        audience=required(*raw["audience"]),
        jwks_uri=http_url(*raw["jwks_uri"]),
        token_header=header_name(*raw["token_header"]),
        listen=_listen(*raw["listen"]),
        jwks_cache_seconds=seconds(*raw["jwks_cache_seconds"]),
        jwks_timeout_seconds=seconds(*raw["jwks_timeout_seconds"]),
        log_level=one_of(*raw["log_level"], LOG_LEVELS),
        limits=ServerLimits(
            max_connections=whole_number(*raw["max_connections"], maximum=MAX_CONNECTIONS_LIMIT),
            idle_timeout_seconds=seconds(*raw["idle_timeout_seconds"]),
            request_timeout_seconds=seconds(*raw["request_timeout_seconds"]),
            verify_workers=whole_number(*raw["verify_workers"], maximum=MAX_VERIFY_WORKERS),
            verify_queue=whole_number(*raw["verify_queue"], maximum=MAX_VERIFY_QUEUE),
            token_cache_size=whole_number(*raw["token_cache_size"], maximum=MAX_TOKEN_CACHE_SIZE),
            drain_seconds=seconds(*raw["drain_seconds"], below=TERMINATION_GRACE_SECONDS),
        ),
    )


def _directory(value: str | None, origin: str) -> Path:
    path = Path(required(value, origin))
    if not path.is_dir():
        raise ServiceFlagError(f"{origin}: {value!r} is not a directory")
    return path


def _listen(value: str | None, origin: str) -> ListenAddress:
    return listen_address(required(value, origin), origin)
