"""Kubernetes Events on the Stack: a watch the API server refuses (403).

A kind the trigger may not list or watch is never reported as a change, so the Stack's runs
would silently miss it. Once per transition of a watch to forbidden (`watcher.Refusal`), the
trigger creates one `events.k8s.io/v1` Event regarding the Stack, `type: Warning`,
`reason: WatchForbidden`, `action: Watch`, whose note names the kind, the refused verb, the
resource and the namespace, so `kubectl describe stack` shows it beside PKO's own Events. Its
ServiceAccount may create Events in the Stack's namespace (deploy/reconcile-trigger-rbac.yaml).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from providers.kube import KubeClient, ResourceKind
from services.reconcile_trigger.stack import STACK, StackRef
from services.reconcile_trigger.watcher import Refusal

EVENT: Final = ResourceKind(group="events.k8s.io", version="v1", kind="Event", plural="events", namespaced=True)
REPORTING_CONTROLLER: Final = "magicstick.dev/reconcile-trigger"
NOTE_LIMIT: Final = 1024
"""The API server refuses a longer note."""
INSTANCE_LIMIT: Final = 128


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class EventReason(StrEnum):
    WATCH_FORBIDDEN = "WatchForbidden"


class EventAction(StrEnum):
    WATCH = "Watch"


def forbidden_event(
    *, stack: StackRef, stack_uid: str | None, refusal: Refusal, now: datetime, instance: str
) -> dict[str, Any]:
    """The Event that reports `refusal` on `stack` at `now`, from the trigger `instance` (its
    Pod's name). Its name is the Stack's followed by a digest of the refusal and the time, as
    client-go names Events. Pure."""
    moment = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    digest = hashlib.sha256(f"{refusal.target}|{refusal.verb}|{moment}".encode()).hexdigest()[:16]
    regarding = {"apiVersion": STACK.api_version, "kind": STACK.kind, "namespace": stack.namespace, "name": stack.name}
    if stack_uid:
        regarding["uid"] = stack_uid
    return {
        "apiVersion": EVENT.api_version,
        "kind": EVENT.kind,
        "metadata": {"name": f"{stack.name}.{digest}", "namespace": stack.namespace},
        "eventTime": moment,
        "type": EventType.WARNING.value,
        "reason": EventReason.WATCH_FORBIDDEN.value,
        "action": EventAction.WATCH.value,
        "reportingController": REPORTING_CONTROLLER,
        "reportingInstance": instance[:INSTANCE_LIMIT] or "unknown",
        "regarding": regarding,
        "note": refusal.describe()[:NOTE_LIMIT],
    }


def create_event(client: KubeClient, body: dict[str, Any]) -> dict[str, Any]:
    """Create `body` (an Event); the created Event. Raises KubeError."""
    return client.request(
        "POST", EVENT.collection_path(body["metadata"]["namespace"]), body=body, content_type="application/json"
    )
