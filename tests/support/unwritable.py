"""A directory this process cannot create anything in, whoever runs the tests.

An ordinary user is refused by a read-only mode; root, whom no mode refuses, is refused by
sysfs (Linux mounts it at /sys and lets no one create files there).
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

SYSFS = Path("/sys")


def refusing_directory(tmp_path: Path) -> Path:
    """A directory under `tmp_path` with mode 0o555, or /sys when that does not refuse this process.

    Raises AssertionError when neither refuses: the tests that need one cannot mean anything here.
    """
    candidate = tmp_path / "read-only"
    candidate.mkdir()
    candidate.chmod(0o555)
    for directory in (candidate, SYSFS):
        try:
            descriptor, name = tempfile.mkstemp(dir=directory)
        except OSError:
            return directory
        os.close(descriptor)
        os.unlink(name)
    raise AssertionError(f"neither {candidate} nor {SYSFS} refuses this process a new file")


def refusal_of(directory: Path) -> str:
    """The words the system gives for creating something in `directory` (see refusing_directory)."""
    return os.strerror(errno.EPERM if directory == SYSFS else errno.EACCES)
