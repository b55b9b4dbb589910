"""`magicstick diff OLD NEW`: what a run would change, between two renders.

OLD and NEW are each a render directory or a snapshot file ("-": standard input, once); a
snapshot is rendered first, in memory, with the flags given. Files are matched by their path
(their identity: kind, namespace and name); the report lists what was added, removed and
changed, in render order, then a unified diff of each changed file (a ConfigMap's JSON values
compared key by key: cli.diff_text), then, when asked, each added file whole, then one count line.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from cli.diff_text import readable
from cli.errors import RenderInputError, filesystem_error
from cli.files import FOLDERS, SUFFIX, RenderedFile, file_order
from cli.progress import QUIET, Progress
from cli.render import STDIN, RenderOptions, render_files
from cli.summary import counted


@dataclass(frozen=True)
class RenderTree:
    files: Mapping[str, str]
    """Relative path (`status/appliance.ai-system.local.yaml`) to text."""

    @classmethod
    def of(cls, files: Iterable[RenderedFile]) -> RenderTree:
        return cls(files={file.path: file.text for file in files})


@dataclass(frozen=True)
class TreeDiff:
    old: RenderTree
    new: RenderTree
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]

    @property
    def equal(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def lines(self, *, show_added: bool = False) -> Iterator[str]:
        """Pure. The report, line by line (each ending in a newline); `show_added`: each added file whole."""
        for label, paths in (("added", self.added), ("removed", self.removed), ("changed", self.changed)):
            yield from (f"{label}: {path}\n" for path in paths)
        for path in self.changed:
            old, new = readable(self.old.files[path]), readable(self.new.files[path])
            if old == new:
                # Only what the readable form hides changed (the order of JSON keys): show the text itself.
                old, new = self.old.files[path], self.new.files[path]
            yield from _unified(old, new, fromfile=f"old/{path}", tofile=f"new/{path}")
        for path in self.added if show_added else ():
            yield from _unified("", readable(self.new.files[path]), fromfile="/dev/null", tofile=f"new/{path}")
        if self.equal:
            yield f"no changes ({counted(len(self.new.files), 'file')} compared)\n"
        else:
            yield f"{len(self.added)} added, {len(self.removed)} removed, {len(self.changed)} changed\n"


def _unified(old: str, new: str, *, fromfile: str, tofile: str) -> Iterator[str]:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=fromfile, tofile=tofile
    )
    for line in lines:
        yield line if line.endswith("\n") else line + "\n"


def compare(old: RenderTree, new: RenderTree) -> TreeDiff:
    """Pure. What differs between two renders, each list in render order."""
    paths = sorted(set(old.files) | set(new.files), key=file_order)
    return TreeDiff(
        old=old,
        new=new,
        added=tuple(p for p in paths if p not in old.files),
        removed=tuple(p for p in paths if p not in new.files),
        changed=tuple(p for p in paths if p in old.files and p in new.files and old.files[p] != new.files[p]),
    )


def load_side(
    argument: str,
    *,
    options: RenderOptions,
    progress: Progress = QUIET,
    stdin: TextIO | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> RenderTree:
    """A render directory as it is, or a snapshot file (or "-") rendered with `options`; `warn`
    receives each warning of that render."""
    if argument != STDIN and _is_directory(Path(argument)):
        return read_render_directory(Path(argument))
    result = render_files(snapshot=argument, options=options, progress=progress, stdin=stdin)
    for warning in result.warnings:
        warn(warning)
    return RenderTree.of(result.files)


def _is_directory(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError as error:
        raise filesystem_error(path, error) from error


def read_render_directory(directory: Path) -> RenderTree:
    """The YAML files of a render directory's resources/, status/ and dynamic/ folders."""
    present = [folder for folder in FOLDERS if _is_directory(directory / folder)]
    if not present:
        raise RenderInputError(f"{directory}: not a render (no resources/, status/ or dynamic/ folder)")
    files = {}
    for folder in present:
        try:
            paths = sorted(p for p in (directory / folder).iterdir() if p.name.endswith(SUFFIX) and p.is_file())
            files.update({f"{folder}/{p.name}": p.read_text(encoding="utf-8") for p in paths})
        except OSError as error:
            raise filesystem_error(error.filename or directory / folder, error) from error
        except UnicodeDecodeError as error:
            raise RenderInputError(f"{directory / folder}: a file is not UTF-8 text ({error.reason})") from error
    return RenderTree(files=files)
