"""The files of a render: their folders, names and order (pure).

A render is a set of YAML files under three folders, always listed in one order: resources/,
then status/, then dynamic/, each by file name. A directory render, the `-o -` stream and
`diff` all follow it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

RESOURCES = "resources"
STATUS = "status"
DYNAMIC = "dynamic"
FOLDERS = (RESOURCES, STATUS, DYNAMIC)
SUFFIX = ".yaml"
MAX_FILE_NAME_BYTES = 255
HASH_CHARS = 10


@dataclass(frozen=True)
class RenderedFile:
    path: str
    """Relative to the render's root, `/`-separated: `resources/configmap.ai-system.x.yaml`."""
    text: str

    @property
    def folder(self) -> str:
        return self.path.split("/", 1)[0]


def file_order(path: str) -> tuple[int, str]:
    """Pure. The sort key of a relative path: folder in FOLDERS order, then name."""
    folder, _, name = path.partition("/")
    rank = FOLDERS.index(folder) if folder in FOLDERS else len(FOLDERS)
    return rank, name


def safe_part(part: str) -> str:
    """Pure. A name part with every character but letters, digits, `-`, `.` and `_` replaced by `_`."""
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in part)


def fit_file_name(stem: str) -> str:
    """Pure. `stem.yaml`, shortened to MAX_FILE_NAME_BYTES with a stable hash suffix when longer.

    The suffix is the first HASH_CHARS hex digits of the sha256 of the full name, so two long
    names sharing a prefix stay distinct; the full identity is inside the file.
    """
    full = stem + SUFFIX
    encoded = full.encode("utf-8")
    if len(encoded) <= MAX_FILE_NAME_BYTES:
        return full
    digest = hashlib.sha256(encoded).hexdigest()[:HASH_CHARS]
    room = MAX_FILE_NAME_BYTES - len(SUFFIX) - len(digest) - 1
    prefix = stem.encode("utf-8")[:room].decode("utf-8", errors="ignore")
    return f"{prefix}-{digest}{SUFFIX}"
