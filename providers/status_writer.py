"""Status write-back: a dynamic provider that writes one runtime object's status.

Rules:
- the write goes through the /status subresource by server-side apply, under its own field
  manager, so the status fields the program owns are exactly the ones it last wrote;
- nothing is written when the object already holds the desired status;
- an object deleted in between is success: there is nothing left to report on;
- `delete` never touches the object: the status belongs to the object, not to the stack.

The inputs name the object and its status, nothing else: each method builds its own client
from the cluster access the stack's configuration names (providers/cluster_access.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult

from providers.cluster_access import ClusterResourceProvider, without_legacy_access
from providers.kinds import APPLIANCE_KINDS
from providers.pulumi_values import restore_integers
from providers.kube import KubeClient, NotFound, open_client

STATUS_FIELD_MANAGER = "magicstick-status"
IDENTITY_PROPERTIES = ("apiVersion", "kind", "namespace", "name")


@dataclass(frozen=True)
class StatusTarget:
    api_version: str
    kind: str
    namespace: str
    name: str
    status: Mapping[str, Any]

    @classmethod
    def from_inputs(cls, props: Mapping[str, Any]) -> StatusTarget:
        return cls(
            api_version=props["apiVersion"],
            kind=props["kind"],
            namespace=props["namespace"],
            name=props["name"],
            status=restore_integers(props.get("status") or {}),
        )


def owned_status_fields(obj: Mapping[str, Any], field_manager: str) -> set[str]:
    """Top-level status fields that `field_manager` owns on `obj`, from its managedFields."""
    owned: set[str] = set()
    for entry in obj.get("metadata", {}).get("managedFields") or ():
        if entry.get("manager") != field_manager:
            continue
        status_fields = (entry.get("fieldsV1") or {}).get("f:status") or {}
        owned |= {key[2:] for key in status_fields if key.startswith("f:")}
    return owned


def status_is_current(obj: Mapping[str, Any], desired: Mapping[str, Any], field_manager: str) -> bool:
    """True when `obj` shows the desired status and holds no other field this manager owns."""
    current = obj.get("status") or {}
    if any(current.get(key) != value for key, value in desired.items()):
        return False
    return owned_status_fields(obj, field_manager) <= set(desired)


def write_status(client: KubeClient, target: StatusTarget, field_manager: str = STATUS_FIELD_MANAGER) -> bool:
    """Write `target.status` if needed; False when nothing was written (current, or object gone)."""
    kind = APPLIANCE_KINDS[target.kind]
    current = client.get_or_none(kind, target.name, target.namespace)
    if current is None or status_is_current(current, target.status, field_manager):
        return False
    body = {
        "apiVersion": target.api_version,
        "kind": target.kind,
        "metadata": {"name": target.name, "namespace": target.namespace},
        "status": dict(target.status),
    }
    try:
        client.apply(kind, body, field_manager=field_manager, subresource="status")
    except NotFound:
        return False
    return True


class StatusProvider(ClusterResourceProvider):
    """Writes the planned status of one appliance.magicstick.dev object."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs = without_legacy_access(news)
        failures = [CheckFailure(p, f"{p} is required") for p in IDENTITY_PROPERTIES if not inputs.get(p)]
        if inputs.get("kind") and inputs["kind"] not in APPLIANCE_KINDS:
            failures.append(CheckFailure("kind", f"kind {inputs['kind']} is not an appliance.magicstick.dev kind"))
        if not isinstance(inputs.get("status"), dict):
            failures.append(CheckFailure("status", "status must be a mapping"))
        return CheckResult(inputs, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [p for p in IDENTITY_PROPERTIES if olds.get(p) != news.get(p)]
        changed = replaces + (["status"] if olds.get("status") != news.get("status") else [])
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        target = StatusTarget.from_inputs(props)
        with open_client(self.cluster_access()) as client:
            write_status(client, target)
        return CreateResult(id_=f"{target.kind}/{target.namespace}/{target.name}", outs=without_legacy_access(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        target = StatusTarget.from_inputs(news)
        with open_client(self.cluster_access()) as client:
            write_status(client, target)
        return UpdateResult(outs=without_legacy_access(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        target = StatusTarget.from_inputs(props)
        with open_client(self.cluster_access()) as client:
            current = client.get_or_none(APPLIANCE_KINDS[target.kind], target.name, target.namespace)
        observed = without_legacy_access(props)
        if current is not None:
            observed["status"] = {k: v for k, v in (current.get("status") or {}).items() if k in target.status}
        return ReadResult(id_=id_, outs=observed)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None
