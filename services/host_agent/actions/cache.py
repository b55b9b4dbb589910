"""clear-model-cache: empty the fixed model-cache locations once no model runs on the node.

The request holds no path: the locations are plans.MODEL_CACHE_LOCATIONS, bound by planId.
Before acting the agent asks the host whether any process uses a file under a location
(cache_users.py: open, mapped, its working or root directory, or mounted); while one does, the
operation waits (Pending: WaitingForIdle). The program defers new local runtimes meanwhile, and
disabled or deleted models remove theirs, so the node becomes idle.

Only the entries inside each location are removed; the location stays, a symbolic link is
removed as a link (never followed). An entry that cannot be removed (an immutable file, a
read-only mount) does not stop the others: everything removable is removed, and the operation
ends Failed (CommandFailed) naming the first entry that stayed and how many did.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from api.hostoperations import HostOperationReason, HostPhase
from api.model_cache import MODEL_CACHE_LOCATIONS
from services.host_agent.actions.base import Action, ActionContext, Step, uncertain
from services.host_agent.cache_users import waiting_while_the_cache_is_used
from services.host_agent.journal import Entry, Outcome
from services.host_agent.requests import HostOperation, failed


def _locations(context: ActionContext) -> list[Path]:
    return [context.settings.root / relative for _, relative in sorted(MODEL_CACHE_LOCATIONS.items())]


def _size_mi(path: Path) -> int:
    total = 0
    for directory, _, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                total += (Path(directory) / name).lstat().st_size
            except OSError:
                continue
    return total // (1024 * 1024)


def _collecting(failures: list[OSError]) -> Callable[[Any, str, Any], None]:
    """shutil.rmtree's onerror: note the OSError and go on with the rest of the tree."""

    def noted(function: Any, path: str, info: Any) -> None:
        error = info[1]
        if not isinstance(error, OSError):
            raise error
        failures.append(error)

    return noted


def _remove(entry: Path, failures: list[OSError]) -> None:
    """Remove one entry of a location (a directory tree, a file or a link), as much of it as can be."""
    try:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, onerror=_collecting(failures))
        else:
            entry.unlink()
    except OSError as error:
        failures.append(error)


def _empty(location: Path) -> list[OSError]:
    """Remove every entry of `location`; what could not be removed."""
    if not location.is_dir() or location.is_symlink():
        return []
    try:
        entries = sorted(location.iterdir())
    except OSError as error:
        return [error]
    failures: list[OSError] = []
    for entry in entries:
        _remove(entry, failures)
    return failures


def _is_empty(location: Path) -> bool:
    try:
        return not location.is_dir() or not any(location.iterdir())
    except OSError:
        return False


def _on_host(error: OSError, root: Path) -> str:
    """`/var/lib/.../blob.bin: Operation not permitted`: the file as the host names it."""
    name = str(error.filename or "")
    if name and Path(name).is_relative_to(root):
        name = "/" + str(Path(name).relative_to(root))
    return f"{name}: {error.strerror or type(error).__name__}" if name else str(error.strerror or type(error).__name__)


class ClearModelCache(Action):
    action = "clear-model-cache"

    def wait(self, operation: HostOperation, context: ActionContext) -> Outcome | None:
        return waiting_while_the_cache_is_used(context)

    def announce(self, operation: HostOperation) -> Outcome:
        return Outcome(
            phase=HostPhase.RUNNING, reason=HostOperationReason.IN_PROGRESS.value, message="clearing the model cache"
        )

    def execute(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step:
        locations = _locations(context)
        before = sum(_size_mi(location) for location in locations)
        failures = [failure for location in locations for failure in _empty(location)]
        if failures:
            freed = before - sum(_size_mi(location) for location in locations)
            outcome = failed(
                HostOperationReason.COMMAND_FAILED,
                f"could not remove {len(failures)} of the model cache's entries (first {_on_host(failures[0], context.settings.root)}); "
                f"everything else is removed ({freed} MiB)",
            )
            return Step(replace(outcome, details={"clearedMi": freed}))
        freed = before
        return Step(
            Outcome(
                phase=HostPhase.SUCCEEDED,
                reason=HostOperationReason.COMPLETED.value,
                message=f"cleared the model cache ({freed} MiB) of {', '.join(sorted(MODEL_CACHE_LOCATIONS))}",
                details={"clearedMi": freed},
            )
        )

    def recover(self, operation: HostOperation, context: ActionContext, entry: Entry, *, cause: str = "") -> Outcome:
        if all(_is_empty(location) for location in _locations(context)):
            found = f"the clearing failed ({cause}), yet" if cause else "after the agent restarted,"
            return Outcome(
                phase=HostPhase.SUCCEEDED,
                reason=HostOperationReason.COMPLETED.value,
                message=f"{found} the model cache was found empty: the clearing had completed",
            )
        return uncertain(entry, "Some model-cache locations are not empty.", cause=cause)


CLEAR_MODEL_CACHE = ClearModelCache()
