"""`magicstick-host-agent`: the node-local agent (as root, on each node).

    magicstick-host-agent serve      publish evidence and plans, create the first ApplianceSetup,
                                     carry out this node's HostOperations; until SIGTERM
    magicstick-host-agent evidence   publish the host evidence and plans once (the timer's job)

Exit status: 0 after SIGTERM or SIGINT, or after one publication; 1 when the host's own facts
(boot ID, kernel) cannot be read, or the API server refuses the publication; 2 on an invalid
flag or environment value or an unusable kubeconfig (one line on stderr).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from providers.kube import KubeAccess, KubeConfigError, KubeError, RetryPolicy, open_client
from services.flags import EXIT_BAD_INPUT, settings_or_exit_code, start_logging
from services.host_agent.actions.base import ActionContext
from services.host_agent.cluster import AgentCluster
from services.host_agent.commands import CommandRunner
from services.host_agent.engine import Engine
from services.host_agent.evidence import HostView, publish, read_host
from services.host_agent.facts import HostFactError
from services.host_agent.first_run import MarkerError, ensure_setup
from services.host_agent.identity import TokenError, renew_if_due, token_file
from services.host_agent.journal import Journal
from services.host_agent.settings import PROGRAM, AgentSettings, Command, parse_settings
from services.readiness import notify_ready

LOGGER = logging.getLogger("services.host_agent")
EXIT_OK = 0
EXIT_FAILED = 1
API_RETRY = RetryPolicy(attempts=3, first_delay_seconds=0.2, max_delay_seconds=2.0)


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class Agent:
    def __init__(self, settings: AgentSettings, cluster: AgentCluster) -> None:
        self.settings = settings
        self.cluster = cluster
        self.journal = Journal(settings.state_path / "journal")
        self.runner = CommandRunner()
        self.stopping = threading.Event()
        self._published: tuple[str, float] | None = None
        self._setup_done = False
        self._node_uid: str | None = None

    def _view(self, now: datetime) -> HostView:
        """The host now; its evidence and plans are published when due or when the plans changed."""
        if self._node_uid is None:
            self._node_uid = str(self.cluster.node()["metadata"]["uid"])
        view = read_host(self.settings, self._node_uid, now)
        plans = view.plans.annotation()
        due = (
            self._published is None
            or self._published[0] != plans
            or now.timestamp() - self._published[1] >= self.settings.evidence_seconds
        )
        if due:
            self.cluster.annotate_node(view.annotations())
            self._published = (plans, now.timestamp())
        return view

    def _setup(self) -> None:
        if self._setup_done:
            return
        try:
            ensure_setup(self.cluster, self.settings.state_path)
            self._setup_done = True
        except (KubeError, MarkerError) as error:
            LOGGER.error("ApplianceSetup/local: %s; tried again on the next pass", error)

    def _renew_token(self, now: datetime) -> None:
        """Renew the Node-bound token when due (kubeconfigs with an inline token are left alone)."""
        try:
            path = token_file(Path(self.settings.kubeconfig))
            if path is not None:
                renew_if_due(self.cluster, path=path, now=now)
        except (OSError, TokenError, KubeError) as error:
            LOGGER.error("token renewal: %s; tried again on the next pass", error)

    def pass_once(self) -> None:
        now = _now()
        view = self._view(now)
        self._renew_token(now)
        self._setup()
        context = ActionContext(settings=self.settings, host=view, cluster=self.cluster, runner=self.runner, now=now)
        Engine(self.journal, context).run_once(self.cluster.host_operations())

    def serve(self) -> int:
        ready = False
        while not self.stopping.is_set():
            try:
                self.pass_once()
            except KubeError as error:
                LOGGER.error("pass failed: %s; tried again in %g seconds", error, self.settings.poll_seconds)
            if not ready:
                notify_ready()
                ready = True
            self.stopping.wait(self.settings.poll_seconds)
        return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    settings = settings_or_exit_code(parse_settings, argv, program=PROGRAM)
    if isinstance(settings, int):
        return settings
    start_logging(settings.log_level)
    access = KubeAccess(kubeconfig=settings.kubeconfig, retry=API_RETRY)
    try:
        with open_client(access) as client:
            cluster = AgentCluster(
                client,
                node_name=settings.node_name,
                namespace=settings.namespace,
                setup_namespace=settings.setup_namespace,
                network_namespace=settings.network_namespace,
            )
            if settings.command is Command.EVIDENCE:
                publish(cluster, settings, _now())
                LOGGER.info("published the host evidence and plans of node %s", settings.node_name)
                return EXIT_OK
            agent = Agent(settings, cluster)

            def stop(signum: int, frame: FrameType | None) -> None:
                agent.stopping.set()

            signal.signal(signal.SIGTERM, stop)
            signal.signal(signal.SIGINT, stop)
            return agent.serve()
    except KubeConfigError as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except HostFactError as error:
        LOGGER.error("%s", error)
        return EXIT_FAILED
    except KubeError as error:
        LOGGER.error("node %s: %s", settings.node_name, error)
        return EXIT_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
