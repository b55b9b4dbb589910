"""The images an administrator still has to set, where each is set, and what waits on it. Pure.

What counts as unset is `catalogs.images.is_placeholder_image` and nothing else. The slots:

- `runtimes.yaml freetoken.image`: every FreeToken activation is Failed / RuntimeImageNotSet
  while it is unset (planning.models.freetoken);
- `runtimes.yaml realtime.profiles[<profile>].image`: an activation of that profile needs its
  own `runtimeImage` (planning.models.realtime);
- `gpu-compatibility.yaml profiles[<id>].engines.<engine>.validationImage`: the image a GPU
  validation run of that engine pulls;
- the images of KubeAI's HelmRelease as observed (`flux-system/kubeai`,
  `spec.values.modelServers.<engine>.images.<name>`): the engine image of the KubeAI Models whose
  resource profile names that image.

The runtime and compatibility catalogs have no catalog ConfigMap: they are set in the file of the
directory `magicstick:catalogDir` names (`render --catalogs`), which replaces the shipped one.
The same sentence is the activation's status message, the warning of `magicstick render` and
the warning of the run's log, once per slot whatever the number of activations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from catalogs import CATALOG_FILES, Catalogs, FreeTokenRuntime, RealtimeProfile, RealtimeRuntime
from catalogs.images import is_placeholder_image
from planning.hardware.runtime_adoption import KUBEAI_RELEASE
from planning.reasons import Reason
from planning.snapshot import Snapshot

RUNTIMES_FILE: Final = CATALOG_FILES["runtimes"][0]
COMPATIBILITY_FILE: Final = CATALOG_FILES["gpu_compatibility"][0]
CATALOG_DIRECTORY: Final = "of the directory magicstick:catalogDir names (render: --catalogs DIR)"
KUBEAI_HELM_RELEASE_FILE: Final = "magic-cluster/apps/ai/kubeai/helmrelease.yaml"


@dataclass(frozen=True)
class UnsetImage:
    """One image slot that holds a placeholder, or nothing."""

    field: str
    """Where it is set: `runtimes.yaml freetoken.image`."""
    image: str | None
    """What the slot holds now; None when it holds no image."""
    remedy: str
    """What to set there, and what fails until then."""

    @property
    def state(self) -> str:
        return f"'{self.image}' is a placeholder" if self.image else "no image is set"

    @property
    def rule(self) -> str:
        """The sentence after the field: the state, then the remedy."""
        return f"{self.state}; {self.remedy}"

    def describe(self) -> str:
        """The warning of `render` and of the run's log: `RuntimeImageNotSet: <field>: <rule>`."""
        return f"{Reason.RUNTIME_IMAGE_NOT_SET}: {self.field}: {self.rule}"


def freetoken_image(runtime: FreeTokenRuntime) -> UnsetImage | None:
    """The FreeToken server image, when it is unset. Pure."""
    if not is_placeholder_image(runtime.image):
        return None
    return UnsetImage(
        field=f"{RUNTIMES_FILE} freetoken.image",
        image=runtime.image,
        remedy=(
            "set freetoken.image to a FreeToken server image (the `ft` CLI on PATH), pinned by tag or digest, "
            f"in {RUNTIMES_FILE} {CATALOG_DIRECTORY}; until then every FreeToken activation is Failed / "
            f"{Reason.RUNTIME_IMAGE_NOT_SET}"
        ),
    )


def realtime_image(profile: RealtimeProfile, realtime: RealtimeRuntime) -> UnsetImage | None:
    """The catalog default of one realtime profile, when it is unset. Pure."""
    if not is_placeholder_image(profile.image):
        return None
    field = f"{RUNTIMES_FILE} realtime.profiles[{profile.name}].image"
    return UnsetImage(
        field=field,
        image=profile.image,
        remedy=(
            f"set a vLLM-Omni {realtime.version} image built for {profile.backend} there, in {RUNTIMES_FILE} "
            f"{CATALOG_DIRECTORY}, or spec.local.realtime.runtimeImage on each {profile.name} activation; "
            f"until then one without runtimeImage is Failed / {Reason.RUNTIME_IMAGE_NOT_SET}"
        ),
    )


def validation_images(catalogs: Catalogs) -> tuple[UnsetImage, ...]:
    """The GPU validation images still unset, by profile and engine. Pure."""
    return tuple(
        UnsetImage(
            field=f"{COMPATIBILITY_FILE} profiles[{profile.id}].engines.{name}.validationImage",
            image=engine.validation_image,
            remedy=(
                f"build the {name} validation image (validation/README.md), push it and set the field in "
                f"{COMPATIBILITY_FILE} {CATALOG_DIRECTORY}; until then a validation run of {name} on "
                f"{profile.id} cannot pull its image"
            ),
        )
        for profile in catalogs.gpu_compatibility.entries
        for name, engine in sorted(profile.engines.items())
        if is_placeholder_image(engine.validation_image)
    )


def kubeai_images(snapshot: Snapshot) -> tuple[UnsetImage, ...]:
    """The engine images of KubeAI's HelmRelease, as the cluster holds it, still unset. Pure."""
    release = snapshot.generic("HelmRelease", *KUBEAI_RELEASE)
    if release is None:
        return ()
    namespace, name = KUBEAI_RELEASE
    servers = _mapping(_mapping(release.spec.get("values")).get("modelServers"))
    found = []
    for engine, server in _by_key(servers):
        for image_name, image in _by_key(_mapping(_mapping(server).get("images"))):
            if not isinstance(image, str) or not is_placeholder_image(image):
                continue
            found.append(
                UnsetImage(
                    field=f"HelmRelease {namespace}/{name} spec.values.modelServers.{engine}.images.{image_name}",
                    image=image,
                    remedy=(
                        f"set it in {KUBEAI_HELM_RELEASE_FILE} of the Git source Flux applies; until then "
                        f"KubeAI Models whose resource profile names the image {image_name} cannot start"
                    ),
                )
            )
    return tuple(found)


def unset_images(catalogs: Catalogs, snapshot: Snapshot) -> tuple[UnsetImage, ...]:
    """Every unset image slot of the catalogs in force and of KubeAI's HelmRelease, by field. Pure."""
    runtimes = catalogs.runtimes
    catalogued = (
        freetoken_image(runtimes.freetoken),
        *(realtime_image(profile, runtimes.realtime) for profile in runtimes.realtime.profiles),
    )
    found = [*(image for image in catalogued if image is not None), *validation_images(catalogs)]
    return tuple(sorted([*found, *kubeai_images(snapshot)], key=lambda image: image.field))


def _mapping(value: Any) -> Mapping[Any, Any]:
    return value if isinstance(value, Mapping) else {}


def _by_key(mapping: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """The items in key order; a YAML key need not be a string."""
    return sorted(mapping.items(), key=lambda item: str(item[0]))
