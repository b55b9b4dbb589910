"""KubeAI installed on the real node as its HelmRelease installs it, with the images built here.

`helm template` of the vendored chart with the program's release values (tests/peers/kubeai_chart.py),
plus what an installation without registry access sets: the controller's image and Ollama's
images point at the locally built `kubeai` and `ollama` images (scripts/images/build.sh), which
the node imported. Everything the chart renders is applied, the Deployment included, so KubeAI
runs as a Pod of the node with its own ServiceAccount, Role and configuration.

The node's model cache is the program's own: the volumes and the claim
`magicstick-model-cache-ollama` that planning/models/model_cache.py declares for the real node as
the cache node, over the appliance's host folder, which the real Ollama fills once (`ollama
create`), as an administrator fills an offline appliance.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from api.model_cache import host_path
from planning.frozen import thaw
from planning.models.model_cache import CacheNode, cache_objects
from planning.objects import DesiredObject
from providers.kube import KubeClient
from tests.images import LocalImage
from tests.live.world import kind_of
from tests.node.manifests import apply_all
from tests.peers import helm
from tests.peers.kubeai_chart import RELEASE, RELEASE_NAMESPACE, ReleaseRender
from tests.support.ollama_server import serving_ollama
from tests.support.tiny_model import write_tiny_model
from tests.support.watching import watch_until_gone

JsonObject = dict[str, Any]
FIELD_MANAGER: Final = "helm-controller"
FIELD_MANAGER_PROGRAM: Final = "magicstick"


def _repository_and_tag(image: LocalImage) -> tuple[str, str]:
    repository, tag = image.reference.rsplit(":", 1)
    return repository, tag


def local_values(values: Mapping[str, Any], *, kubeai: LocalImage, ollama: LocalImage) -> JsonObject:
    """The release values with the controller's and Ollama's images pointed at the local builds."""
    found = copy.deepcopy(dict(values))
    repository, tag = _repository_and_tag(kubeai)
    found["image"] = {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}
    images = found.setdefault("modelServers", {}).setdefault("OLlama", {}).setdefault("images", {})
    for name in ("default", "cpu"):
        images[name] = ollama.reference
    return found


def chart_objects(release: ReleaseRender, *, kubeai: LocalImage, ollama: LocalImage) -> list[JsonObject]:
    """Everything the chart renders with the local values, but its CRD (installed from the vendored copy)."""
    values = local_values(release.values, kubeai=kubeai, ollama=ollama)
    rendered = helm.template(release.chart, values, release=RELEASE, namespace=RELEASE_NAMESPACE)
    return [o for o in rendered if o["kind"] != "CustomResourceDefinition"]


def install(client: KubeClient, objects: Iterable[JsonObject]) -> None:
    placed = [{**o, "metadata": {"namespace": RELEASE_NAMESPACE, **o["metadata"]}} for o in objects]
    apply_all(client, placed, field_manager=FIELD_MANAGER)


def seed_model_cache(workdir: Path, model: str) -> Path:
    """The appliance's Ollama cache folder on this host with `model` in it, made by the real
    Ollama as an administrator fills an offline appliance (README): the folder is the host's own
    (/var/lib/magicstick/model-cache/ollama), kept after the tests, as an appliance keeps it."""
    folder = Path(host_path("ollama"))
    with serving_ollama(workdir / "seeding", models=folder) as server:
        server.create(model, write_tiny_model(workdir / "source"))
    return folder


def declare_model_cache(client: KubeClient, *, node: str) -> tuple[DesiredObject, ...]:
    """The program's own model-cache objects for `node` as the cache node (its volumes and the
    Ollama claim), applied as the program's engine applies them."""
    declared = cache_objects(CacheNode(name=node), FIELD_MANAGER_PROGRAM)
    for obj in declared:
        client.apply(kind_of(thaw(obj.body)), thaw(obj.body), field_manager=FIELD_MANAGER_PROGRAM)
    return declared


def remove_model_cache(client: KubeClient, declared: Iterable[DesiredObject], *, seconds: float) -> None:
    """Delete the declared claim, then the volumes, each once it is gone: the protection
    controllers hold a claim while a Pod uses it and a volume while a claim is bound to it."""
    for obj in sorted(declared, key=lambda o: o.kind != "PersistentVolumeClaim"):
        kind = kind_of(thaw(obj.body))
        client.delete(kind, obj.name, obj.namespace)
        watch_until_gone(client, kind, obj.namespace, obj.name, seconds)
