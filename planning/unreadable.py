"""Objects whose target namespace could not be read this run (issue #11, point 4). PURE.

The live reader lists a target namespace (one that only some ModelActivations or AppInstances
name) as unreadable when the server refused a LIST there; nothing in it was read
(`Snapshot.unreadable`). For every object that targets such a namespace:

1. its status is Degraded with reason NamespaceUnreadable and a message naming the namespace,
   the missing permission, and the server's answer;
2. nothing is created there: the program may not write where it may not read, and one refused
   create would fail the whole Pulumi update, every other object with it;
3. nothing is removed there because it could not be read: what the plan declared there on an
   earlier run is declared again, from the spec, as it would be with the namespace readable
   and the object not yet observed. Pulumi then sees the same inputs and sends nothing (a
   preview's dry-run refused with 403 falls back to comparing inputs).

Rule 3 needs to know, without reading the namespace or the stack's state, what was declared
there: the object's own last status (in the system namespace, always readable) is the
evidence (`Hold.keeps_declared`).

A deliberate risk, named: an object whose permission was withdrawn after its KubeAI Model was
declared but before any run observed it (one run's window), or whose spec is rejected while
its namespace is unreadable, has no desired object to declare again; Pulumi then removes it,
or fails that one resource with the server's 403.

Objects in the namespaces every run needs never get here: a refused read there stops the run
(invariant 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from api.vocabulary import Phase, Reason
from planning.conditions import status_update
from planning.intent import Parsed
from planning.objects import DesiredObject, StatusUpdate
from planning.snapshot import Snapshot, UnreadableNamespace

NAMESPACE_UNREADABLE: Final = Reason.NAMESPACE_UNREADABLE
DEGRADED: Final = Phase.DEGRADED
MODEL_REF: Final = "modelRef"
HELM_RELEASE: Final = "helmRelease"
OBSERVED_REPLICAS: Final = "replicas"
EVIDENCE_FIELDS: Final = (MODEL_REF, HELM_RELEASE)
"""Status fields the next run reads as "declared there": a hold writes them only when it keeps them."""


def unreadable_message(record: UnreadableNamespace) -> str:
    """The status message: the namespace, the missing permission and the server's answer. Pure.

    Stable from run to run while nothing changes (invariant 4): it holds no time and no count.
    """
    return (
        f"Namespace {record.namespace} cannot be read: the program may not {record.permission} "
        f"({record.message}). Nothing there is created or removed until it can be read; "
        f"bind the program's Role in {record.namespace} as in namespace ai (deploy/README.md)."
    )


@dataclass(frozen=True)
class Hold:
    """What one object targeting an unreadable namespace keeps this run."""

    record: UnreadableNamespace
    keeps_declared: bool
    """True when the object's last status shows the plan declared objects there: they stay declared."""

    def status(self, parsed: Parsed[Any], *, now: datetime, extra: Mapping[str, Any] | None = None) -> StatusUpdate:
        """Degraded / NamespaceUnreadable, with `extra` (the spec-derived fields; None values left out).

        The evidence fields (EVIDENCE_FIELDS) are written only when the hold keeps what was
        declared, so that a namespace never granted never looks declared on the next run.
        """
        fields = {k: v for k, v in (extra or {}).items() if self.keeps_declared or k not in EVIDENCE_FIELDS}
        return status_update(
            parsed,
            phase=DEGRADED,
            reason=NAMESPACE_UNREADABLE,
            message=unreadable_message(self.record),
            now=now,
            extra=fields,
        )

    def objects(self, planned: Iterable[DesiredObject]) -> tuple[DesiredObject, ...]:
        """`planned` without its objects in the unreadable namespace, unless they stay declared."""
        return tuple(o for o in planned if self.keeps_declared or o.namespace != self.record.namespace)


def model_hold(snapshot: Snapshot, namespace: str, previous_status: Mapping[str, Any]) -> Hold | None:
    """The hold of a ModelActivation targeting `namespace`; None when the namespace was read.

    Evidence that its KubeAI Model was declared there: the last status names it (`modelRef` in
    `namespace`) and either reports the replicas the plan observed of it, or is itself a hold
    that kept it (a NamespaceUnreadable status carries `modelRef` only then).
    """
    record = snapshot.unreadable_namespace(namespace)
    if record is None:
        return None
    ref = previous_status.get(MODEL_REF)
    named = isinstance(ref, str) and ref.startswith(f"{namespace}/")
    observed = OBSERVED_REPLICAS in previous_status or previous_status.get("reason") == NAMESPACE_UNREADABLE
    return Hold(record=record, keeps_declared=named and observed)


def instance_hold(snapshot: Snapshot, namespace: str, previous_status: Mapping[str, Any]) -> Hold | None:
    """The hold of an AppInstance targeting `namespace`; None when the namespace was read.

    Evidence that its objects there (the ReferenceGrant of its routes) were declared: the last
    status names its HelmRelease, which the plan records in the same step that declares them.
    """
    record = snapshot.unreadable_namespace(namespace)
    if record is None:
        return None
    return Hold(record=record, keeps_declared=isinstance(previous_status.get(HELM_RELEASE), str))
