"""Bootstrapping the served tree the way `flux bootstrap` does, and reading what Flux reports.

`flux bootstrap` writes two objects into the cluster (its gotk-sync.yaml): the GitRepository
`flux-system` with the real URL, and the Kustomization `flux-system` at the cluster's path in
that repository. `bootstrap` creates the same two with the `flux create` commands
deploy/README.md gives a user (the toolchain's flux CLI), naming the served tree and an
entrypoint; from there Flux's own controllers do everything.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from providers.kinds import KUSTOMIZATION
from providers.kube import EventType, KubeClient, ResourceKind
from tests.flux.controllers import FluxControllers
from tests.flux.git_server import GitSource
from tests.support.vendored import VENDORED_CRDS
from tests.support.watching import watch_until
from tests.toolchain import REPO_ROOT
from tests.toolchain import flux as flux_cli

GIT_REPOSITORY: Final = ResourceKind(
    group="source.toolkit.fluxcd.io", version="v1", kind="GitRepository", plural="gitrepositories", namespaced=True
)
OCI_REPOSITORY: Final = ResourceKind(
    group="source.toolkit.fluxcd.io", version="v1", kind="OCIRepository", plural="ocirepositories", namespaced=True
)
EVENT: Final = ResourceKind(group="", version="v1", kind="Event", plural="events", namespaced=True)
FLUX_NAMESPACE: Final = "flux-system"
SOURCE_NAME: Final = "flux-system"
SINGLE_NODE_ENTRYPOINT: Final = "./magic-cluster/flux/entrypoints/single-node"
BASE_ENTRYPOINT: Final = "magic-cluster/flux/entrypoints/base"
FLUX_SECONDS: Final = 120.0
"""How long a test waits for one object's state that Flux reaches in seconds here."""
DEPENDENCY_NOT_READY: Final = "DependencyNotReady"
CHART_CRDS: Final = (
    VENDORED_CRDS / "node-feature-discovery" / "nfd-api-crds.yaml",
    *sorted((VENDORED_CRDS / "pulumi-kubernetes-operator").glob("*.yaml")),
)
"""What the node-feature-discovery and pulumi-kubernetes-operator releases would have installed first."""
FIRST_LINKS: Final = frozenset({"node-feature-discovery", "pulumi-kubernetes-operator"})


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


@dataclass(frozen=True)
class Verdict:
    """The Ready condition one Kustomization showed at one moment."""

    name: str
    ready: Ready

    @property
    def failed(self) -> bool:
        """A failed reconciliation (BuildFailed, ReconciliationFailed, HealthCheckFailed, ...): Ready
        False for any reason but waiting on a dependency, which is Flux's `dependsOn` at work."""
        return self.ready.status == "False" and self.ready.reason != DEPENDENCY_NOT_READY


def later_links() -> list[dict[str, Any]]:
    """The base entrypoint's namespaces and its magicstick-operator and magicstick-appliance
    Kustomizations as `kubectl kustomize` builds them, the operator's dependencies on the first
    two links (which cannot become Ready without the internet) removed: where those two links
    would have left a fresh install."""
    objects = built(BASE_ENTRYPOINT)
    kustomizations = {d["metadata"]["name"]: d for d in objects if d["kind"] == KUSTOMIZATION.kind}
    operator, appliance = kustomizations["magicstick-operator"], kustomizations["magicstick-appliance"]
    assert {d["name"] for d in operator["spec"]["dependsOn"]} == FIRST_LINKS
    del operator["spec"]["dependsOn"]
    assert appliance["spec"]["dependsOn"] == [{"name": "magicstick-operator"}]
    return [*(d for d in objects if d["kind"] == "Namespace"), operator, appliance]


def verdicts_until(
    client: KubeClient,
    flux: FluxControllers,
    since: str,
    done: Callable[[dict[str, Any]], bool],
    *,
    seconds: float = FLUX_SECONDS,
) -> list[Verdict]:
    """Every Ready condition the Kustomizations of flux-system showed after resource version
    `since`, in the order Flux wrote them, up to the first state of one for which `done` holds
    or the first failed verdict, whichever comes first. Watched from `since`, so no state in
    between is missed however briefly it lasted."""
    deadline = time.monotonic() + seconds
    version = since
    seen: list[Verdict] = []
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"not done within {seconds} s; last verdicts {seen[-4:]}\n{flux.log_tails()}"
        with client.watch(
            KUSTOMIZATION, namespace=FLUX_NAMESPACE, resource_version=version, timeout_seconds=max(1, int(remaining))
        ) as stream:
            for event in stream:
                version = event.resource_version or version
                if event.type is EventType.BOOKMARK or event.object.get("kind") != KUSTOMIZATION.kind:
                    continue
                ready = Ready.of(event.object)
                verdict = None if ready is None else Verdict(name=event.object["metadata"]["name"], ready=ready)
                if verdict is not None:
                    seen.append(verdict)
                if done(event.object) or (verdict is not None and verdict.failed):
                    return seen


def applied(name: str, revision: str) -> Callable[[dict[str, Any]], bool]:
    """Kustomization `name` has applied `revision` of its source and is Ready (see `wait_until_applied`)."""

    def done(obj: dict[str, Any]) -> bool:
        ready = Ready.of(obj)
        return (
            obj["metadata"]["name"] == name
            and ready is not None
            and ready.current
            and is_true(ready)
            and (obj.get("status") or {}).get("lastAppliedRevision") == revision
        )

    return done


def kustomize_controller_warnings(client: KubeClient) -> list[str]:
    """Every Warning event kustomize-controller recorded for a Kustomization of flux-system, as
    `<name>: <reason>: <message>`."""
    return [
        f"{event['involvedObject']['name']}: {event.get('reason')}: {event.get('message')}"
        for event in client.list(EVENT, namespace=FLUX_NAMESPACE)
        if event.get("type") == "Warning"
        and event["involvedObject"].get("kind") == KUSTOMIZATION.kind
        and "kustomize-controller" in {(event.get("source") or {}).get("component"), event.get("reportingComponent")}
    ]


def schema_managers(crd: dict[str, Any]) -> set[str]:
    """The field managers that own (part of) a CRD's `spec.versions`, where its schemas are."""
    return {
        entry["manager"]
        for entry in crd["metadata"].get("managedFields") or ()
        if "f:versions" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})
    }


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
    return watch_until(
        client, KUSTOMIZATION, FLUX_NAMESPACE, name, applied(name, revision), seconds, explain=flux.log_tails
    )


def is_true(ready: Ready) -> bool:
    return ready.status == "True"


def failed_with(reason: str) -> Callable[[Ready], bool]:
    return lambda ready: ready.status == "False" and ready.reason == reason
