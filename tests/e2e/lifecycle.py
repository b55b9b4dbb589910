"""Steps of a stack's life the e2e tests share: converge the demo, read what a run changed."""

from __future__ import annotations

from typing import Any, Final

from cli.files import DYNAMIC, RESOURCES, STATUS, fit_file_name, safe_part
from providers.kube import KubeClient
from tests.cluster.apiserver import ClusterInfo, install_crds
from tests.e2e.engine import REPO_ROOT, PulumiProject, Run
from tests.e2e.world import objects_of, play_controllers
from tests.live.ollama_double import OllamaDouble
from tests.live.world import load

GARBAGE_COLLECTION: Final = ("garbagecollector", "namespace")
"""The controllers the engine needs beside the stand-ins: pulumi-kubernetes deletes with
foreground propagation, which only the garbage collector completes."""
OWN_CRDS: Final = REPO_ROOT / "api" / "crds"
MAX_ROUNDS: Final = 8
"""A bound for a loop that does not converge; the demo converges in three or four."""
CHANGING_OPS: Final = frozenset({"create", "update", "delete", "replace", "create-replacement", "delete-replaced"})
STATUS_TYPE: Final = "pulumi-python:dynamic/magicstick:StatusBatch"


def changes(run: Run) -> dict[str, str]:
    """URN -> operation of every step of `run` that changed something."""
    return {urn: op for urn, op in run.operations().items() if op in CHANGING_OPS}


def resource_type(urn: str) -> str:
    return urn.split("::")[-2].split("$")[-1]


def logical_name(urn: str) -> str:
    return urn.split("::")[-1]


def first_up(cluster: ClusterInfo, kube: KubeClient, project: PulumiProject, documents: list[dict[str, Any]]) -> Run:
    """The first `pulumi up` of a stack, where a user applied our CRDs (`kubectl apply -f
    api/crds/`) and Appliance/local before it: the program adopts the CRDs and seeds the
    profile's default ModuleActivations in the same run."""
    install_crds(cluster, [OWN_CRDS])
    load(kube, [obj for obj in objects_of(documents, own=True) if obj["kind"] == "Appliance"])
    return project.pulumi("up", "--yes", "--skip-preview", events=True)


def converge(project: PulumiProject, kube: KubeClient, ollama: OllamaDouble) -> list[Run]:
    """`pulumi up` and a pass of the controllers, until an up changes nothing and no controller writes."""
    runs = []
    for _ in range(MAX_ROUNDS):
        run = project.pulumi("up", "--yes", "--skip-preview", events=True)
        runs.append(run)
        played = play_controllers(kube, ollama)
        if not changes(run) and played == 0:
            return runs
    tail = "\n".join(runs[-1].stdout.splitlines()[-25:])
    raise AssertionError(f"no convergence in {MAX_ROUNDS} rounds; last changes: {changes(runs[-1])}\n{tail}")


def render_paths(step: dict[str, Any]) -> frozenset[str]:
    """The files of a `magicstick render` that hold what a preview step changes: none for a
    resource a render does not write (the provider, components); for a status batch, the status
    file of each member the step adds or changes. Pure."""
    urn = step["urn"]
    kind = resource_type(urn)
    state = step.get("newState") or step.get("oldState") or {}
    inputs = state.get("inputs") or {}
    if kind.startswith("kubernetes:") and not kind.startswith("pulumi:providers:"):
        metadata = inputs.get("metadata") or {}
        parts = [str(inputs.get("kind", "object")).lower(), metadata.get("namespace"), metadata.get("name", "unnamed")]
        return frozenset({f"{RESOURCES}/{fit_file_name('.'.join(safe_part(p) for p in parts if p))}"})
    if kind == STATUS_TYPE:
        before = ((step.get("oldState") or {}).get("inputs") or {}).get("members") or {}
        paths = set()
        for key, member in (inputs.get("members") or {}).items():
            if before.get(key, {}).get("status") != member.get("status"):
                parts = [str(inputs["kind"]).lower(), member.get("namespace"), member["name"]]
                paths.add(f"{STATUS}/{fit_file_name('.'.join(safe_part(p) for p in parts if p))}")
        return frozenset(paths)
    if kind.startswith("pulumi-python:dynamic/"):
        return frozenset({f"{DYNAMIC}/{fit_file_name(f'{safe_part(kind)}.{safe_part(logical_name(urn))}')}"})
    return frozenset()
