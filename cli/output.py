"""Where a render goes: a directory replaced whole, or a YAML stream.

Rules of a render directory:
- render writes MARKER at its root; a directory holding MARKER, and besides it only the
  resources/, status/ and dynamic/ folders of YAML files, is a previous render;
- render writes into an absent or empty directory, or replaces a previous render; any other
  directory is refused before the program runs, and nothing in it is touched;
- a replacement is atomic: the new render is written whole into a sibling directory of the same
  parent, then swapped in (old renamed aside, new renamed in, old removed), so a render that
  fails midway leaves the previous one whole.
Every filesystem failure is a RenderInputError naming the path and the cause.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from cli.errors import RenderInputError, filesystem_error
from cli.files import FOLDERS, SUFFIX, RenderedFile

MARKER = ".magicstick-render"
MARKER_TEXT = (
    "# Written by `magicstick render`. The next render replaces this directory whole;\n"
    "# it refuses to when anything but resources/, status/ and dynamic/ sits beside this file.\n"
)
FileWriter = Callable[[Path, str], None]
"""Writes one file of a render: (path, text). A parameter of replace_directory, so tests can fail it."""
_SHOWN_FOREIGN = 3


def write_text_file(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def check_output_directory(out: Path) -> bool:
    """Whether `out` exists, after refusing it unless it is empty or a previous render."""
    try:
        mode = os.stat(out).st_mode
    except FileNotFoundError:
        return False
    except OSError as error:
        raise filesystem_error(out, error) from error
    if not stat.S_ISDIR(mode):
        raise RenderInputError(f"{out}: not a directory")
    foreign = _foreign_entries(out)
    if foreign is None:
        raise RenderInputError(
            f"{out}: not empty and not a previous render (no {MARKER}); choose an empty or new directory"
        )
    if foreign:
        more = f" and {len(foreign) - _SHOWN_FOREIGN} more" if len(foreign) > _SHOWN_FOREIGN else ""
        shown = ", ".join(foreign[:_SHOWN_FOREIGN])
        raise RenderInputError(
            f"{out}: holds {shown}{more}, which render did not write; remove it or choose another directory"
        )
    return True


def _foreign_entries(out: Path) -> list[str] | None:
    """What in `out` a render did not write; None when `out` is not empty and has no marker."""
    entries = _entries(out)
    if not entries:
        return []
    if MARKER not in entries or not entries[MARKER].is_file(follow_symlinks=False):
        return None
    foreign = []
    for name, entry in sorted(entries.items()):
        if name == MARKER:
            continue
        if name not in FOLDERS or not entry.is_dir(follow_symlinks=False):
            foreign.append(name)
            continue
        foreign += [
            f"{name}/{inner}"
            for inner, item in sorted(_entries(out / name).items())
            if not inner.endswith(SUFFIX) or not item.is_file(follow_symlinks=False)
        ]
    return foreign


def _entries(directory: Path) -> dict[str, os.DirEntry[str]]:
    try:
        with os.scandir(directory) as scan:
            return {entry.name: entry for entry in scan}
    except OSError as error:
        raise filesystem_error(directory, error) from error


def replace_directory(*, out: Path, files: Sequence[RenderedFile], write_file: FileWriter = write_text_file) -> None:
    """Write `files` and MARKER as the whole content of `out`, atomically (see the module rules)."""
    existed = check_output_directory(out)
    target = Path(os.path.realpath(out))
    staging = _staging_directory(target, shown=out, mode_of=target if existed else None)
    try:
        _fill(staging, files, shown=out, write_file=write_file)
        _swap(staging=staging, target=target, existed=existed, shown=out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def make_parents(path: Path, *, shown: Path) -> None:
    """Create the directories above `path`; a file standing where one should be is "Not a directory"."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError as error:
        raise RenderInputError(f"{shown}: {os.strerror(errno.ENOTDIR)}") from error
    except OSError as error:
        raise filesystem_error(shown, error) from error


def _staging_directory(target: Path, *, shown: Path, mode_of: Path | None) -> Path:
    make_parents(target, shown=shown)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name[:64]}.", suffix=".new", dir=target.parent))
        os.chmod(staging, stat.S_IMODE(os.stat(mode_of).st_mode) if mode_of else creation_mode(0o777))
    except OSError as error:
        raise filesystem_error(shown, error) from error
    return staging


def creation_mode(base: int) -> int:
    """`base` (0o777 for a directory, 0o666 for a file) under the process umask, as open() and mkdir() apply it."""
    mask = os.umask(0)
    os.umask(mask)
    return base & ~mask


def _fill(staging: Path, files: Sequence[RenderedFile], *, shown: Path, write_file: FileWriter) -> None:
    for folder in FOLDERS:
        try:
            (staging / folder).mkdir()
        except OSError as error:
            raise filesystem_error(shown / folder, error) from error
    for file in [RenderedFile(path=MARKER, text=MARKER_TEXT), *files]:
        try:
            write_file(staging / file.path, file.text)
        except OSError as error:
            raise filesystem_error(shown / file.path, error) from error


def _swap(*, staging: Path, target: Path, existed: bool, shown: Path) -> None:
    aside = staging.with_suffix(".old")
    try:
        if existed:
            os.rename(target, aside)
        os.rename(staging, target)
    except OSError as error:
        failure = filesystem_error(shown, error)
        if existed and aside.exists():
            try:
                os.rename(aside, target)
            except OSError:
                failure = RenderInputError(f"{failure}; the previous render is kept at {aside}")
        raise failure from error
    shutil.rmtree(aside, ignore_errors=True)


def write_stream(files: Sequence[RenderedFile], *, stream: TextIO) -> None:
    """Every file as one YAML document, in render order, each after `---` and `# Source: <path>`."""
    for file in files:
        stream.write(f"---\n# Source: {file.path}\n{file.text}")
    stream.flush()
