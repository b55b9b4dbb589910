"""Bootstrapping the served tree the way `flux bootstrap` does, and reading what Flux reports.

`flux bootstrap` writes two objects into the cluster (its gotk-sync.yaml): the GitRepository
`flux-system` with the real URL, and the Kustomization `flux-system` at the cluster's path in
that repository. `bootstrap` creates the same two with the `flux create` commands
deploy/README.md gives a user (the toolchain's flux CLI), naming the served tree and an
entrypoint; from there Flux's own controllers do everything.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from providers.kinds import KUSTOMIZATION
from providers.kube import KubeClient, ResourceKind
from tests.flux.controllers import FluxControllers
from tests.flux.git_server import GitSource
from tests.support.watching import watch_until
from tests.toolchain import REPO_ROOT
from tests.toolchain import flux as flux_cli

GIT_REPOSITORY: Final = ResourceKind(
    group="source.toolkit.fluxcd.io", version="v1", kind="GitRepository", plural="gitrepositories", namespaced=True
)
OCI_REPOSITORY: Final = ResourceKind(
    group="source.toolkit.fluxcd.io", version="v1", kind="OCIRepository", plural="ocirepositories", namespaced=True
)
FLUX_NAMESPACE: Final = "flux-system"
SOURCE_NAME: Final = "flux-system"
SINGLE_NODE_ENTRYPOINT: Final = "./magic-cluster/flux/entrypoints/single-node"
FLUX_SECONDS: Final = 120.0
"""How long a test waits for one object's state that Flux reaches in seconds here."""


@dataclass(frozen=True)
class Ready:
    """An object's Ready condition as Flux wrote it, for the object's current generation or not."""

    status: str
    reason: str
    message: str
    current: bool

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Ready | None:
        status = obj.get("status") or {}
        for condition in status.get("conditions") or ():
            if condition.get("type") == "Ready":
                seen = condition.get("observedGeneration", status.get("observedGeneration"))
                return cls(
                    status=str(condition.get("status")),
                    reason=str(condition.get("reason", "")),
                    message=str(condition.get("message", "")),
                    current=seen == obj["metadata"].get("generation"),
                )
        return None


def flux_command(kubeconfig: Path, *arguments: str) -> str:
    """One `flux` command (the toolchain's CLI) against the cluster of `kubeconfig`."""
    command = [str(flux_cli()), f"--kubeconfig={kubeconfig}", "--namespace", FLUX_NAMESPACE, *arguments]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=FLUX_SECONDS + 30, check=False)
    if completed.returncode != 0:
        raise AssertionError(
            f"{' '.join(command[1:])} failed ({completed.returncode}):\n{completed.stdout}{completed.stderr}"
        )
    return completed.stdout + completed.stderr


def create_source(kubeconfig: Path, source: GitSource) -> str:
    """`flux create source git flux-system`, naming the served tree, as deploy/README.md gives it;
    the command returns once source-controller has fetched the branch. Its output."""
    return flux_command(
        kubeconfig,
        "create",
        "source",
        "git",
        SOURCE_NAME,
        f"--url={source.url}",
        f"--branch={source.branch}",
        "--interval=1m",
    )


def bootstrap(kubeconfig: Path, source: GitSource, path: str = SINGLE_NODE_ENTRYPOINT) -> str:
    """The GitRepository and the Kustomization `flux-system` at `path`, created by the commands
    deploy/README.md gives (what `flux bootstrap` writes, without a Git push); their output."""
    created = create_source(kubeconfig, source)
    return created + flux_command(
        kubeconfig,
        "create",
        "kustomization",
        SOURCE_NAME,
        f"--source=GitRepository/{SOURCE_NAME}",
        f"--path={path}",
        "--prune=true",
        "--interval=10m",
    )


def built(path: str) -> list[dict[str, Any]]:
    """What `kubectl kustomize` builds of a path of the repository (as kustomize-controller would)."""
    output = subprocess.run(
        ["kubectl", "kustomize", str(REPO_ROOT / path)], capture_output=True, text=True, check=True
    ).stdout
    return [document for document in yaml.safe_load_all(output) if document]


def wait_until_ready_is(
    client: KubeClient,
    flux: FluxControllers,
    kind: ResourceKind,
    name: str,
    wanted: Callable[[Ready], bool],
    *,
    namespace: str = FLUX_NAMESPACE,
    seconds: float = FLUX_SECONDS,
) -> dict[str, Any]:
    """The object once its Ready condition, written for its current generation, satisfies
    `wanted`; a failure shows the object's status and the controllers' last log lines."""

    def done(obj: dict[str, Any]) -> bool:
        ready = Ready.of(obj)
        return ready is not None and ready.current and wanted(ready)

    return watch_until(client, kind, namespace, name, done, seconds, explain=flux.log_tails)


def wait_until_applied(
    client: KubeClient, flux: FluxControllers, name: str, revision: str, *, seconds: float = FLUX_SECONDS
) -> dict[str, Any]:
    """The Kustomization once Flux has applied `revision` of its source and found it Ready (the
    last status write of a successful reconciliation records lastAppliedRevision)."""

    def done(obj: dict[str, Any]) -> bool:
        ready = Ready.of(obj)
        return (
            ready is not None
            and ready.current
            and is_true(ready)
            and (obj.get("status") or {}).get("lastAppliedRevision") == revision
        )

    return watch_until(client, KUSTOMIZATION, FLUX_NAMESPACE, name, done, seconds, explain=flux.log_tails)


def is_true(ready: Ready) -> bool:
    return ready.status == "True"


def failed_with(reason: str) -> Callable[[Ready], bool]:
    return lambda ready: ready.status == "False" and ready.reason == reason
