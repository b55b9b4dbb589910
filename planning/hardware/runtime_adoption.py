"""runtimeReady: KubeAI has adopted the AMD runtime images it is meant to run.

Adopted means, in this order (the first that fails is the reason):
1. the kubeai module is Ready;
2. KubeAI's HelmRelease (flux-system/kubeai) is Ready at its current generation: the chart,
   with the values of the runtime-images store, is installed and its controller rolled out;
3. KubeAI's effective configuration (the `kubeai-config` ConfigMap its chart renders, key
   `system.yaml`) names, for each catalogued engine, the image AMD models run: the validated
   digest of the runtime-images store where one passed, else any release image;
4. every live Pod of a KubeAI Model whose resource profile selects the AMD image runs the image
   that configuration gives it.

Independent of any validation test's state: before any validation the release images count.

> **Why** — a Ready module only says Flux applied the HelmRelease; the image a model really
> runs is decided by the values Helm rendered and by the Pods KubeAI rolled out since.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from api.vocabulary import AdoptionReason
from planning.snapshot import KubeAIModel, Pod, Snapshot

KUBEAI_RELEASE: Final = ("flux-system", "kubeai")
KUBEAI_NAMESPACE: Final = "ai"
"""Where KubeAI runs: its HelmRelease's targetNamespace (magic-cluster/apps/ai/kubeai)."""
KUBEAI_CONFIG_MAP: Final = "kubeai-config"
"""The configuration KubeAI's chart renders (`<release>-config`) and its controller reads."""
KUBEAI_CONFIG_KEY: Final = "system.yaml"
AMD_IMAGE_NAME: Final = "amd-gpu"
"""The image name (modelServers.<engine>.images.<name>) the AMD resource profiles select."""
DEFAULT_IMAGE_NAME: Final = "default"
SERVER_CONTAINER: Final = "server"
"""The container of a KubeAI model Pod that runs the engine."""
ENDED_PHASES: Final = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class RuntimeAdoption:
    ready: bool
    reason: AdoptionReason
    message: str
    effective_images: Mapping[str, str] = field(default_factory=dict)
    """Engine -> the image KubeAI's configuration gives AMD models (empty before it is read)."""


@dataclass(frozen=True)
class _Configuration:
    images: Mapping[str, Mapping[str, str]]
    """Engine -> image name -> image (modelServers)."""
    profile_images: Mapping[str, str]
    """Resource profile -> the image name it selects (resourceProfiles.<name>.imageName)."""

    def image(self, engine: str, image_name: str) -> str:
        """The image KubeAI picks for `engine` under `image_name`, falling back to its default
        image as its model controller does; "" when neither is configured."""
        images = self.images.get(engine, {})
        return images.get(image_name) or images.get(DEFAULT_IMAGE_NAME) or ""


def runtime_adoption(
    snapshot: Snapshot, *, kubeai_phase: str | None, validated: Mapping[str, str], engines: Iterable[str]
) -> RuntimeAdoption:
    """Whether KubeAI runs the AMD images it should (module docstring). Pure."""
    if kubeai_phase != "Ready":
        return RuntimeAdoption(
            False, AdoptionReason.KUBEAI_NOT_READY, f"the kubeai module is {kubeai_phase or 'not requested'}"
        )
    release = snapshot.generic("HelmRelease", *KUBEAI_RELEASE)
    where = "/".join(KUBEAI_RELEASE)
    if release is None:
        return RuntimeAdoption(False, AdoptionReason.RELEASE_NOT_READY, f"HelmRelease {where} is not there yet")
    ready = release.condition("Ready")
    if ready is None or ready.status != "True" or ready.observed_generation not in (None, release.meta.generation):
        detail = f": {ready.message}" if ready is not None and ready.message else ""
        return RuntimeAdoption(
            False,
            AdoptionReason.RELEASE_NOT_READY,
            f"HelmRelease {where} is not Ready at generation {release.meta.generation}{detail}",
        )
    config_map = snapshot.config_map(KUBEAI_NAMESPACE, KUBEAI_CONFIG_MAP)
    config_where = f"ConfigMap {KUBEAI_NAMESPACE}/{KUBEAI_CONFIG_MAP}"
    if config_map is None or not isinstance(config_map.data.get(KUBEAI_CONFIG_KEY), str):
        return RuntimeAdoption(
            False, AdoptionReason.CONFIGURATION_MISSING, f"{config_where} (key {KUBEAI_CONFIG_KEY}) is not there"
        )
    configuration = _configuration(config_map.data[KUBEAI_CONFIG_KEY])
    if configuration is None:
        return RuntimeAdoption(
            False,
            AdoptionReason.CONFIGURATION_MALFORMED,
            f"{config_where}: {KUBEAI_CONFIG_KEY} is not a KubeAI configuration",
        )
    effective = {
        engine: configuration.image(engine, AMD_IMAGE_NAME) for engine in sorted(set(engines) | set(validated))
    }
    for engine, image in effective.items():
        wanted = validated.get(engine)
        if not image:
            return RuntimeAdoption(
                False,
                AdoptionReason.IMAGE_NOT_CONFIGURED,
                f"{config_where} names no {AMD_IMAGE_NAME} image for {engine}",
                effective,
            )
        if wanted and image != wanted:
            return RuntimeAdoption(
                False,
                AdoptionReason.IMAGE_NOT_CONFIGURED,
                f"KubeAI runs {image} for {engine} on {AMD_IMAGE_NAME}; the validated image is {wanted}",
                effective,
            )
    for model in snapshot.models:
        image_name = configuration.profile_images.get(_profile_name(model), DEFAULT_IMAGE_NAME)
        if image_name != AMD_IMAGE_NAME:
            continue
        expected = str(model.spec.get("image") or "") or configuration.image(
            str(model.spec.get("engine") or ""), image_name
        )
        for pod in _live(snapshot.pods_of(model)):
            running = pod.images.get(SERVER_CONTAINER, "")
            if running != expected:
                return RuntimeAdoption(
                    False,
                    AdoptionReason.POD_ON_OTHER_IMAGE,
                    f"Pod {pod.meta.namespace}/{pod.meta.name} of Model {model.meta.name} runs {running or 'no server container'}; "
                    f"KubeAI's configuration gives it {expected}",
                    effective,
                )
    if not effective:
        return RuntimeAdoption(
            True,
            AdoptionReason.ADOPTED,
            "KubeAI's release and configuration are current; no compatibility profile names an engine",
        )
    listed = ", ".join(f"{engine} {image}" for engine, image in effective.items())
    return RuntimeAdoption(True, AdoptionReason.ADOPTED, f"KubeAI runs the configured AMD images: {listed}", effective)


def _configuration(text: str) -> _Configuration | None:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(document, dict):
        return None
    servers = document.get("modelServers") or {}
    profiles = document.get("resourceProfiles") or {}
    if not isinstance(servers, dict) or not isinstance(profiles, dict):
        return None
    images = {
        str(engine): {str(name): str(image) for name, image in _dict(server.get("images")).items() if image}
        for engine, server in servers.items()
        if isinstance(server, dict)
    }
    profile_images = {
        str(name): str(body.get("imageName"))
        for name, body in profiles.items()
        if isinstance(body, dict) and body.get("imageName")
    }
    return _Configuration(images=images, profile_images=profile_images)


def _dict(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _profile_name(model: KubeAIModel) -> str:
    return str(model.spec.get("resourceProfile") or "").partition(":")[0]


def _live(pods: Iterable[Pod]) -> tuple[Pod, ...]:
    return tuple(p for p in pods if not p.terminating and p.phase not in ENDED_PHASES)
