"""KubeAI installed on the real node as its HelmRelease installs it, with the images built here.

`helm template` of the vendored chart with the program's release values (tests/peers/kubeai_chart.py),
plus what an installation without registry access sets: the controller's image and Ollama's
images point at the locally built `kubeai` and `ollama` images (scripts/images/build.sh), which
the node imported. Everything the chart renders is applied, the Deployment included, so KubeAI
runs as a Pod of the node with its own ServiceAccount, Role and configuration.

The node's model cache is a folder of the test's work directory, exposed as a hostPath
PersistentVolume bound to the claim `magicstick-model-cache-ollama` in `ai`: Ollama's models
folder, filled once on the host by the real Ollama (`ollama create`), as an administrator fills
an offline appliance.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from providers.kinds import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM
from providers.kube import KubeClient
from tests.images import LocalImage
from tests.node.manifests import apply_all
from tests.peers import helm
from tests.peers.kubeai_chart import RELEASE, RELEASE_NAMESPACE, ReleaseRender

JsonObject = dict[str, Any]
FIELD_MANAGER: Final = "helm-controller"
CACHE_CLAIM: Final = "magicstick-model-cache-ollama"
CACHE_SIZE: Final = "1Gi"


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


def cache_volume(client: KubeClient, folder: Path, *, node: str) -> None:
    """A hostPath PersistentVolume of `folder` on `node`, reserved for the cache claim, and the claim."""
    client.apply(
        PERSISTENT_VOLUME,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{CACHE_CLAIM}-{node}"},
            "spec": {
                "capacity": {"storage": CACHE_SIZE},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "hostPath": {"path": str(folder), "type": "Directory"},
                "claimRef": {"namespace": RELEASE_NAMESPACE, "name": CACHE_CLAIM},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
                                ]
                            }
                        ]
                    }
                },
            },
        },
        field_manager="tests",
    )
    client.apply(
        PERSISTENT_VOLUME_CLAIM,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": CACHE_CLAIM, "namespace": RELEASE_NAMESPACE},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": f"{CACHE_CLAIM}-{node}",
                "resources": {"requests": {"storage": CACHE_SIZE}},
            },
        },
        field_manager="tests",
    )
