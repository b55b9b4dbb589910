"""The model cache: model weights kept on one node's disk, so a new Pod of a model loads them
from there instead of downloading them again.

The cache is the host folders of api/model_cache.py (the ones clear-model-cache empties) on
the *cache node*: the one Linux node of the cluster, or, where there are several, the one
labelled `appliance.magicstick.dev/model-cache=true`. The program declares, while KubeAI is
enabled:

- PersistentVolume `magicstick-model-cache-huggingface`: hostPath of the huggingface folder,
  affine to the cache node, `Retain`. KubeAI's cache profile `magicstick-model-cache` (the
  KubeAI HelmRelease's values) names it; KubeAI's own claim `shared-model-cache-<profile>`
  binds it, its loader Job downloads a model once into `models/<model>-<uid>`, and every
  replica mounts that folder;
- PersistentVolume `magicstick-model-cache-ollama` and the claim `magicstick-model-cache-ollama`
  in KubeAI's namespace: the Ollama folder, which a `pvc://magicstick-model-cache-ollama?model=`
  URL serves (planning/models/model_url.py).

A vLLM Model whose URL scheme the engine catalog lists in `cachedUrlSchemes` gets
`spec.cacheProfile`. KubeAI makes `cacheProfile` immutable and, once set, the URL too, so a
Model keeps the profile it was created with, and a new URL replaces the Model
(planning/models/kubeai.py). Models using the cache run on the cache node (the volume's node
affinity). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from api.model_cache import host_path
from planning.hardware.memory import mebibytes
from planning.labels import FIELD_MANAGER_ANNOTATION, MANAGED_BY, MANAGED_BY_VALUE, SKIP_AWAIT_ANNOTATION
from planning.models.model_url import ollama_claim
from planning.objects import DesiredObject
from planning.snapshot import KubeAIModel, Node

CACHE_NODE_LABEL: Final = "appliance.magicstick.dev/model-cache"
"""On a cluster of several Linux nodes, `true` on the one that keeps the model cache."""
CACHE_PROFILE: Final = "magicstick-model-cache"
"""KubeAI's cache profile over the huggingface volume (magic-cluster/apps/ai/kubeai/helmrelease.yaml)."""
HUGGINGFACE_VOLUME: Final = "magicstick-model-cache-huggingface"
OLLAMA_VOLUME: Final = "magicstick-model-cache-ollama"
OLLAMA_CLAIM: Final = "magicstick-model-cache-ollama"
KUBEAI_NAMESPACE: Final = "ai"
"""Where KubeAI runs its Models (its HelmRelease's targetNamespace): the Ollama claim lives here."""
CLAIM_REQUEST: Final = "10Gi"
"""What KubeAI's shared cache claim requests: a volume must offer at least this much to bind."""
_MINIMUM_CAPACITY_MI: Final = 10 * 1024
_GIB_MI: Final = 1024


class CacheState(StrEnum):
    """What status.modelCache.state of a ModelActivation says."""

    LOADED = "Loaded"
    """KubeAI's loader has put the weights in the cache (KubeAI's status.cache.loaded)."""
    LOADING = "Loading"
    """The Model uses the cache; KubeAI's loader has not finished."""
    FROM_VOLUME = "FromVolume"
    """An Ollama model read from the cache's volume (a pvc:// URL): nothing is downloaded."""
    NOT_CACHED = "NotCached"
    """Each new Pod fetches the weights itself; the message says why."""


@dataclass(frozen=True)
class CacheNode:
    """The node that keeps the model cache, or why there is none."""

    name: str | None
    capacity: str = CLAIM_REQUEST
    """The volumes' declared capacity: the node's ephemeral storage, at least CLAIM_REQUEST."""
    reason: str = ""


@dataclass(frozen=True)
class ModelCacheUse:
    """How one activation's model uses the cache: its Model's cacheProfile and its status."""

    profile: str | None
    state: CacheState
    message: str

    def to_status(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"state": self.state.value, "message": self.message}
        if self.profile is not None:
            fields["profile"] = self.profile
        return fields


def _linux(node: Node) -> bool:
    return str(node.node_info.get("operatingSystem") or "linux") == "linux"


def cache_node(nodes: Sequence[Node]) -> CacheNode:
    """The cache node of the cluster, or why none is chosen. Pure."""
    linux = sorted((n for n in nodes if _linux(n)), key=lambda n: n.meta.name)
    labelled = [n for n in linux if n.meta.labels.get(CACHE_NODE_LABEL) == "true"]
    if len(labelled) > 1:
        names = ", ".join(n.meta.name for n in labelled)
        return CacheNode(name=None, reason=f"Nodes {names} are all labelled {CACHE_NODE_LABEL}=true; keep it on one.")
    chosen = labelled or linux
    if len(chosen) == 1:
        return CacheNode(name=chosen[0].meta.name, capacity=_capacity(chosen[0]))
    if not chosen:
        return CacheNode(name=None, reason="The cluster has no Linux node to keep the model cache.")
    return CacheNode(
        name=None,
        reason=(
            f"The cluster has {len(chosen)} Linux nodes: label the one that keeps the model cache "
            f"with {CACHE_NODE_LABEL}=true."
        ),
    )


