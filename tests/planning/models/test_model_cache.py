"""The model cache: its volumes on the cache node, which Models use it, and what their status says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from api.model_cache import MODEL_CACHE_LOCATIONS
from planning.frozen import thaw
from planning.models.model_cache import (
    CACHE_NODE_LABEL,
    CACHE_PROFILE,
    HUGGINGFACE_VOLUME,
    OLLAMA_CLAIM,
    OLLAMA_VOLUME,
    cache_profile_values,
)
from planning.objects import DesiredObject
from planning.plan import Plan
from tests.planning.builders import plan_of, status_of
from tests.planning.hardware.nodes import node
from tests.planning.models.world import local_model, observed_model, platform

pytestmark = pytest.mark.pure

REPOSITORY = Path(__file__).resolve().parents[3]
KUBEAI_RELEASE = REPOSITORY / "magic-cluster/apps/ai/kubeai/helmrelease.yaml"


def _workstation(name: str = "box", **labels: str) -> dict[str, Any]:
    built = node(name, extra_labels=labels)
    built["status"]["capacity"]["ephemeral-storage"] = "512Gi"
    return built


def _cache(result: Plan) -> dict[str, DesiredObject]:
    return {o.identity: o for o in result.models.cache}


def _model(result: Plan, name: str) -> DesiredObject:
    (found,) = [m for m in result.models.models if m.name == name]
    return found


def _offline_ollama(name: str, url: str) -> dict[str, Any]:
    activation = local_model(name, engine="OLlama", url=url, memoryRequiredMi=1024)
    del activation["spec"]["local"]["preset"]
    return activation


def test_one_linux_node_keeps_the_cache_in_the_folders_clear_model_cache_empties() -> None:
    result = plan_of(*platform(), _workstation(), local_model("m"))
    cache = _cache(result)
    assert sorted(cache) == [
        f"PersistentVolume/{HUGGINGFACE_VOLUME}",
        f"PersistentVolume/{OLLAMA_VOLUME}",
        f"PersistentVolumeClaim/ai/{OLLAMA_CLAIM}",
    ]
    cleared = {"/" + location for location in MODEL_CACHE_LOCATIONS.values()}
    for name in (HUGGINGFACE_VOLUME, OLLAMA_VOLUME):
        volume = cache[f"PersistentVolume/{name}"]
        spec = thaw(volume.body)["spec"]
        assert spec["hostPath"]["path"] in cleared
        assert spec["persistentVolumeReclaimPolicy"] == "Retain"
        assert spec["capacity"] == {"storage": "512Gi"}
        (term,) = spec["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert term["matchExpressions"] == [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["box"]}]
        assert volume.retain_on_delete
    claim = thaw(cache[f"PersistentVolumeClaim/ai/{OLLAMA_CLAIM}"].body)
    assert claim["spec"]["volumeName"] == OLLAMA_VOLUME
    assert cache[f"PersistentVolumeClaim/ai/{OLLAMA_CLAIM}"].retain_on_delete


def test_a_small_disk_still_offers_what_kubeai_claims() -> None:
    small = node("box")
    small["status"]["capacity"]["ephemeral-storage"] = "2Gi"
    spec = thaw(_cache(plan_of(*platform(), small, local_model("m")))[f"PersistentVolume/{HUGGINGFACE_VOLUME}"].body)[
        "spec"
    ]
    assert spec["capacity"] == {"storage": "10Gi"}


def test_no_cache_is_declared_while_kubeai_is_not_enabled() -> None:
    assert plan_of(*platform(), _workstation()).models.cache == ()


def test_a_huggingface_vllm_model_is_loaded_into_the_cache_once() -> None:
    result = plan_of(*platform(), _workstation(), local_model("m"))
    model = _model(result, "m")
    assert thaw(model.body)["spec"]["cacheProfile"] == CACHE_PROFILE
    assert set(model.replace_on_changes) == {"spec.url", "spec.cacheProfile"}
    assert status_of(result, "ModelActivation", "m")["modelCache"]["state"] == "Loading"


def test_the_status_says_loaded_once_kubeai_does() -> None:
    spec = {"url": "hf://example/model", "engine": "VLLM", "cacheProfile": CACHE_PROFILE}
    loading = observed_model("m", spec=spec)
    loaded = observed_model("m", spec=spec)
    loaded["status"]["cache"] = {"loaded": True}
    states = [
        status_of(plan_of(*platform(), _workstation(), local_model("m"), seen), "ModelActivation", "m")["modelCache"]
        for seen in (loading, loaded)
    ]
    assert [s["state"] for s in states] == ["Loading", "Loaded"]
    assert all(s["profile"] == CACHE_PROFILE for s in states)


def test_a_model_keeps_its_cache_profile_when_the_cache_node_is_no_longer_clear() -> None:
    spec = {"url": "hf://example/model", "engine": "VLLM", "cacheProfile": CACHE_PROFILE}
    result = plan_of(
        *platform(), _workstation("a"), _workstation("b"), local_model("m"), observed_model("m", spec=spec)
    )
    assert thaw(_model(result, "m").body)["spec"]["cacheProfile"] == CACHE_PROFILE
    assert result.models.cache == ()


def test_several_nodes_name_the_label_that_chooses_the_cache_node() -> None:
    unlabelled = plan_of(*platform(), _workstation("a"), _workstation("b"), local_model("m"))
    assert "cacheProfile" not in thaw(_model(unlabelled, "m").body)["spec"]
    cache = status_of(unlabelled, "ModelActivation", "m")["modelCache"]
    assert cache["state"] == "NotCached"
    assert f"{CACHE_NODE_LABEL}=true" in cache["message"]

    labelled = plan_of(
        *platform(), _workstation("a"), _workstation("b", **{CACHE_NODE_LABEL: "true"}), local_model("m")
    )
    volume = thaw(_cache(labelled)[f"PersistentVolume/{HUGGINGFACE_VOLUME}"].body)
    assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["b"]
    assert thaw(_model(labelled, "m").body)["spec"]["cacheProfile"] == CACHE_PROFILE


def test_two_labelled_nodes_are_named() -> None:
    both = {CACHE_NODE_LABEL: "true"}
    result = plan_of(*platform(), _workstation("a", **both), _workstation("b", **both), local_model("m"))
    assert result.models.cache == ()
    assert "Nodes a, b" in status_of(result, "ModelActivation", "m")["modelCache"]["message"]


def test_an_ollama_model_in_the_cache_volume_downloads_nothing() -> None:
    url = f"pvc://{OLLAMA_CLAIM}?model=tiny"
    from_volume = plan_of(*platform(), _workstation(), _offline_ollama("m", url))
    assert status_of(from_volume, "ModelActivation", "m")["modelCache"]["state"] == "FromVolume"
    assert "cacheProfile" not in thaw(_model(from_volume, "m").body)["spec"]

    pulled = plan_of(*platform(), _workstation(), local_model("m", engine="OLlama"))
    cache = status_of(pulled, "ModelActivation", "m")["modelCache"]
    assert cache["state"] == "NotCached"
    assert f"pvc://{OLLAMA_CLAIM}?model=" in cache["message"]


def test_the_kubeai_release_defines_the_cache_profile_over_the_huggingface_volume() -> None:
    release = yaml.safe_load(KUBEAI_RELEASE.read_text())
    assert release["spec"]["values"]["cacheProfiles"] == cache_profile_values()
