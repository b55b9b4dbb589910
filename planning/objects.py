"""What the plan asks to exist: Kubernetes objects and status writes, as plain typed values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planning.frozen import FrozenMap, freeze


@dataclass(frozen=True)
class DesiredObject:
    """One Kubernetes object the program declares.

    `logical_name` is the stable Pulumi name: it is derived from the object's kind, namespace
    and name, never from a position in a list. `body` is the whole object as it is applied.
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

    @classmethod
    def of(cls, body: Mapping[str, Any], *, logical_name: str | None = None, **flags: bool) -> DesiredObject:
        """The object whose whole body is `body`; identity fields are read from the body.

        The logical name defaults to `<kind>-<namespace>-<name>` (lower-case kind; no namespace
        part for cluster-scoped objects): stable, and independent of any position in a list.
        """
        metadata = body["metadata"]
        kind, name, namespace = body["kind"], metadata["name"], metadata.get("namespace")
        default = f"{kind.lower()}-{namespace}-{name}" if namespace else f"{kind.lower()}-{name}"
        return cls(
            logical_name=logical_name or default,
            api_version=body["apiVersion"],
            kind=kind,
            name=name,
            namespace=namespace,
            body=freeze(body),
            **flags,
        )

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
