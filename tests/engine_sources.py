"""docs/engine-arguments.md as typed rows, and where the tests find the engines' source it cites.

The source is fetched by `make engine-sources` (scripts/engine-sources/fetch.sh) into
`$MAGICSTICK_ENGINE_SOURCES_CACHE`, default `~/.cache/magicstick/engine-sources`. A missing
release is an error naming that command, never a skip.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
TABLE: Final = REPO_ROOT / "docs" / "engine-arguments.md"
CACHE_ENV: Final = "MAGICSTICK_ENGINE_SOURCES_CACHE"
HEADER: Final = ("Engine", "Release", "Targets", "Setting", "Verdict", "Source", "Line holds")
SOURCE_DIRECTORY: Final = {"VLLM": "vllm", "OLlama": "ollama"}


class Verdict(StrEnum):
    READ = "read"
    IGNORED = "ignored"
    ABSENT = "absent"
    OUTSIDE = "outside"


@dataclass(frozen=True)
class EngineArgument:
    """One row: `setting` (a flag such as `--max-model-len`, or a variable) at `release` of
    `engine` on `targets`, and where the engine's source says so."""

    engine: str
    release: str
    targets: frozenset[str]
    setting: str
    verdict: Verdict
    source: str
    line: int | None
    holds: str


def _cell(text: str) -> str:
    return text.strip().strip("`")


def engine_arguments(text: str | None = None) -> tuple[EngineArgument, ...]:
    """The table's rows (the page's only table whose header is HEADER). Pure given `text`."""
    lines = (text if text is not None else TABLE.read_text()).splitlines()
    rows: list[EngineArgument] = []
    in_table = False
    for line in lines:
        if not line.startswith("|"):
            in_table = False
            continue
        cells = tuple(_cell(c) for c in line.strip().strip("|").split("|"))
        if cells == HEADER:
            in_table = True
            continue
        if not in_table or set(line) <= {"|", "-"}:
            continue
        engine, release, targets, setting, verdict, source, holds = cells
        path, _, number = source.partition(":")
        rows.append(
            EngineArgument(
                engine=engine,
                release=release,
                targets=frozenset(t.strip() for t in targets.split(",")),
                setting=setting,
                verdict=Verdict(verdict),
                source=path,
                line=int(number) if re.fullmatch(r"[0-9]+", number) else None,
                holds=holds,
            )
        )
    return tuple(rows)


def cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else Path.home() / ".cache" / "magicstick" / "engine-sources"


class SourceNotFetched(Exception):
    """An engine release the table cites is not in the cache; the message says how to fetch it."""


def release_source(engine: str, release: str) -> Path:
    """The folder of `engine`'s source at `release`."""
    folder = cache_dir() / f"{SOURCE_DIRECTORY[engine]}-{release}"
    if not (folder / ".complete").is_file():
        raise SourceNotFetched(
            f"{engine} {release} is not at {folder}: fetch it with `make engine-sources` "
            f"(scripts/engine-sources/fetch.sh; its releases are in scripts/engine-sources/versions.env)"
        )
    return folder
