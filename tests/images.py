"""Where the tests find the images that scripts/images/build.sh builds without a registry.

Each image is an OCI archive in the image cache (`$MAGICSTICK_IMAGE_CACHE`, default
`~/.cache/magicstick/images`), `<image>/image.tar`, beside `<image>/reference`, the name it is
imported as (`localhost/magicstick/<image>:<manifest digest>`). Found, never built here: a missing
image is an error naming the command that builds it, never a skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from tests.toolchain import REPO_ROOT

BUILD_SCRIPT: Final = REPO_ROOT / "scripts" / "images" / "build.sh"
CACHE_ENV: Final = "MAGICSTICK_IMAGE_CACHE"
SERVICE_IMAGES: Final = ("access-guard", "reconcile-trigger", "dashboard")
WORKSPACE_IMAGE: Final = "workspace"
OPERATOR_IMAGE: Final = "operator"
KUBEAI_IMAGE: Final = "kubeai"
OLLAMA_IMAGE: Final = "ollama"


class ImageNotBuilt(Exception):
    """An image the tests need is not in the cache; the message says how to build it."""


@dataclass(frozen=True)
class LocalImage:
    name: str
    archive: Path
    reference: str
    """`localhost/magicstick/<name>:<sha256 hex of the manifest>`: Pods name it with this."""

    @property
    def digest(self) -> str:
        """The manifest's sha256 (hex), which the reference's tag is."""
        return self.reference.rsplit(":", 1)[1]

    def config_digest(self) -> str:
        """`sha256:<hex>` of the image's configuration: the image ID the kubelet reports for a
        Pod's container whose image came from no registry (there is no repository digest)."""
        with tarfile.open(self.archive) as archive:
            manifest = json.load(_member(self.archive, archive, f"blobs/sha256/{self.digest}"))
        return str(manifest["config"]["digest"])


def _member(path: Path, archive: tarfile.TarFile, name: str) -> IO[bytes]:
    for candidate in (name, f"./{name}"):
        with contextlib.suppress(KeyError):
            stream = archive.extractfile(candidate)
            if stream is not None:
                return stream
    raise ImageNotBuilt(f"{path} has no {name}: rebuild it with `{BUILD_SCRIPT.relative_to(REPO_ROOT)}`")


def cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else Path.home() / ".cache" / "magicstick" / "images"


def local_image(name: str) -> LocalImage:
    directory = cache_dir() / name
    archive, reference = directory / "image.tar", directory / "reference"
    if not (archive.is_file() and reference.is_file()):
        raise ImageNotBuilt(
            f"image {name} is not built in {directory}: run `{BUILD_SCRIPT.relative_to(REPO_ROOT)} {name}` (as root; `make images` and scripts/run-tests.sh do)"
        )
    return LocalImage(name=name, archive=archive, reference=reference.read_text().strip())
