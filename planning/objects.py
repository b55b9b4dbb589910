"""What the plan asks to exist: Kubernetes objects and status writes, as plain typed values."""

from __future__ import annotations

from dataclasses import dataclass

from planning.frozen import FrozenMap


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
