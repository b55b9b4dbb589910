"""Flux's source-, kustomize- and helm-controller, built from their Go modules
(scripts/toolchain/build.sh), running as processes against a test API server.

They run as Flux's install runs them, but outside the cluster: as the admin (a kubeconfig,
where a Pod would use its ServiceAccount), every namespace watched, no leader election, no
notification-controller (no events address). source-controller serves its artifacts on a
loopback port and advertises that address, which kustomize- and helm-controller download from,
as they would from its Service. Each controller's log is kept in the work directory, and a test
failure prints its last lines.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from tests.cluster.apiserver import ADMIN_USER, ChildProcess, ClusterInfo, free_ports, launch, wait_ready
from tests.support.vendored import VENDORED_CRDS
from tests.toolchain import FLUX_CONTROLLERS, flux_controller

FLUX_CRD_FOLDERS: Final = ("flux-source-controller", "flux-kustomize-controller", "flux-helm-controller")
"""Vendored folders of the CRDs the three controllers serve; each controller refuses to start
without every kind it reconciles."""
STARTUP_SECONDS: Final = 60.0
KUSTOMIZE_WORKERS: Final = 16
"""kustomize-controller's `--concurrent` (Flux's default is 4). A Kustomization that health-checks
CRDs which never come (its module's chart unreachable, as here) holds a worker for up to its
timeout, ten minutes for the program's modules; the suite requests eleven such modules at once,
and with four workers the rest would wait that long (README.md, "Tests", says what this means on
a real cluster)."""


def flux_crd_paths() -> tuple[Path, ...]:
    return tuple(sorted(path for folder in FLUX_CRD_FOLDERS for path in (VENDORED_CRDS / folder).glob("*.yaml")))


@dataclass(frozen=True)
class FluxControllers:
    """The running controllers, by name (`FLUX_CONTROLLERS`)."""

    processes: Mapping[str, ChildProcess]

    def log_tails(self, lines: int = 15) -> str:
        """The last lines of each controller's log, for a failure message."""
        return "\n".join(f"--- {name}\n{process.log_tail(lines)}" for name, process in self.processes.items())


def _argv(name: str, *, metrics: int, health: int, storage: int, storage_path: Path) -> list[str]:
    argv = [
        str(flux_controller(name)),
        "--watch-all-namespaces=true",
        "--enable-leader-election=false",
        f"--metrics-addr=127.0.0.1:{metrics}",
        f"--health-addr=127.0.0.1:{health}",
        "--events-addr=",
        "--log-level=debug",
        "--log-encoding=console",
        "--requeue-dependency=5s",
    ]
    if name == "source-controller":
        argv += [
            f"--storage-path={storage_path}",
            f"--storage-addr=127.0.0.1:{storage}",
            f"--storage-adv-addr=127.0.0.1:{storage}",
        ]
    if name == "kustomize-controller":
        argv.append(f"--concurrent={KUSTOMIZE_WORKERS}")
    return argv


@contextlib.contextmanager
def running_flux(cluster: ClusterInfo, workdir: Path) -> Iterator[FluxControllers]:
    """Start the three controllers against `cluster` (whose Flux CRDs are installed), yield once
    each answers its readiness probe, stop them on exit.

    `--requeue-dependency=5s` (Flux's default is 30 s): a Kustomization whose dependency is not
    Ready looks again after five seconds, so a test of the entrypoint's order waits seconds, not
    minutes, for each link."""
    environment = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig_path(ADMIN_USER)),
        "RUNTIME_NAMESPACE": "flux-system",
    }
    storage = workdir / "artifacts"
    storage.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + STARTUP_SECONDS
    with contextlib.ExitStack() as stack:
        processes: dict[str, ChildProcess] = {}
        for name in FLUX_CONTROLLERS:
            metrics, health, artifacts = free_ports(3)
            process = launch(
                name,
                _argv(name, metrics=metrics, health=health, storage=artifacts, storage_path=storage),
                workdir,
                env=environment,
            )
            stack.callback(process.stop)
            processes[name] = process
            with httpx.Client(base_url=f"http://127.0.0.1:{health}", timeout=2.0) as probe:
                wait_ready(process, probe, "/readyz", deadline)
        yield FluxControllers(processes=processes)
