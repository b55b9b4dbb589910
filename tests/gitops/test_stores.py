"""The program's shared stores, bootstrapped by Flux in the base of the module that uses them.

Each is a JSON document inside a ConfigMap that the program changes by compare-and-swap. Flux
creates it once with a valid empty value (so a HelmRelease reading it is healthy before the
program writes anything), `ssa: IfNotPresent` makes every later reconcile leave it as the
program wrote it, and `prune: disabled` keeps it when the module is disabled. Names, keys and
empty values are the program's own constants.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pytest

from planning.hardware.validation import (
    HISTORY_CONFIG_MAP,
    HISTORY_KEY,
    RUNTIME_IMAGES_CONFIG_MAP,
    RUNTIME_IMAGES_KEY,
    RUNTIME_IMAGES_NAMESPACE,
    read_history,
)
from planning.models.kubeai import PROFILE_STORE_CONFIG_MAP, PROFILE_STORE_KEY, PROFILE_STORE_NAMESPACE
from planning.models.offloading import OFFLOADING_CONFIG_MAP, OFFLOADING_KEY, OFFLOADING_NAMESPACE
from planning.settings import PlanSettings
from providers.gpu_stores import HISTORY_LABELS
from providers.profile_store import STORE_ANNOTATIONS, STORE_LABELS
from tests.gitops.tree import build, in_repository, module_entries, of_kind


@dataclass(frozen=True)
class Store:
    module: str
    name: str
    namespace: str
    key: str
    is_empty: Callable[[str], bool]
    labels: MappingProxyType[str, str] | dict[str, str]


def _json_equals(expected: Any) -> Callable[[str], bool]:
    return lambda text: json.loads(text) == expected


def _empty_history(text: str) -> bool:
    return read_history(text).runs == {}


STORES = (
    Store(
        "kubeai",
        PROFILE_STORE_CONFIG_MAP,
        PROFILE_STORE_NAMESPACE,
        PROFILE_STORE_KEY,
        _json_equals({"resourceProfiles": {}}),
        STORE_LABELS,
    ),
    Store(
        "kubeai",
        OFFLOADING_CONFIG_MAP,
        OFFLOADING_NAMESPACE,
        OFFLOADING_KEY,
        _json_equals({"resourceProfiles": {}}),
        STORE_LABELS,
    ),
    Store(
        "kubeai",
        RUNTIME_IMAGES_CONFIG_MAP,
        RUNTIME_IMAGES_NAMESPACE,
        RUNTIME_IMAGES_KEY,
        _json_equals({}),
        STORE_LABELS,
    ),
    Store("amd-gpu", HISTORY_CONFIG_MAP, PlanSettings().system_namespace, HISTORY_KEY, _empty_history, HISTORY_LABELS),
)


def _store(store: Store) -> dict:
    (entry,) = [e for e in module_entries() if e.name == store.module]
    path = in_repository(entry.path)
    found = [c for c in of_kind(build(path), "ConfigMap") if c["metadata"]["name"] == store.name]
    assert len(found) == 1, f"{store.name} is not bootstrapped exactly once by the {store.module} base"
    return found[0]


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.name)
def test_each_store_is_bootstrapped_by_the_base_of_the_module_that_uses_it_in_the_program_namespace(store):
    assert _store(store)["metadata"]["namespace"] == store.namespace


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.name)
def test_each_store_starts_as_the_valid_empty_value_under_the_program_key(store):
    data = _store(store)["data"]
    assert list(data) == [store.key]
    assert store.is_empty(data[store.key])


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.name)
def test_each_store_is_created_once_never_reset_and_never_pruned_by_flux(store):
    assert _store(store)["metadata"]["annotations"] == dict(STORE_ANNOTATIONS)


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.name)
def test_each_store_carries_the_labels_the_program_creates_it_with(store):
    assert _store(store)["metadata"]["labels"] == dict(store.labels)


def test_no_other_base_bootstraps_a_store_a_second_time():
    names = {store.name for store in STORES}
    owners = {store.name: store.module for store in STORES}
    for entry in module_entries():
        for config_map in of_kind(build(in_repository(entry.path)), "ConfigMap"):
            name = config_map["metadata"]["name"]
            if name in names:
                assert owners[name] == entry.name, f"{name} is bootstrapped by {entry.name} too"
