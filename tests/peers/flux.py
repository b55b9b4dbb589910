"""The real `flux` CLI (scripts/toolchain/build.sh) builds the Kustomizations of the GitOps tree.

`flux build kustomization` reads the Kustomization from the API server, builds its path of this
repository with Flux's own kustomize, and substitutes its `postBuild` variables: the inline
`substitute` values and the `substituteFrom` ConfigMaps it reads from the same API server, as
kustomize-controller does. The tests therefore put each Kustomization and the settings
ConfigMap `ai-appliance-settings` into the test API server first.

Which Kustomizations: every one the tree defines (its entrypoints and the demo overlay) and
every one the program generates, one per module of the catalog, with every declared parameter
at its default, and one more per module with optional components, all of them switched on
(`program_kustomizations`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from catalogs import load_catalogs
from planning.frozen import thaw
from planning.kustomizations import SETTINGS_CONFIG_MAP, SourceRef, module_kustomization
from planning.module_parameters import components, substitutions
from tests import toolchain
from tests.gitops.tree import DEMO_OVERLAY, ENTRYPOINTS, REPOSITORY, build

JsonObject = dict[str, Any]
FLUX_NAMESPACE: Final = "flux-system"
SETTINGS_FILE: Final = REPOSITORY / "examples" / "demo" / "infra-cluster" / "flux-bootstrap" / "appliance-settings.yaml"
OWNER_LABELS: Final = ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace")
"""The labels Flux puts on every object it builds, naming the Kustomization that owns it."""


@dataclass(frozen=True)
class FluxAnswer:
    returncode: int
    stdout: str
    stderr: str

    def objects(self) -> list[JsonObject]:
        return [doc for doc in yaml.safe_load_all(self.stdout) if doc]


def flux(*arguments: str, stdin: str | None = None, env: Mapping[str, str] | None = None) -> FluxAnswer:
    answer = subprocess.run(
        [str(toolchain.flux()), *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **(env or {})},
    )
    return FluxAnswer(answer.returncode, answer.stdout, answer.stderr)


def build_kustomization(kustomization: Mapping[str, Any], *, kubeconfig: Path) -> FluxAnswer:
    """`flux build kustomization` of a Kustomization stored in the API server, strict: a
    variable without a default and without a value fails the build."""
    metadata = kustomization["metadata"]
    return flux(
        "build",
        "kustomization",
        metadata["name"],
        "--namespace",
        metadata["namespace"],
        "--path",
        str(REPOSITORY / kustomization["spec"]["path"].removeprefix("./")),
        "--strict-substitute",
        "--in-memory-build",
        "--kubeconfig",
        str(kubeconfig),
    )


def envsubst_strict(text: str, variables: Mapping[str, str]) -> FluxAnswer:
    """`flux envsubst --strict`: substitutes `variables`; an unset variable without default fails."""
    return flux("envsubst", "--strict", stdin=text, env=variables)


def settings_config_map() -> JsonObject:
    found: JsonObject = yaml.safe_load(SETTINGS_FILE.read_text())
    assert found["metadata"]["name"] == SETTINGS_CONFIG_MAP
    return found


def tree_kustomizations() -> list[JsonObject]:
    """The Kustomizations the tree's entrypoints and the demo overlay define (once each)."""
    found: dict[tuple[str, str], JsonObject] = {}
    for path in (*ENTRYPOINTS, DEMO_OVERLAY):
        for obj in build(path):
            if obj["kind"] == "Kustomization" and obj["apiVersion"].startswith("kustomize.toolkit.fluxcd.io/"):
                found.setdefault((obj["metadata"]["namespace"], obj["metadata"]["name"]), obj)
    return [found[key] for key in sorted(found)]


def program_kustomizations() -> list[JsonObject]:
    """The Kustomization the program generates for each module, every parameter at its default;
    and, for a module with component parameters (an optional part, off by default), one more
    with every such part switched on, named after its components."""
    catalogs = load_catalogs()
    found = []
    for entry in catalogs.modules.entries:
        switched_on = {p.name: True for p in entry.parameters if p.component is not None}
        for given in ({}, switched_on) if switched_on else ({},):
            desired = module_kustomization(
                entry=entry,
                dependencies=tuple(catalogs.modules.require(d) for d in entry.depends_on),
                source=SourceRef(),
                suspend=False,
                activation=None,
                field_manager="magicstick",
                parameters=substitutions(entry, given),
                components=components(entry, given),
            )
            body = thaw(desired.body)
            if given:
                body["metadata"]["name"] = "-".join((entry.kustomization, *body["spec"]["components"]))
            found.append(body)
    return found


def without_owner_labels(objects: Iterable[JsonObject]) -> list[JsonObject]:
    """The objects without Flux's ownership labels (and without `labels` when nothing is left)."""
    stripped = []
    for obj in objects:
        metadata = dict(obj["metadata"])
        labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k not in OWNER_LABELS}
        metadata.pop("labels", None)
        if labels:
            metadata["labels"] = labels
        stripped.append({**obj, "metadata": metadata})
    return stripped
