"""The GitOps tree as Flux sees it: kustomize builds, post-build substitution, Helm renders.

- `build(path)` is `kubectl kustomize` of a directory, as kustomize-controller builds it.
- `flux_build_kustomization(kustomization, settings)` is the whole of it for one Flux
  Kustomization: its path with its `spec.components` and `spec.patches`, substituted (tests/peers/test_flux_build.py
  checks it against `flux build kustomization`).
- `substitute(objects, settings)` is Flux's post-build substitution with the optional
  ConfigMap `ai-appliance-settings`: `${var}`, `${var:=default}` and `${var:-default}` take the
  setting when there is one, else the default. A variable with neither is left as it is, as
  Flux leaves it.
- `render_chart(path, values, release, namespace)` renders a Helm chart directory with Helm's
  own engine (helm-python-sdk binds Helm's Go SDK), checking the values against the chart's
  values.schema.json first, as `helm install` and helm-controller do.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from catalogs import ApplicationEntry, ModuleEntry, load_catalogs

REPOSITORY: Final = Path(__file__).resolve().parents[2]
KUBECTL: Final = shutil.which("kubectl")
ENTRYPOINTS: Final = ("magic-cluster/flux/entrypoints/base", "magic-cluster/flux/entrypoints/single-node")
DEMO_OVERLAY: Final = "examples/demo/infra-cluster/flux-bootstrap"
FLUX_GROUPS: Final = frozenset({"source.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io"})
VARIABLE: Final = re.compile(r"\$\{(?P<name>[_a-zA-Z][_a-zA-Z0-9]*)(?::?[=-](?P<default>[^}]*))?\}")
BARE_VARIABLE: Final = re.compile(r"(?<!\$)\$[_a-zA-Z]")
"""`$name` without braces: Flux would substitute it too, silently."""

JsonObject = dict[str, Any]


def in_repository(flux_path: str) -> Path:
    """A Flux `spec.path` or chart path (`./magic-cluster/...`) as a directory of this repository."""
    return REPOSITORY / flux_path.removeprefix("./")


def module_entries() -> tuple[ModuleEntry, ...]:
    return tuple(load_catalogs().modules.entries)


def application_entries() -> tuple[ApplicationEntry, ...]:
    return tuple(load_catalogs().applications.entries)


@functools.cache
def _kustomize(directory: Path) -> str:
    assert KUBECTL is not None, "kubectl (with kustomize) is needed; see README, Tests"
    answer = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, check=False)
    assert answer.returncode == 0, f"kubectl kustomize {directory}: {answer.stderr}"
    return answer.stdout


def build_text(path: str | Path) -> str:
    """The YAML stream `kubectl kustomize` prints for a directory (relative to the repository)."""
    return _kustomize((REPOSITORY / path).resolve())


def build(path: str | Path) -> list[JsonObject]:
    """The objects of a kustomize build, in kustomize's order."""
    return [doc for doc in yaml.safe_load_all(build_text(path)) if doc]


def variables(text: str) -> list[re.Match[str]]:
    return list(VARIABLE.finditer(text))


def substitute(objects: Iterable[JsonObject], settings: Mapping[str, str] | None = None) -> list[JsonObject]:
    """The objects after Flux's post-build substitution from `settings` (absent: defaults only)."""
    chosen = dict(settings or {})

    def value(match: re.Match[str]) -> str:
        name, default = match["name"], match["default"]
        if name in chosen:
            return chosen[name]
        return default if default is not None else match.group(0)

    return [yaml.safe_load(VARIABLE.sub(value, yaml.safe_dump(obj, sort_keys=False))) for obj in objects]


def flux_build(path: str | Path, settings: Mapping[str, str] | None = None) -> list[JsonObject]:
    """A directory as a generated module Kustomization applies it: built, then substituted."""
    return substitute(build(path), settings)


def flux_build_kustomization(
    kustomization: Mapping[str, Any], settings: Mapping[str, str] | None = None
) -> list[JsonObject]:
    """What kustomize-controller applies for a Flux Kustomization: its path built with its
    `spec.components` (Kustomize Components, relative to the path) and its `spec.patches` (Flux
    adds both to the generated kustomization.yaml), then substituted with `settings` and its
    inline `postBuild.substitute`, which win."""
    spec = kustomization["spec"]
    variables = {**(settings or {}), **((spec.get("postBuild") or {}).get("substitute") or {})}
    path = in_repository(spec["path"])
    patches = spec.get("patches") or []
    components = spec.get("components") or []
    if not patches and not components:
        return flux_build(path, variables)
    assert KUBECTL is not None, "kubectl (with kustomize) is needed; see README, Tests"
    with tempfile.TemporaryDirectory(prefix="magicstick-flux-build-") as directory:
        overlay: JsonObject = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [os.path.relpath(path, directory)],
        }
        if components:
            overlay["components"] = [os.path.relpath(path / component, directory) for component in components]
        if patches:
            overlay["patches"] = patches
        (Path(directory) / "kustomization.yaml").write_text(yaml.safe_dump(overlay, sort_keys=False))
        answer = subprocess.run(
            [KUBECTL, "kustomize", "--load-restrictor", "LoadRestrictionsNone", directory],
            capture_output=True,
            text=True,
            check=False,
        )
    assert answer.returncode == 0, (
        f"kubectl kustomize {path} with the components and patches of {kustomization['metadata']['name']}: {answer.stderr}"
    )
    return substitute([doc for doc in yaml.safe_load_all(answer.stdout) if doc], variables)


def of_kind(objects: Iterable[JsonObject], kind: str) -> list[JsonObject]:
    return [o for o in objects if o["kind"] == kind]


def is_flux(obj: Mapping[str, Any]) -> bool:
    return obj["apiVersion"].split("/")[0] in FLUX_GROUPS


def identity(obj: Mapping[str, Any]) -> str:
    metadata = obj["metadata"]
    return f"{obj['kind']}/{metadata.get('namespace', '-')}/{metadata['name']}"


def render_chart(path: Path, values: Mapping[str, Any], *, release: str, namespace: str) -> list[JsonObject]:
    """Every object the chart renders for `values`; HelmValuesError when the schema refuses them."""
    import helm_python

    with helm_python.Chart.load(str(path)) as chart:
        manifests = chart.render(json.loads(json.dumps(values)), name=release, namespace=namespace, is_install=True)
    return [doc for text in manifests.values() for doc in yaml.safe_load_all(text) if doc]
