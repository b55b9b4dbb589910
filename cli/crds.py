"""The committed CRD files of the api package, checked against the types or written from them.

`python -m cli.crds --check` exits 1 naming every file under `api/crds/` that is missing,
differs from what `api.crdgen` renders, or belongs to no kind; `--write` regenerates them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from api.crdgen import CRD_DIRECTORY, build_crds, file_name, render

PROGRAM = "python -m cli.crds"


def write_crds(directory: Path = CRD_DIRECTORY) -> list[Path]:
    """Write one file per CRD into `directory`; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for crd in build_crds():
        path = directory / file_name(crd)
        path.write_text(render(crd), encoding="utf-8")
        written.append(path)
    return written


def stale_files(directory: Path = CRD_DIRECTORY) -> list[str]:
    """Names of the files in `directory` that are missing, differ from the types, or are extra."""
    expected = {file_name(crd): render(crd) for crd in build_crds()}
    present = {path.name for path in directory.glob("*.yaml")} if directory.is_dir() else set()
    stale = [
        name
        for name, text in expected.items()
        if name not in present or (directory / name).read_text(encoding="utf-8") != text
    ]
    return sorted(stale + sorted(present - expected.keys()))


def main(argv: Sequence[str] | None = None) -> int:
    """`--write` regenerates the committed CRDs; `--check` exits 1 naming stale files."""
    parser = argparse.ArgumentParser(prog=PROGRAM, description=(__doc__ or "").splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate the CRD files")
    mode.add_argument("--check", action="store_true", help="fail when the CRD files differ from the types")
    parser.add_argument("--directory", type=Path, default=CRD_DIRECTORY, help="where the CRD files live")
    arguments = parser.parse_args(argv)
    if arguments.write:
        for path in write_crds(arguments.directory):
            print(f"wrote {path}")
        return 0
    stale = stale_files(arguments.directory)
    for name in stale:
        print(f"{arguments.directory / name} differs from the api types; run {PROGRAM} --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
