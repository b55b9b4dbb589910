"""clear-model-cache: empty the fixed model-cache locations once no model runs on the node.

The request holds no path: the locations are plans.MODEL_CACHE_LOCATIONS, bound by planId.
Before acting the agent reads the Pods on its node from the API server; while a model Pod of a
cache runtime (KubeAI's `model` label, a direct runtime's label) has not ended, the operation
waits (Pending: WaitingForIdle). The program defers new local runtimes meanwhile, and disabled
or deleted models remove theirs, so the node becomes idle.

Only the entries inside each location are removed; the location stays, a symbolic link is
removed as a link (never followed).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from api.hostoperations import HostPhase, HostOperationReason
from services.host_agent.actions.base import Action, ActionContext, Step, uncertain
from services.host_agent.journal import Entry, Outcome
from services.host_agent.plans import MODEL_CACHE_LOCATIONS
from services.host_agent.requests import HostOperation

MAX_PODS_NAMED = 5


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


def _empty(location: Path) -> None:
    if not location.is_dir() or location.is_symlink():
        return
    for child in location.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _is_empty(location: Path) -> bool:
    return not location.is_dir() or not any(location.iterdir())


class ClearModelCache(Action):
    action = "clear-model-cache"

    def wait(self, operation: HostOperation, context: ActionContext) -> Outcome | None:
        pods = context.cluster.model_pods_on_node()
        if not pods:
            return None
        names = [f"{(p.get('metadata') or {}).get('namespace')}/{(p.get('metadata') or {}).get('name')}" for p in pods]
        shown = ", ".join(names[:MAX_PODS_NAMED]) + (f" and {len(names) - MAX_PODS_NAMED} more" if len(names) > MAX_PODS_NAMED else "")
        return Outcome(
            phase=HostPhase.PENDING,
            reason=HostOperationReason.WAITING_FOR_IDLE.value,
            message=f"waiting until no model Pod runs on node {context.cluster.node_name}: {shown}",
        )

    def announce(self, operation: HostOperation) -> Outcome:
        return Outcome(phase=HostPhase.RUNNING, reason=HostOperationReason.IN_PROGRESS.value, message="clearing the model cache")

    def execute(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Step:
        locations = _locations(context)
        freed = sum(_size_mi(location) for location in locations)
        for location in locations:
            _empty(location)
        return Step(
            Outcome(
                phase=HostPhase.SUCCEEDED,
                reason=HostOperationReason.COMPLETED.value,
                message=f"cleared the model cache ({freed} MiB) of {', '.join(sorted(MODEL_CACHE_LOCATIONS))}",
                details={"clearedMi": freed},
            )
        )

    def recover(self, operation: HostOperation, context: ActionContext, entry: Entry) -> Outcome:
        if all(_is_empty(location) for location in _locations(context)):
            return Outcome(
                phase=HostPhase.SUCCEEDED,
                reason=HostOperationReason.COMPLETED.value,
                message="the model cache was found empty after the agent restarted: the clearing had completed",
            )
        return uncertain(entry, "Some model-cache locations are not empty.")


CLEAR_MODEL_CACHE = ClearModelCache()
