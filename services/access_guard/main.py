"""`magicstick-access-guard`: start the access guard.

Exit status: 0 after SIGTERM or SIGINT (the server finishes the answers in progress);
2 on an invalid flag or environment value (one line on stderr naming the flag) or when the
listen address cannot be bound.

The key set is fetched once at start so the first requests need not wait for it; a failure
there is logged and retried by the first request that needs a key. Nothing is written to
disk at runtime: the guard runs on a read-only root filesystem.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from services.flags import EXIT_BAD_INPUT, settings_or_exit_code, start_logging
from services.access_guard.decision import Guard
from services.access_guard.grants import GrantStore
from services.access_guard.keys import KeySet
from services.access_guard.server import LOGGER, GuardServer
from services.access_guard.settings import PROGRAM, GuardSettings, parse_settings
from services.access_guard.tokens import TokenVerifier
from services.readiness import notify_ready

EXIT_OK = 0
SWITCH_INTERVAL_SECONDS = 0.001
"""How long a busy thread may hold the GIL while another waits; the default 5 ms would eat the latency budget."""


def build_server(settings: GuardSettings) -> GuardServer:
    """The bound server for `settings` (bound first, so a taken address fails at once), its
    key set then warmed when the issuer answers."""
    keys = KeySet(uri=settings.jwks_uri, lifetime=settings.jwks_cache_seconds, timeout=settings.jwks_timeout_seconds)
    verifier = TokenVerifier(keys=keys, issuer=settings.issuer, audience=settings.audience)
    guard = Guard(grants=GrantStore(settings.grants_dir), verifier=verifier)
    server = GuardServer(listen=settings.listen, guard=guard, token_header=settings.token_header, grants_dir=settings.grants_dir)
    if not keys.refresh():
        LOGGER.warning("key set not fetched at start from %s: %s", settings.jwks_uri, keys.last_error)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    settings = settings_or_exit_code(parse_settings, argv, program=PROGRAM)
    if isinstance(settings, int):
        return settings
    start_logging(settings.log_level)
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    try:
        server = build_server(settings)
    except OSError as error:
        print(f"{PROGRAM}: --listen: cannot listen on {settings.listen}: {error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_INPUT

    def stop(signum: int, frame: FrameType | None) -> None:
        LOGGER.info("stopping on signal %d", signum)
        threading.Thread(target=server.shutdown, name="shutdown", daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    host, port = server.server_address[:2]
    LOGGER.info(
        "listening on %s:%d; grants from %s; issuer %s, audience %s; token header %s",
        host,
        port,
        settings.grants_dir,
        settings.issuer,
        settings.audience,
        settings.token_header,
    )
    notify_ready()
    with server:
        server.serve_forever(poll_interval=0.1)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
