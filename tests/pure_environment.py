"""The environment of the pure run: no tool of the test toolchain can be found in it.

`make test-pure` runs `python -m tests.pure_environment venv/bin/pytest -m pure`: this module
takes every `MAGICSTICK_*` variable out of the environment (each tool's explicit path, the
browser's, the image cache's) and points every cache the tools live in at a path that does not
exist, then executes the command. A pure test that reaches for a tool fails with
tests.toolchain.ToolNotFound instead of passing on a machine that happens to have built it.
`MAGICSTICK_GO_SOURCES` stays: it names source archives, not tools, and the build script's own
tests read it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Final

NOWHERE: Final = "/nonexistent/magicstick-pure-run"
PREFIX: Final = "MAGICSTICK_"
KEPT: Final = frozenset({"MAGICSTICK_GO_SOURCES"})
CACHES: Final = (
    "MAGICSTICK_TOOLCHAIN_CACHE",
    "MAGICSTICK_IMAGE_CACHE",
    "MAGICSTICK_BROWSER_CACHE",
    "MAGICSTICK_ENGINE_SOURCES_CACHE",
)


def pure_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without its MAGICSTICK_ variables (but KEPT), every cache pointed at NOWHERE. Pure."""
    kept = {name: value for name, value in environ.items() if not name.startswith(PREFIX) or name in KEPT}
    return {**kept, **{cache: f"{NOWHERE}/{cache.removeprefix(PREFIX).lower()}" for cache in CACHES}}


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m tests.pure_environment COMMAND [ARGUMENT ...]")
    os.execvpe(argv[0], argv, pure_environment(os.environ))


if __name__ == "__main__":
    main(sys.argv[1:])
