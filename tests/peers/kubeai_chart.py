"""The vendored KubeAI chart with the values its HelmRelease merges, for the peers tests that
render it with the real `helm`.

- `chart_copy(directory)`: third_party/charts/kubeai copied unmodified, plus an empty stand-in
  `charts/open-webui` (the dependency Chart.yaml declares, disabled by default, not vendored):
  Helm refuses a chart whose dependency is missing; nothing of the stand-in renders.
- `program_stores(directory)`: the three ConfigMaps of magic-cluster/apps/ai/kubeai/stores.yaml
  as the program fills them. Their bootstrap contents are Flux's; then every RuntimeProfile and
  OffloadingProfile the program's offline render writes (out/dynamic) is put into its store with
  the stores' own `with_profile`. The renders are the demo snapshot and each model example of
  examples/models/, in a cluster where each can run: the demo plus an NVIDIA GPU node and a CPU
  node the realtime examples name, and the NVIDIA `gpu` module enabled and Ready. The GPU
  runtime-images store is written only after a GPU validation run, never by a render: it stays
  as Flux bootstraps it.
- `release_values(stores)`: the values helm-controller hands to Helm: each `valuesFrom`
  document in order, deep-merged, then the HelmRelease's inline `spec.values` merged last.
  Helm merges the chart's own values.yaml under them.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from cli.render import render
from providers.offloading_store import OFFLOADING_STORE
from providers.profile_store import (
    PROFILES_FIELD,
    RUNTIME_STORE,
    StoreSettings,
    read_document,
    read_profiles,
    serialise,
    with_profile,
)
from tests.peers.scene import DEMO, NOW, identity, stored
from tests.planning.builders import activation, gpu_model, ready_modules
from tests.planning.hardware.nodes import node
from tests.support.vendored import REPOSITORY_ROOT, VENDORED_CHARTS

JsonObject = dict[str, Any]

KUBEAI_CHART: Final = VENDORED_CHARTS / "kubeai"
KUBEAI_DIRECTORY: Final = REPOSITORY_ROOT / "magic-cluster" / "apps" / "ai" / "kubeai"
HELM_RELEASE: Final = KUBEAI_DIRECTORY / "helmrelease.yaml"
STORES: Final = KUBEAI_DIRECTORY / "stores.yaml"
MODEL_EXAMPLES: Final = REPOSITORY_ROOT / "examples" / "models"
STORE_KINDS: Final[Mapping[str, StoreSettings]] = {
    "RuntimeProfile": RUNTIME_STORE,
    "OffloadingProfile": OFFLOADING_STORE,
}
"""The program's dynamic resources that write a profile into a store, and that store's settings."""
STAND_IN: Final = {"apiVersion": "v2", "name": "open-webui", "version": "8.10.0"}


def chart_copy(directory: Path) -> Path:
    """The vendored KubeAI chart in `directory`, with the empty open-webui stand-in."""
    chart = directory / "kubeai"
    shutil.copytree(KUBEAI_CHART, chart)
    stand_in = chart / "charts" / "open-webui"
    stand_in.mkdir(parents=True)
    (stand_in / "Chart.yaml").write_text(yaml.safe_dump(STAND_IN))
    return chart


def helm_release() -> JsonObject:
    release: JsonObject = yaml.safe_load(HELM_RELEASE.read_text())
    return release


# The stores, as the program fills them.


def _gpu_node() -> JsonObject:
    return node("gpu-1", "nvidia", allocatable={"nvidia.com/gpu": "1"})


OWN_GROUP: Final = "appliance.magicstick.dev/"


def _cluster_for(*examples: JsonObject) -> list[JsonObject]:
    """The demo snapshot, the nodes and NVIDIA module the examples need, and `examples`."""
    extra = [_gpu_node(), node("cpu-1"), activation("gpu"), *ready_modules("gpu")]
    extra += [stored(example, defaults=example["apiVersion"].startswith(OWN_GROUP)) for example in examples]
    replaced = {identity(obj) for obj in extra}
    demo = [d for d in yaml.safe_load_all(DEMO.read_text()) if d and identity(d) not in replaced]
    return [*demo, *extra]


def _accelerator_models(vendor: str, target: str, resource: str, module: str, *engines: str) -> list[JsonObject]:
    """A node of `vendor` publishing `resource`, its module Ready, and the demo's preset on
    `target` with each of `engines`."""
    models = []
    for engine in engines:
        model = gpu_model(f"qwen-{vendor}-{engine.lower()}", target)
        model["metadata"]["namespace"] = "ai-system"
        model["spec"]["targetNamespace"] = "ai"
        model["spec"]["local"]["engine"] = engine
        models.append(model)
    return [
        node(f"{vendor}-1", vendor, allocatable={resource: "1"}),
        activation(module),
        *ready_modules(module),
        *models,
    ]


TARGET_SCENARIOS: Final[Mapping[str, list[JsonObject]]] = {
    "amd-gpu": _accelerator_models("amd", "amd-gpu", "amd.com/gpu", "amd-gpu", "VLLM", "OLlama"),
    "intel-gpu": _accelerator_models("intel", "intel-gpu", "gpu.intel.com/xe", "intel-gpu", "VLLM"),
}
"""Renders of the compute targets no example names: AMD (vLLM and Ollama) and Intel (vLLM only)."""


@dataclass(frozen=True)
class Written:
    """One profile the program writes: its kind of dynamic resource, store and entry."""

    kind: str
    render: str
    namespace: str
    config_map: str
    key: str
    name: str
    profile: JsonObject


def program_profiles(directory: Path) -> list[Written]:
    """Every store entry the program writes in the renders of the demo and of each model example."""
    examples: dict[str, list[JsonObject]] = {"demo": []}
    examples |= {path.stem: [yaml.safe_load(path.read_text())] for path in sorted(MODEL_EXAMPLES.glob("*.yaml"))}
    examples |= TARGET_SCENARIOS
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for label, extra in examples.items():
        snapshot = directory / f"{label}.yaml"
        snapshot.write_text(yaml.safe_dump_all(_cluster_for(*extra), sort_keys=False))
        out = directory / f"{label}-out"
        render(snapshot=snapshot, out=out, now=NOW)
        for kind in STORE_KINDS:
            for path in sorted((out / "dynamic").glob(f"pulumi-python_dynamic_magicstick_{kind}.*.yaml")):
                inputs = yaml.safe_load(path.read_text())["inputs"]
                written.append(
                    Written(
                        kind,
                        label,
                        inputs["namespace"],
                        inputs["configMap"],
                        inputs["key"],
                        inputs["profileName"],
                        inputs["profile"],
                    )
                )
    return written


def bootstrap_stores() -> dict[tuple[str, str], JsonObject]:
    """The store ConfigMaps as Flux creates them, by (namespace, name)."""
    return {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in yaml.safe_load_all(STORES.read_text()) if d}


def filled_stores(written: Iterable[Written]) -> dict[tuple[str, str], JsonObject]:
    """The bootstrap stores with every written profile put in, as the store providers put it."""
    stores = copy.deepcopy(bootstrap_stores())
    for entry in written:
        store = stores[(entry.namespace, entry.config_map)]
        document = read_document(store, key=entry.key)
        profiles = with_profile(
            read_profiles(store, key=entry.key), entry.name, entry.profile, max_owned=STORE_KINDS[entry.kind].max_owned
        )
        if profiles is not None:
            store["data"][entry.key] = serialise({**document, PROFILES_FIELD: profiles})
    return stores


# The values helm-controller merges.


def merged(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> JsonObject:
    """`overlay` deep-merged onto `base`, as helm-controller merges values: maps merge key by
    key, anything else in `overlay` replaces what `base` has."""
    found = copy.deepcopy(dict(base))
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(found.get(key), Mapping):
            found[key] = merged(found[key], value)
        else:
            found[key] = copy.deepcopy(value)
    return found


def release_values(stores: Mapping[tuple[str, str], JsonObject]) -> JsonObject:
    """The values of the KubeAI HelmRelease: its valuesFrom in order, then its inline values."""
    spec = helm_release()["spec"]
    namespace = helm_release()["metadata"]["namespace"]
    values: JsonObject = {}
    for reference in spec["valuesFrom"]:
        assert reference["kind"] == "ConfigMap", reference
        store = stores[(namespace, reference["name"])]
        values = merged(values, json.loads(store["data"][reference["valuesKey"]]))
    return merged(values, spec.get("values") or {})


def by_identity(objects: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """`objects` sorted by kind, namespace and name, to compare two renders."""
    return sorted(objects, key=lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]))


# The release as helm-controller installs it.

RELEASE: Final = "kubeai"
RELEASE_NAMESPACE: Final = "ai"
"""The HelmRelease's releaseName and targetNamespace (magic-cluster/apps/ai/kubeai)."""