def _capacity(node: Node) -> str:
    """The node's ephemeral storage in whole GiB, at least CLAIM_REQUEST: hostPath has no quota,
    so this only says how large the folder can grow. Pure."""
    size_mi = mebibytes(node.capacity.get("ephemeral-storage")) or 0
    return f"{max(size_mi, _MINIMUM_CAPACITY_MI) // _GIB_MI}Gi"


def _volume(name: str, runtime: str, node: CacheNode, field_manager: str) -> DesiredObject:
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE},
            "annotations": {FIELD_MANAGER_ANNOTATION: field_manager, SKIP_AWAIT_ANNOTATION: "true"},
        },
        "spec": {
            "capacity": {"storage": node.capacity},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "volumeMode": "Filesystem",
            "hostPath": {"path": host_path(runtime), "type": "DirectoryOrCreate"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node.name]}
                            ]
                        }
                    ]
                }
            },
        },
    }
    return DesiredObject.of(body, retain_on_delete=True)


def _ollama_claim(field_manager: str) -> DesiredObject:
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": OLLAMA_CLAIM,
            "namespace": KUBEAI_NAMESPACE,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE},
            "annotations": {FIELD_MANAGER_ANNOTATION: field_manager, SKIP_AWAIT_ANNOTATION: "true"},
        },
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": OLLAMA_VOLUME,
            "resources": {"requests": {"storage": CLAIM_REQUEST}},
        },
    }
    return DesiredObject.of(body, retain_on_delete=True)


def cache_objects(node: CacheNode, field_manager: str) -> tuple[DesiredObject, ...]:
    """The volumes and the Ollama claim of the cache node; none without one. Retained on
    delete: removing them never removes a model the cache holds. Pure."""
    if node.name is None:
        return ()
    return (
        _volume(HUGGINGFACE_VOLUME, "huggingface", node, field_manager),
        _volume(OLLAMA_VOLUME, "ollama", node, field_manager),
        _ollama_claim(field_manager),
    )


def cache_use(
    *,
    engine: str,
    url: str,
    cached_schemes: tuple[str, ...],
    node: CacheNode,
    observed: KubeAIModel | None,
) -> ModelCacheUse:
    """Whether a KubeAI Model uses the cache, and what its activation's status says. An observed
    Model keeps the profile it has (KubeAI refuses a change). Pure."""
    kept = observed.spec.get("cacheProfile") if observed is not None else None
    if isinstance(kept, str) and kept:
        loaded = observed is not None and observed.cache_loaded
        return ModelCacheUse(
            profile=kept,
            state=CacheState.LOADED if loaded else CacheState.LOADING,
            message=(
                f"KubeAI has loaded the weights into cache profile {kept}; new Pods read them from there."
                if loaded
                else f"KubeAI's loader Job is putting the weights into cache profile {kept}."
            ),
        )
    if engine == "OLlama":
        claim = ollama_claim(url)
        if claim is not None:
            return ModelCacheUse(
                profile=None,
                state=CacheState.FROM_VOLUME,
                message=f"Ollama reads the model from the volume of claim {claim}; nothing is downloaded.",
            )
        return ModelCacheUse(
            profile=None,
            state=CacheState.NOT_CACHED,
            message=(
                "Each new Ollama Pod pulls the model; put it in the model cache and name it "
                f"pvc://{OLLAMA_CLAIM}?model=<name> to load it from there."
            ),
        )
    scheme = url.partition("://")[0]
    if scheme not in cached_schemes:
        return ModelCacheUse(
            profile=None,
            state=CacheState.NOT_CACHED,
            message=f"KubeAI caches only {', '.join(f'{s}://' for s in cached_schemes) or 'no'} URLs of {engine}.",
        )
    if node.name is None:
        return ModelCacheUse(profile=None, state=CacheState.NOT_CACHED, message=node.reason)
    return ModelCacheUse(
        profile=CACHE_PROFILE,
        state=CacheState.LOADING,
        message=f"KubeAI's loader Job puts the weights into the model cache on node {node.name}.",
    )


def cache_profile_values() -> Mapping[str, Any]:
    """The KubeAI release values that define the cache profile (kept in the HelmRelease). Pure."""
    return {CACHE_PROFILE: {"sharedFilesystem": {"persistentVolumeName": HUGGINGFACE_VOLUME}}}
