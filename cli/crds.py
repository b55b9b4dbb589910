"""The committed CRD files, checked against the api types or written from them.

They are committed twice: in the api package (`api/crds/`, which the program declares) and in
the public Flux base (`magic-cluster/platform/magicstick-operator/crds/`, which Flux creates on a
fresh install). `python -m cli.crds --check` exits 1 naming every file of either that is missing,
differs from what `api.crdgen` renders, or belongs to no kind; `--write` regenerates both.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from api.crdgen import CRD_DIRECTORY, build_crds, file_name, render

PROGRAM = "python -m cli.crds"
PUBLIC_BASE_DIRECTORY = (
    Path(__file__).resolve().parents[1] / "magic-cluster" / "platform" / "magicstick-operator" / "crds"
)
"""The public base's copy, applied with the default Appliance/local. It exists in a checkout of
the repository only: an installed package carries no GitOps tree."""


def committed_directories() -> tuple[Path, ...]:
    """Where the CRD files are committed: `api/crds/`, and the public base's copy in a checkout."""
    tree = PUBLIC_BASE_DIRECTORY.parents[2]
    return (CRD_DIRECTORY, PUBLIC_BASE_DIRECTORY) if tree.is_dir() else (CRD_DIRECTORY,)


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
    parser.add_argument(
        "--directory", type=Path, help="where the CRD files live (default: api/crds/ and the public base's copy)"
    )
    arguments = parser.parse_args(argv)
    directories = (arguments.directory,) if arguments.directory else committed_directories()
    if arguments.write:
        for directory in directories:
            for path in write_crds(directory):
                print(f"wrote {path}")
        return 0
    stale = [directory / name for directory in directories for name in stale_files(directory)]
    for path in stale:
        print(f"{path} differs from the api types; run {PROGRAM} --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
