"""One entry of a shared KubeAI profile store, as its dynamic resource carries it. PURE.

The runtime-profile store and the offloading store are each one key of one ConfigMap holding a
JSON map of KubeAI resource profiles (invariant 7: compare-and-swap, bounded); the program owns
the entries it names. providers/profile_store.py keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from planning.frozen import FrozenMap, freeze, thaw
from planning.models.kubeai import PROFILE_STORE_CONFIG_MAP, PROFILE_STORE_KEY, PROFILE_STORE_NAMESPACE, CpuProfile


@dataclass(frozen=True)
class ProfileStoreRef:
    """Where a store lives: one key of one ConfigMap."""

    namespace: str = PROFILE_STORE_NAMESPACE
    name: str = PROFILE_STORE_CONFIG_MAP
    key: str = PROFILE_STORE_KEY

    def __str__(self) -> str:
        return f"ConfigMap {self.namespace}/{self.name} key {self.key}"


@dataclass(frozen=True)
class ProfileEntry:
    """One profile, under its name, in one store."""

    ref: ProfileStoreRef
    profile_name: str
    profile: FrozenMap

    @classmethod
    def of(cls, profile: CpuProfile, ref: ProfileStoreRef) -> ProfileEntry:
        return cls(ref=ref, profile_name=profile.name, profile=freeze(profile.body))

    def to_inputs(self) -> dict[str, Any]:
        """The inputs of its RuntimeProfile or OffloadingProfile resource. Pure."""
        return {
            "namespace": self.ref.namespace,
            "configMap": self.ref.name,
            "key": self.ref.key,
            "profileName": self.profile_name,
            "profile": thaw(self.profile),
        }

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Any]) -> Self:
        """The entry `to_inputs` wrote. Pure."""
        return cls(
            ref=ProfileStoreRef(namespace=inputs["namespace"], name=inputs["configMap"], key=inputs["key"]),
            profile_name=inputs["profileName"],
            profile=freeze(inputs["profile"]),
        )
