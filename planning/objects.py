"""What the plan asks to exist: Kubernetes objects and status writes, as plain typed values."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from planning.frozen import FrozenMap, freeze, thaw
from planning.provider_wire import STATUS_INPUT

NAME_SEPARATOR = "/"
"""Joins the parts of a logical name. Kubernetes names and namespaces never contain it, so two
different objects can never give one logical name (invariant 3)."""

OWNED_FORCE_ANNOTATION = "pulumi.com/patchForce"
"""pulumi-kubernetes applies with `force` only on objects carrying this annotation set to "true"."""


def logical_name_of(*, kind: str, namespace: str | None, name: str) -> str:
    """`<kind>/<namespace>/<name>` (lower-case kind; `<kind>/<name>` when cluster-scoped). Pure."""
    parts = (kind.lower(), namespace, name) if namespace else (kind.lower(), name)
    return NAME_SEPARATOR.join(parts)


def dashed_logical_name_of(*, kind: str, namespace: str | None, name: str) -> str:
    """The logical name of earlier versions, `<kind>-<namespace>-<name>`, which could collide;
    kept only as an alias so an existing stack adopts its objects under the new name. Pure."""
    return f"{kind.lower()}-{namespace}-{name}" if namespace else f"{kind.lower()}-{name}"


@dataclass(frozen=True)
class DesiredObject:
    """One Kubernetes object the program declares.

    `logical_name` is the stable Pulumi name: it is derived from the object's kind, namespace
    and name, never from a position in a list. `body` is the whole object as it is applied.
    `previous_logical_names` are the names the same object had in earlier versions (aliases).
    """

    logical_name: str
    api_version: str
    kind: str
    name: str
    namespace: str | None
    body: FrozenMap
    ignore_spec_changes: bool = False
    retain_on_delete: bool = False
    patch: bool = False
    """Declare only the fields in `body` on an object others own (server-side apply patch)."""
    previous_logical_names: tuple[str, ...] = ()
    replace_on_changes: tuple[str, ...] = ()
    """Fields (`spec.url`) the API server refuses to change: a new value replaces the object."""

    @property
    def owned(self) -> bool:
        """The program owns every field it sets: a conflict with another field manager is forced.

        Not for a patch of an object others own, nor for an object whose spec belongs to its user
        once created (a seeded activation).
        """
        return not self.patch and not self.ignore_spec_changes

    @classmethod
    def of(
        cls,
        body: Mapping[str, Any],
        *,
        logical_name: str | None = None,
        ignore_spec_changes: bool = False,
        retain_on_delete: bool = False,
        patch: bool = False,
        replace_on_changes: tuple[str, ...] = (),
    ) -> DesiredObject:
        """The object whose whole body is `body`; identity fields are read from the body.

        The logical name defaults to `logical_name_of` the object's identity. An owned object
        carries the annotation that makes pulumi-kubernetes force its server-side apply, so it
        ends as planned when someone else (`flux suspend`, an earlier operator) set a field.
        """
        metadata = body["metadata"]
        kind, name, namespace = body["kind"], metadata["name"], metadata.get("namespace")
        previous = () if logical_name else (dashed_logical_name_of(kind=kind, namespace=namespace, name=name),)
        obj = cls(
            logical_name=logical_name or logical_name_of(kind=kind, namespace=namespace, name=name),
            api_version=body["apiVersion"],
            kind=kind,
            name=name,
            namespace=namespace,
            body=freeze(body),
            previous_logical_names=previous,
            ignore_spec_changes=ignore_spec_changes,
            retain_on_delete=retain_on_delete,
            patch=patch,
            replace_on_changes=replace_on_changes,
        )
        if not obj.owned:
            return obj
        annotations = {**metadata.get("annotations", {}), OWNED_FORCE_ANNOTATION: "true"}
        return replace(obj, body=freeze({**body, "metadata": {**metadata, "annotations": annotations}}))

    @property
    def identity(self) -> str:
        scope = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{scope}{self.name}"


@dataclass(frozen=True)
class StatusUpdate:
    """The status the program would write to one runtime custom resource."""

    api_version: str
    kind: str
    namespace: str
    name: str
    status: FrozenMap

    def to_inputs(self) -> dict[str, Any]:
        """The inputs of its status write (providers/status_writer.py), the status as JSON text. Pure."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            STATUS_INPUT: encode_status(self.status),
        }

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Any]) -> StatusUpdate:
        """The update `to_inputs` wrote; the status may also be the mapping itself. Pure."""
        return cls(
            api_version=inputs["apiVersion"],
            kind=inputs["kind"],
            namespace=inputs["namespace"],
            name=inputs["name"],
            status=freeze(decode_status(inputs.get(STATUS_INPUT)) or {}),
        )


def encode_status(status: Mapping[str, Any]) -> str:
    """The `status` input of a status write as the program sends it: compact JSON with sorted
    keys (components/status.py says why). Pure."""
    return json.dumps(thaw(status), sort_keys=True, separators=(",", ":"))


def decode_status(value: Any) -> Any:
    """The status a `status` input holds: the mapping itself, or the mapping its JSON text
    encodes; anything else is returned as it is, for `check` to refuse. Pure."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
