"""Generated objects the cluster holds but the plan no longer wants, whoever created them.

Pulumi deletes what its state knows. A Kustomization this program generated, but that the
state does not know (created by an earlier operator, or by a stack whose state was lost),
would stay forever: Flux would keep its module installed. Such objects are recognised by the
labels every generated Kustomization carries (`app.kubernetes.io/managed-by: magicstick` and
`appliance.magicstick.dev/module`), and:

- adopted when the plan wants the same object (same name): the declared object replaces it by
  server-side apply (the provider's create adopts an existing object), nothing to do here;
- removed when the plan does not want it: the Kustomization of a module that is disabled, no
  longer requested, or has no matching ModuleActivation (a stale generated Flux
  Kustomization). One removal per object, under its UID as a precondition, so an object
  recreated under the same name is never removed by an old decision.

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from planning.kustomizations import KUSTOMIZATION_API_VERSION
from planning.labels import MODULE, is_generated
from planning.objects import DesiredObject, logical_name_of
from planning.settings import FLUX_NAMESPACE
from planning.snapshot import Snapshot


@dataclass(frozen=True)
class StaleTarget:
    """What a removal needs of a stale object: its identity and the UID that must still match."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str

    def to_inputs(self) -> dict[str, str]:
        """The inputs of its StaleRemoval resource (providers/stale_removal.py). Pure."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
        }

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Any]) -> Self:
        """The target `to_inputs` wrote. Pure."""
        return cls(
            api_version=inputs["apiVersion"],
            kind=inputs["kind"],
            namespace=inputs["namespace"],
            name=inputs["name"],
            uid=inputs["uid"],
        )


@dataclass(frozen=True)
class StaleObject:
    """One generated object to remove: its identity, and the UID that must still match."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    module: str

    @property
    def logical_name(self) -> str:
        return "stale/" + logical_name_of(kind=self.kind, namespace=self.namespace, name=self.name)

    @property
    def target(self) -> StaleTarget:
        return StaleTarget(
            api_version=self.api_version, kind=self.kind, namespace=self.namespace, name=self.name, uid=self.uid
        )


def stale_kustomizations(snapshot: Snapshot, planned: tuple[DesiredObject, ...]) -> tuple[StaleObject, ...]:
    """Every generated module Kustomization in flux-system that `planned` does not declare. Pure."""
    wanted = {(obj.namespace, obj.name) for obj in planned if obj.kind == "Kustomization"}
    stale = []
    for observed in snapshot.kustomizations:
        meta = observed.meta
        module = meta.labels.get(MODULE)
        if meta.namespace != FLUX_NAMESPACE or not module or not is_generated(meta.labels) or not meta.uid:
            continue
        if (meta.namespace, meta.name) in wanted:
            continue
        stale.append(
            StaleObject(
                api_version=KUSTOMIZATION_API_VERSION,
                kind="Kustomization",
                namespace=meta.namespace,
                name=meta.name,
                uid=meta.uid,
                module=module,
            )
        )
    return tuple(sorted(stale, key=lambda s: (s.namespace, s.name)))
