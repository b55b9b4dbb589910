"""`magicstick-access-guard`: start the access guard.

Exit status: 0 after SIGTERM or SIGINT (the answers in progress are finished, for at most
`--drain-seconds`); 2 on an invalid flag or environment value (one line on stderr naming the
flag) or when the listen address cannot be bound.

At start the guard raises its soft limit of open files to the hard limit (each connection is
one), binds the listen address, and fetches the key set once so the first requests need not
wait for it; a failed fetch is logged and retried by the first request that needs a key.
Nothing is written to disk at runtime: the guard runs on a read-only root filesystem.
"""

from __future__ import annotations

import gc
import resource
import sys
from collections.abc import Sequence

from services.access_guard.app import GuardApp
from services.access_guard.decision import Guard
from services.access_guard.grants import GrantStore
from services.access_guard.server import LOGGER, Admission, Shedding, bind, serve
from services.access_guard.settings import PROGRAM, parse_settings
from services.flags import EXIT_BAD_INPUT, settings_or_exit_code, start_logging
from services.oidc.keys import KeySet
from services.oidc.tokens import TokenVerifier
from services.oidc.verification import CachingVerifier
from services.readiness import notify_ready

EXIT_OK = 0
SWITCH_INTERVAL_SECONDS = 0.001
"""How long a verifying thread may hold the GIL while the event loop waits; the default 5 ms would eat the latency budget."""
RESERVED_FILES = 64
"""Open files the guard needs besides its connections: the listener, logs, key set fetches, grant files."""
GC_THRESHOLDS = (700, 10, 1000)
"""Young collections as CPython makes them, a full one after 1,000 of them instead of 10.

The guard's garbage is freed by reference counting: during an attack of 8,000 connections,
every full collection found nothing to collect, yet each scanned every open connection and
stopped every answer for 60 to 100 ms (measured, 2,048 connections open). Rare full
collections still reclaim the odd cycle; `gc.freeze()` keeps what was built at start out of
every scan."""


def raise_open_file_limit() -> int:
    """Raise the soft limit of open files to the hard one when it is finite; the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard and hard != resource.RLIM_INFINITY:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as error:
            LOGGER.warning("cannot raise the open-file limit from %d to %d: %s", soft, hard, error)
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def main(argv: Sequence[str] | None = None) -> int:
    settings = settings_or_exit_code(parse_settings, argv, program=PROGRAM)
    if isinstance(settings, int):
        return settings
    start_logging(settings.log_level)
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    limits = settings.limits
    open_files = raise_open_file_limit()
    if open_files != resource.RLIM_INFINITY and limits.max_connections + RESERVED_FILES > open_files:
        LOGGER.warning(
            "--max-connections %d exceeds what the open-file limit %d allows", limits.max_connections, open_files
        )
    try:
        listener = bind(settings.listen)
    except OSError as error:
        print(f"{PROGRAM}: --listen: cannot listen on {settings.listen}: {error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    keys = KeySet(uri=settings.jwks_uri, lifetime=settings.jwks_cache_seconds, timeout=settings.jwks_timeout_seconds)
    verifier = CachingVerifier(
        verifier=TokenVerifier(keys=keys, issuer=settings.issuer, audience=settings.audience),
        cache_size=limits.token_cache_size,
        workers=limits.verify_workers,
        queue=limits.verify_queue,
    )
    grants = GrantStore(settings.grants_dir)
    shedding = Shedding(limits=limits)
    app = GuardApp(
        guard=Guard(grants=grants, verifier=verifier),
        grants=grants,
        grants_dir=settings.grants_dir,
        token_header=settings.token_header,
        overloaded=shedding.overloaded_request,
    )
    if not keys.refresh():
        LOGGER.warning("key set not fetched at start from %s: %s", settings.jwks_uri, keys.last_error)
    LOGGER.info(
        "listening on %s; grants from %s; issuer %s, audience %s; token header %s; %s",
        settings.listen,
        settings.grants_dir,
        settings.issuer,
        settings.audience,
        settings.token_header,
        limits,
    )
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        serve(listener, app=app, admission=Admission(limits=limits, shedding=shedding), ready=notify_ready)
    finally:
        verifier.close()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
