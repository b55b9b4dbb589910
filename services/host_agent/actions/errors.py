"""How the agent tells an error that may pass from one that will not, and says what failed.

A refusal of the API server is transient when asking again later may succeed: no answer at all
(a KubeConnectionError), 5xx, 429 Too Many Requests, 408, 409 Conflict and 410 Gone (the
object or the list changed: the next pass reads it again) and 401 Unauthorized (the agent's own
token, which it renews; no fault of the operation). Every other refusal (400, 403, 404, 405,
413, 422, ...) is permanent: the same request gets the same answer on every pass.

`described` says what failed without an exception's own text, which may quote a value (a
password, a Secret's data): its type, where it was raised, and an OSError's reason and file.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Final

from providers.kube import KubeConnectionError, KubeError

TRANSIENT_CODES: Final = frozenset({401, 408, 409, 410, 429})
_REPOSITORY = Path(__file__).resolve().parents[3]


def transient(error: KubeError) -> bool:
    return (
        isinstance(error, KubeConnectionError) or error.code == 0 or error.code >= 500 or error.code in TRANSIENT_CODES
    )


def _where(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    path = Path(last.filename)
    shown = path.relative_to(_REPOSITORY) if path.is_relative_to(_REPOSITORY) else path.name
    return f" at {shown}:{last.lineno}"


def described(error: Exception) -> str:
    """`PermissionError: Operation not permitted: /var/lib/.../blob.bin at services/host_agent/actions/cache.py:57`."""
    if isinstance(error, KubeError):
        return f"the API server refused {error}"
    kind = type(error).__name__
    if isinstance(error, OSError) and error.strerror:
        file = f": {error.filename}" if error.filename else ""
        return f"{kind}: {error.strerror}{file}{_where(error)}"
    return f"{kind}{_where(error)}"
