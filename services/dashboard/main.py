"""`magicstick-dashboard`: start the dashboard.

Exit status: 0 after SIGTERM or SIGINT; 2 on an invalid flag or environment value (one line on
stderr naming the flag) or an unreadable kubeconfig. At start it loads the catalogs shipped
with the package, fetches the issuer's key set once (a failure is logged; the first request
that needs a key tries again) and listens. Nothing is written to disk.
"""

from __future__ import annotations

import gc
import logging
import socket
import sys
from collections.abc import Sequence
from contextlib import ExitStack

import uvicorn

from catalogs import load_catalogs
from providers.kube import KubeAccess, KubeConfigError, RetryPolicy, open_async_reader, open_client
from services.dashboard.app import create_app
from services.dashboard.hub import StreamHub
from services.dashboard.live import WATCH_CONNECTIONS, stream_hub
from services.dashboard.requesting import DashboardState
from services.dashboard.session import SignIn
from services.dashboard.settings import PROGRAM, parse_settings
from services.flags import EXIT_BAD_INPUT, settings_or_exit_code, start_logging
from services.oidc.keys import KeySet
from services.oidc.tokens import TokenVerifier
from services.oidc.verification import CachingVerifier
from services.readiness import notify_ready

LOGGER = logging.getLogger("services.dashboard")
EXIT_OK = 0
API_TIMEOUT_SECONDS = 5.0
API_RETRY = RetryPolicy(attempts=2, first_delay_seconds=0.2, max_delay_seconds=0.5)
"""One retry at most: a user waiting on a page is better told at once that the API server is down."""
TOKEN_CACHE_SIZE = 1024
VERIFY_WORKERS = 2
VERIFY_QUEUE = 64


class _NotifyingServer(uvicorn.Server):
    """uvicorn's server, which says READY=1 (services.readiness) once it listens, and stops the
    live status watches (on its event loop) when it stops."""

    def __init__(self, config: uvicorn.Config, *, live: StreamHub) -> None:
        super().__init__(config)
        self._live = live

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            notify_ready()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets)
        await self._live.close()


def main(argv: Sequence[str] | None = None) -> int:
    settings = settings_or_exit_code(parse_settings, argv, program=PROGRAM)
    if isinstance(settings, int):
        return settings
    start_logging(settings.log_level)
    keys = KeySet(uri=settings.jwks_uri, lifetime=settings.jwks_cache_seconds, timeout=settings.jwks_timeout_seconds)
    if not keys.refresh():
        LOGGER.warning("key set not fetched at start from %s: %s", settings.jwks_uri, keys.last_error)
    verifier = CachingVerifier(
        verifier=TokenVerifier(keys=keys, issuer=settings.issuer, audience=settings.audience),
        cache_size=TOKEN_CACHE_SIZE,
        workers=VERIFY_WORKERS,
        queue=VERIFY_QUEUE,
    )
    access = KubeAccess(kubeconfig=settings.kubeconfig, timeout_seconds=API_TIMEOUT_SECONDS, retry=API_RETRY)
    with ExitStack() as stack:
        try:
            kube = stack.enter_context(open_client(access))
            watches = open_async_reader(access, max_connections=WATCH_CONNECTIONS)
        except KubeConfigError as error:
            print(f"{PROGRAM}: --kubeconfig: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        state = DashboardState(
            sign_in=SignIn(settings=settings, verifier=verifier),
            kube=kube,
            live=stream_hub(watches, namespace=settings.system_namespace),
            catalogs=load_catalogs(),
            namespace=settings.system_namespace,
            stack_name=settings.stack_name,
        )
        LOGGER.info(
            "listening on %s; API server %s; namespace %s; issuer %s",
            settings.listen,
            kube.server,
            settings.system_namespace,
            settings.issuer,
        )
        config = uvicorn.Config(
            create_app(state, hosts=settings.hosts),
            host=settings.listen.host,
            port=settings.listen.port,
            log_level=settings.log_level,
            access_log=False,
            timeout_graceful_shutdown=10,
            server_header=False,
        )
        # What was built at start (imports, catalogs, templates: about 100,000 objects) is kept
        # out of every later collection. Without it a full collection walked them all, 60 to
        # 115 ms each, about one every ten overview renders: most of the render's p95
        # (benchmarks/dashboard.py; with it, 4 to 12 ms).
        gc.collect()
        gc.freeze()
        _NotifyingServer(config, live=state.live).run()
    verifier.close()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