@dataclass(frozen=True)
class ReleaseRender:
    """The program's renders, the stores they fill, the values and what Helm renders of them."""

    chart: Path
    renders: Path
    """Where each render wrote its objects: `<label>-out/` per program_profiles."""
    written: tuple[Written, ...]
    values: JsonObject
    objects: tuple[JsonObject, ...]

    def system(self) -> JsonObject:
        """system.yaml of the `kubeai-config` ConfigMap, as KubeAI's controller reads it."""
        (config,) = [
            o for o in self.objects if (o["kind"], o["metadata"]["name"]) == ("ConfigMap", f"{RELEASE}-config")
        ]
        system: JsonObject = yaml.safe_load(config["data"]["system.yaml"])
        return system

    def effective_values(self) -> JsonObject:
        """What Helm renders with: the chart's own values.yaml with the release's merged over it."""
        own: JsonObject = yaml.safe_load((self.chart / "values.yaml").read_text())
        return merged(own, self.values)

    def models(self) -> dict[str, list[JsonObject]]:
        """The KubeAI Models each render declares, by render label (`demo` or the example's stem)."""
        found: dict[str, list[JsonObject]] = {}
        for out in sorted(self.renders.glob("*-out")):
            label = out.name.removesuffix("-out")
            found[label] = [
                yaml.safe_load(path.read_text()) for path in sorted((out / "resources").glob("model.*.yaml"))
            ]
        return found


def render_release(directory: Path, *, template: Any) -> ReleaseRender:
    """Render the demo and every model example, fill the stores, merge the release's values and
    render the chart with `template` (tests/peers/helm.py `template`)."""
    renders = directory / "renders"
    written = program_profiles(renders)
    values = release_values(filled_stores(written))
    chart = chart_copy(directory / "chart")
    objects = template(chart, values, release=RELEASE, namespace=RELEASE_NAMESPACE)
    return ReleaseRender(chart, renders, tuple(written), values, tuple(objects))
