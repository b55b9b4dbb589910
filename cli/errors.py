"""The one error of the command line: an input, a flag or an output location is unusable."""

from __future__ import annotations

import os
from pathlib import Path


class RenderInputError(Exception):
    """An input, a flag or an output location is unusable; the message is one line naming it and the cause.

    Every command exits with status 2 on it, printing the message and no traceback.
    """


def filesystem_error(path: Path | str, error: OSError) -> RenderInputError:
    """Pure. One line for a failed filesystem call on `path`: the path as the user knows it, and the cause."""
    cause = error.strerror or (os.strerror(error.errno) if error.errno else "") or str(error) or type(error).__name__
    return RenderInputError(f"{os.fsdecode(path)}: {cause}")
