"""`magicstick snapshot`: capture the live view into a snapshot file, or onto standard output."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from cli.errors import RenderInputError, filesystem_error
from cli.output import creation_mode, make_parents
from cli.progress import QUIET, Progress
from providers.kube import KubeAccess, KubeConfigError, KubeError
from providers.live_reader import SnapshotReadError
from providers.snapshot_capture import capture, snapshot_text

STDOUT = "-"


def write_snapshot(
    *,
    kubeconfig: str | None,
    context: str | None,
    system_namespace: str,
    out: str,
    gateway_namespace: str | None = None,
    progress: Progress = QUIET,
) -> int:
    """Capture the cluster into `out` ("-": standard output); returns how many objects.

    Nothing is written when the read fails; a file is replaced only once the whole text is on disk.
    """
    progress.stage(f"reading the cluster (system namespace {system_namespace})")
    try:
        access = KubeAccess(kubeconfig=kubeconfig, context=context)
        document = capture(access, system_namespace=system_namespace, gateway_namespace=gateway_namespace)
    except (KubeConfigError, SnapshotReadError, KubeError) as error:
        raise RenderInputError(str(error)) from error
    count = len(document["items"])
    progress.stage(f"read: {count} objects")
    text = snapshot_text(document)
    progress.stage(f"writing: {out}")
    if out == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        replace_file(Path(out), text)
    return count


def replace_file(path: Path, text: str) -> None:
    """Write `text` to a sibling temporary file, then rename it over `path`."""
    make_parents(path, shown=path)
    temporary = None
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".new", dir=path.parent)
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temporary, creation_mode(0o666))
        os.replace(temporary, path)
    except OSError as error:
        raise filesystem_error(path, error) from error
    finally:
        if temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
