"""Every image the project ships runs as it is, or is a placeholder the program warns about.

The image slots are read from the files themselves (every catalog file, and KubeAI's
HelmRelease in the GitOps tree), so an image added anywhere is checked here: a public image
pinned by its tag (and digest, where one is given), or a placeholder that `unset_images` (what
`render` prints and the run logs) names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from catalogs import CATALOG_FILES, load_catalogs
from planning.snapshot import Snapshot
from planning.unset_images import unset_images

REPOSITORY = Path(__file__).resolve().parents[2]
KUBEAI_RELEASE = REPOSITORY / "magic-cluster" / "apps" / "ai" / "kubeai" / "helmrelease.yaml"
CATALOG_DIRECTORY = REPOSITORY / "catalogs"
PINNED_PUBLIC = re.compile(
    r"^(?P<registry>[a-z0-9-]+(\.[a-z0-9-]+)+(:[0-9]+)?)/[a-z0-9]+([._/-][a-z0-9]+)*"
    r":(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})(@sha256:[0-9a-f]{64})?$"
)
IMAGE_KEY = re.compile(r"(^i|I)mage$")


@dataclass(frozen=True)
class Slot:
    field: str
    """As the warnings name it: `runtimes.yaml freetoken.image`."""
    image: str | None


def _walk(value: Any, path: str) -> Iterator[Slot]:
    """Every string under a key ending in `image`/`Image` and every entry of an `images` map;
    list entries are named by their `name` or `id`, as the warnings name them."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key == "images" and isinstance(item, dict):
                yield from (Slot(f"{where}.{name}", image) for name, image in item.items())
            elif IMAGE_KEY.search(str(key)) and not isinstance(item, (dict, list)):
                yield Slot(where, item)
            else:
                yield from _walk(item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            label = item.get("name", item.get("id", index)) if isinstance(item, dict) else index
            yield from _walk(item, f"{path}[{label}]")


def catalog_slots() -> list[Slot]:
    slots = []
    for file_name, _ in CATALOG_FILES.values():
        document = yaml.safe_load((CATALOG_DIRECTORY / file_name).read_text())
        slots += [Slot(f"{file_name} {slot.field}", slot.image) for slot in _walk(document, "")]
        # A realtime profile without `image` has no default: a slot the walk cannot see.
        for profile in (document.get("realtime") or {}).get("profiles", []):
            if "image" not in profile:
                slots.append(Slot(f"{file_name} realtime.profiles[{profile['name']}].image", None))
    return slots


def kubeai_release() -> dict[str, Any]:
    release: dict[str, Any] = yaml.safe_load(KUBEAI_RELEASE.read_text())
    return release


def release_slots() -> list[Slot]:
    release = kubeai_release()
    where = f"HelmRelease {release['metadata']['namespace']}/{release['metadata']['name']} spec"
    return [Slot(f"{where}.{slot.field}", slot.image) for slot in _walk(release["spec"], "")]


SLOTS = catalog_slots() + release_slots()
WARNED = {image.field: image for image in unset_images(load_catalogs(), Snapshot.from_objects([kubeai_release()]))}


def _pinned_public(image: str | None) -> bool:
    match = PINNED_PUBLIC.match(image or "")
    return (
        match is not None
        and not match["registry"].endswith(("example.com", "example.local"))
        and match["tag"] != "latest"
        and "CHANGEME" not in (image or "")
    )


def test_the_listing_reaches_the_catalogs_and_the_kubeai_release():
    fields = {slot.field for slot in SLOTS}
    assert "runtimes.yaml freetoken.image" in fields
    assert "gpu-compatibility.yaml profiles[strix-halo].engines.VLLM.validationImage" in fields
    assert "HelmRelease flux-system/kubeai spec.values.modelServers.VLLM.images.intel-gpu" in fields


@pytest.mark.parametrize("slot", SLOTS, ids=lambda slot: slot.field)
def test_every_shipped_image_is_pinned_and_public_or_a_placeholder_the_render_warns_about(slot):
    if _pinned_public(slot.image):
        assert slot.field not in WARNED
        return
    assert slot.field in WARNED, f"{slot.field} = {slot.image!r}: not a pinned public image, and nothing warns"
    assert WARNED[slot.field].image == slot.image


def test_nothing_is_warned_about_that_the_files_do_not_hold():
    assert set(WARNED) <= {slot.field for slot in SLOTS}
