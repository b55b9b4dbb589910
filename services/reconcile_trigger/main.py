"""`magicstick-reconcile-trigger`: watch what the program reads, request runs of its Stack.

Exit status: 0 after SIGTERM or SIGINT; 1 when a thread of the trigger failed unexpectedly
(Kubernetes restarts the container); 2 on an invalid flag or environment value, unusable
cluster access, or a probe address that cannot be bound (one line on stderr naming the flag,
or what is wrong with the access).

/healthz and /readyz are served on `--probe-address` (probes.py) from the start.

Nothing is written to disk: the trigger runs on a read-only root filesystem.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from providers.kube import KubeAccess, KubeConfigError, open_client
from services.flags import EXIT_BAD_INPUT, settings_or_exit_code, start_logging
from services.reconcile_trigger.probes import ProbePath, ProbeServer
from services.reconcile_trigger.settings import PROGRAM, TriggerSettings, parse_settings
from services.reconcile_trigger.stack import Backoff, StackRef
from services.reconcile_trigger.trigger import LOGGER, ReconcileTrigger, Timing
from services.reconcile_trigger.watches import watch_targets

EXIT_OK = 0
EXIT_FAILED = 1
WAKE_SECONDS = 0.5
"""How often the main thread looks whether a thread of the trigger failed."""


def build_trigger(settings: TriggerSettings, access: KubeAccess) -> ReconcileTrigger:
    """The (not yet started) trigger that `settings` describe."""
    targets = watch_targets(
        system_namespace=settings.system_namespace,
        target_namespaces=settings.target_namespaces,
        gateway_namespace=settings.gateway_namespace,
    )
    timing = Timing(
        quiet_seconds=settings.quiet_seconds,
        max_delay_seconds=settings.max_delay_seconds,
        churn_backoff=Backoff(settings.max_delay_seconds, settings.resync_seconds),
    )
    return ReconcileTrigger(
        access=access, stack=StackRef(settings.stack_namespace, settings.stack_name), targets=targets, timing=timing
    )


def build_probes(settings: TriggerSettings, trigger: ReconcileTrigger) -> ProbeServer:
    """The bound (not yet serving) probe server of `trigger`. Raises OSError when the address cannot be bound."""
    return ProbeServer(
        listen=settings.probe_address, reports={ProbePath.HEALTHZ: trigger.health, ProbePath.READYZ: trigger.readiness}
    )


def main(argv: Sequence[str] | None = None) -> int:
    settings = settings_or_exit_code(parse_settings, argv, program=PROGRAM)
    if isinstance(settings, int):
        return settings
    start_logging(settings.log_level)
    if settings.log_level != "debug":
        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    access = KubeAccess()
    try:
        with open_client(access) as client:
            LOGGER.info("cluster %s", client.server)
    except KubeConfigError as error:
        print(f"{PROGRAM}: cluster access: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    trigger = build_trigger(settings, access)
    try:
        probes = build_probes(settings, trigger)
    except OSError as error:
        print(
            f"{PROGRAM}: --probe-address: cannot listen on {settings.probe_address}: {error.strerror or error}",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    LOGGER.info("serving %s and %s on %s", ProbePath.HEALTHZ, ProbePath.READYZ, probes.address)
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        LOGGER.info("stopping on signal %d", signum)
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    probes.start()
    try:
        with trigger:
            while not stopping.is_set() and not trigger.failed.is_set():
                stopping.wait(WAKE_SECONDS)
    finally:
        probes.stop()
    if stopping.is_set():
        return EXIT_OK
    LOGGER.error("a thread of the trigger failed (its traceback is above); exiting")
    return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
