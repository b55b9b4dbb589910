"""The offloading store: KubeAI resource profiles of CPU-offloading models (issue #12).

`flux-system/magicstick-offloading-profiles`, key `values.json`, a Helm values document
`{"resourceProfiles": {...}}` that the KubeAI HelmRelease reads through an optional
`valuesFrom` (rendered by the GitOps tree). The discipline is the runtime-profile store's
(providers/profile_store.py): compare-and-swap on resourceVersion, bounded, entries not ours
untouched, creation only from absence.

Flux bootstraps the ConfigMap with an empty map under `kustomize.toolkit.fluxcd.io/ssa:
IfNotPresent`, so later Flux reconciles skip it and never reset the program's entries. When
the program creates it first, it carries the same annotation (a Flux that later finds the
manifest applies nothing) and `reconcile.fluxcd.io/watch: Enabled`, so helm-controller
reconciles KubeAI when an entry changes.
"""

from __future__ import annotations

from typing import ClassVar, Final

from planning.models.offloading import (
    MAX_OFFLOADING_PROFILES,
    OFFLOADING_CONFIG_MAP,
    OFFLOADING_KEY,
    OFFLOADING_NAMESPACE,
)
from planning.models.profile_entry import ProfileStoreRef
from providers.profile_store import (
    STORE_ANNOTATIONS,
    STORE_LABELS,
    RuntimeProfileProvider,
    StoreSettings,
)

OFFLOADING_FIELD_MANAGER: Final = "magicstick-offloading-profiles"

OFFLOADING_STORE: Final = StoreSettings(
    ref=ProfileStoreRef(namespace=OFFLOADING_NAMESPACE, name=OFFLOADING_CONFIG_MAP, key=OFFLOADING_KEY),
    field_manager=OFFLOADING_FIELD_MANAGER,
    max_owned=MAX_OFFLOADING_PROFILES,
    labels=STORE_LABELS,
    annotations=STORE_ANNOTATIONS,
)


class OffloadingProfileProvider(RuntimeProfileProvider):
    """Keeps one owned offloading profile in the offloading store."""

    STORE: ClassVar[StoreSettings] = OFFLOADING_STORE
