"""The runtime-profile store against the real apiserver: compare-and-swap under contention (invariant 7)."""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import pytest

from planning.models.kubeai import MAX_CPU_PROFILES
from providers import profile_store
from providers.kinds import CONFIG_MAP
from providers.kube import KubeAccess, KubeClient, open_client
from providers.profile_store import (
    DEFAULT_ATTEMPTS,
    MalformedProfileStore,
    ProfileStoreRef,
    RuntimeProfileProvider,
    put_profile,
    read_profiles,
    remove_profile,
    serialise,
)
from tests.cluster.apiserver import READER_USER
from tests.live.world import load
from tests.providers.engine import LEGACY_ACCESS, configured, kubeconfig_config

WRITERS = 20
FOREIGN = {"nvidia-gpu-l4": {"imageName": "nvidia-gpu", "limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "6"}}}
CPU_PROFILE = {"imageName": "cpu", "requests": {"cpu": "2", "memory": "16Mi"}, "limits": {"cpu": "4"}}
CONFLICTS_METRIC = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$", re.MULTILINE)


def store_in(namespace: str) -> ProfileStoreRef:
    return ProfileStoreRef(namespace=namespace)


def store_data(client: KubeClient, ref: ProfileStoreRef, data: dict[str, str]) -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": ref.name, "namespace": ref.namespace},
        "data": data,
    }
    load(client, [config_map], field_manager="kustomize-controller")


def flux_bootstrap(client: KubeClient, ref: ProfileStoreRef, document: dict, **extra_data: str) -> None:
    """Create the store as Flux does, with entries and keys the program does not own."""
    store_data(client, ref, {ref.key: json.dumps(document, indent=2), **extra_data})


def stored(client: KubeClient, ref: ProfileStoreRef) -> dict:
    return client.get(CONFIG_MAP, ref.name, ref.namespace)


def configmap_conflicts(admin_client: httpx.Client) -> int:
    """409 answers the apiserver has given to writes of ConfigMaps, from its own request counter."""
    response = admin_client.get("/metrics")
    response.raise_for_status()
    total = 0
    for match in CONFLICTS_METRIC.finditer(response.text):
        labels = match["labels"]
        if 'code="409"' in labels and 'resource="configmaps"' in labels:
            total += int(float(match["value"]))
    return total


def test_twenty_concurrent_writers_all_land_their_profiles_and_the_foreign_entry_is_untouched(
    namespace, admin: KubeClient, admin_access: KubeAccess, admin_client: httpx.Client
):
    ref = store_in(namespace)
    flux_bootstrap(admin, ref, {"resourceProfiles": FOREIGN})
    wanted = {f"magicstick-writer-{index}": {**CPU_PROFILE, "imageName": f"cpu-{index}"} for index in range(WRITERS)}
    start = threading.Barrier(WRITERS)
    conflicts_before = configmap_conflicts(admin_client)

    def writer(name: str) -> bool:
        with open_client(admin_access) as client:
            start.wait()
            return put_profile(client, ref, name, wanted[name], attempts=WRITERS)

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        written = list(pool.map(writer, wanted))

    assert written == [True] * WRITERS
    assert read_profiles(stored(admin, ref)) == {**FOREIGN, **wanted}
    assert configmap_conflicts(admin_client) - conflicts_before >= 1


def test_writers_racing_to_create_an_absent_store_all_land_their_profiles(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    ref = store_in(namespace)
    racers = 8
    start = threading.Barrier(racers)

    def writer(index: int) -> bool:
        with open_client(admin_access) as client:
            start.wait()
            return put_profile(client, ref, f"magicstick-r{index}", CPU_PROFILE, attempts=racers)

    with ThreadPoolExecutor(max_workers=racers) as pool:
        assert list(pool.map(writer, range(racers))) == [True] * racers
    assert set(read_profiles(stored(admin, ref))) == {f"magicstick-r{i}" for i in range(racers)}


def test_an_absent_store_is_created_holding_only_our_entry(namespace, admin: KubeClient):
    ref = store_in(namespace)
    assert put_profile(admin, ref, "magicstick-cpu-4", CPU_PROFILE) is True
    assert stored(admin, ref)["data"] == {
        "values.json": serialise({"resourceProfiles": {"magicstick-cpu-4": CPU_PROFILE}})
    }


def test_putting_an_identical_profile_writes_nothing(namespace, admin: KubeClient):
    ref = store_in(namespace)
    put_profile(admin, ref, "magicstick-cpu-4", CPU_PROFILE)
    version = stored(admin, ref)["metadata"]["resourceVersion"]
    assert put_profile(admin, ref, "magicstick-cpu-4", dict(CPU_PROFILE)) is False
    assert stored(admin, ref)["metadata"]["resourceVersion"] == version


def test_other_keys_of_the_config_map_and_of_the_values_document_are_kept(namespace, admin: KubeClient):
    ref = store_in(namespace)
    flux_bootstrap(
        admin, ref, {"resourceProfiles": {}, "modelAutoscaling": {"interval": "10s"}}, **{"README": "owned by Flux"}
    )
    put_profile(admin, ref, "magicstick-cpu-4", CPU_PROFILE)
    after = stored(admin, ref)
    assert after["data"]["README"] == "owned by Flux"
    assert json.loads(after["data"]["values.json"]) == {
        "resourceProfiles": {"magicstick-cpu-4": CPU_PROFILE},
        "modelAutoscaling": {"interval": "10s"},
    }


def test_removing_an_owned_profile_keeps_the_foreign_entries(namespace, admin: KubeClient):
    ref = store_in(namespace)
    flux_bootstrap(admin, ref, {"resourceProfiles": {**FOREIGN, "magicstick-cpu-4": CPU_PROFILE}})
    assert remove_profile(admin, ref, "magicstick-cpu-4") is True
    assert read_profiles(stored(admin, ref)) == FOREIGN


def test_removing_an_absent_profile_succeeds_and_writes_nothing(namespace, admin: KubeClient):
    ref = store_in(namespace)
    flux_bootstrap(admin, ref, {"resourceProfiles": FOREIGN})
    version = stored(admin, ref)["metadata"]["resourceVersion"]
    assert remove_profile(admin, ref, "magicstick-cpu-4") is False
    assert stored(admin, ref)["metadata"]["resourceVersion"] == version


def test_removing_a_profile_from_an_absent_store_succeeds_and_creates_nothing(namespace, admin: KubeClient):
    ref = store_in(namespace)
    assert remove_profile(admin, ref, "magicstick-cpu-4") is False
    assert admin.get_or_none(CONFIG_MAP, ref.name, ref.namespace) is None


def test_a_malformed_store_is_refused_and_left_untouched(namespace, admin: KubeClient):
    ref = store_in(namespace)
    store_data(admin, ref, {"values.json": "{oops"})
    with pytest.raises(
        MalformedProfileStore, match=f"ConfigMap {namespace}/magicstick-runtime-profiles key values.json"
    ):
        put_profile(admin, ref, "magicstick-cpu-4", CPU_PROFILE)
    assert stored(admin, ref)["data"] == {"values.json": "{oops"}


def provider_inputs(namespace: str, profile: dict) -> dict:
    inputs = {"namespace": namespace, "profileName": "magicstick-cpu-4", "profile": profile}
    return RuntimeProfileProvider().check({}, inputs).inputs


def configured_provider(access: KubeAccess) -> RuntimeProfileProvider:
    assert access.kubeconfig is not None
    return configured(RuntimeProfileProvider(), kubeconfig_config(access.kubeconfig))


def test_the_provider_creates_updates_reads_and_deletes_its_entry(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    ref = store_in(namespace)
    flux_bootstrap(admin, ref, {"resourceProfiles": FOREIGN})
    provider = configured_provider(admin_access)
    inputs = provider_inputs(namespace, {**CPU_PROFILE, "priority": 3.0})
    created = provider.create(inputs)
    assert created.id == f"{namespace}/magicstick-runtime-profiles/values.json/magicstick-cpu-4"
    assert '"priority":3,' in stored(admin, ref)["data"]["values.json"]

    changed = provider_inputs(namespace, {**CPU_PROFILE, "limits": {"cpu": "8"}})
    updated = provider.update(created.id, created.outs, changed)
    assert updated.outs == {**changed, "problem": {}}
    assert read_profiles(stored(admin, ref))["magicstick-cpu-4"]["limits"] == {"cpu": "8"}

    read = provider.read(created.id, updated.outs)
    assert (read.id, read.outs["profile"]) == (created.id, changed["profile"])

    provider.delete(created.id, updated.outs)
    assert read_profiles(stored(admin, ref)) == FOREIGN


def test_the_provider_adopts_an_identical_existing_entry_without_writing(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    ref = store_in(namespace)
    flux_bootstrap(admin, ref, {"resourceProfiles": {**FOREIGN, "magicstick-cpu-4": CPU_PROFILE}})
    version = stored(admin, ref)["metadata"]["resourceVersion"]
    configured_provider(admin_access).create(provider_inputs(namespace, CPU_PROFILE))
    assert stored(admin, ref)["metadata"]["resourceVersion"] == version


def test_a_refresh_of_an_entry_removed_by_someone_else_reports_it_gone(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    ref = store_in(namespace)
    provider = configured_provider(admin_access)
    created = provider.create(provider_inputs(namespace, CPU_PROFILE))
    remove_profile(admin, ref, "magicstick-cpu-4")
    assert provider.read(created.id, created.outs).id == ""


def test_the_provider_deletes_an_entry_that_is_already_gone(namespace, admin: KubeClient, admin_access: KubeAccess):
    provider = configured_provider(admin_access)
    provider.delete("id", provider_inputs(namespace, CPU_PROFILE))
    assert admin.get_or_none(CONFIG_MAP, "magicstick-runtime-profiles", namespace) is None


def test_a_configured_provider_reads_and_deletes_an_entry_whose_state_names_a_kubeconfig_absent_here(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    ref = store_in(namespace)
    flux_bootstrap(admin, ref, {"resourceProfiles": {**FOREIGN, "magicstick-cpu-4": CPU_PROFILE}})
    provider = configured_provider(admin_access)
    old_state = {**provider_inputs(namespace, CPU_PROFILE), **LEGACY_ACCESS}
    entry_id = f"{namespace}/magicstick-runtime-profiles/values.json/magicstick-cpu-4"

    read = provider.read(entry_id, old_state)
    provider.delete(entry_id, old_state)

    assert (read.id, read.outs) == (entry_id, provider_inputs(namespace, CPU_PROFILE))
    assert read_profiles(stored(admin, ref)) == FOREIGN


class RivalAfterEveryRead:
    """The provider's own client, beside another writer that changes the store right after each
    read of it: every compare-and-swap the provider tries then carries a stale resourceVersion,
    and the API server answers 409, as it does when another tool writes in between."""

    def __init__(self, client: KubeClient, rival: KubeClient, ref: ProfileStoreRef) -> None:
        self._client = client
        self._rival = rival
        self._ref = ref
        self.rival_writes = 0

    def get_or_none(self, kind, name, namespace=None):
        current = self._client.get_or_none(kind, name, namespace)
        if (kind, name, namespace) == (CONFIG_MAP, self._ref.name, self._ref.namespace):
            self.rival_writes += 1
            put_profile(self._rival, self._ref, f"magicstick-rival-{self.rival_writes}", CPU_PROFILE)
        return current

    def __getattr__(self, name: str):
        return getattr(self._client, name)


def test_a_full_store_is_the_entrys_problem_not_an_error_and_the_write_is_tried_again(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    ref = store_in(namespace)
    others = {f"magicstick-other-{index}": CPU_PROFILE for index in range(MAX_CPU_PROFILES)}
    flux_bootstrap(admin, ref, {"resourceProfiles": {**FOREIGN, **others}})
    version = stored(admin, ref)["metadata"]["resourceVersion"]
    provider = configured_provider(admin_access)
    inputs = provider_inputs(namespace, CPU_PROFILE)

    created = provider.create(inputs)

    problem = created.outs["problem"]
    assert (problem["reason"], problem["persistence"]) == ("ProfileStoreFull", "Temporary")
    assert f"the limit is {MAX_CPU_PROFILES}" in problem["message"]
    assert stored(admin, ref)["metadata"]["resourceVersion"] == version
    assert provider.diff(created.id, created.outs, inputs).changes is True


def test_a_malformed_store_is_the_entrys_problem_left_untouched_and_the_write_lands_once_it_is_repaired(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    ref = store_in(namespace)
    store_data(admin, ref, {"values.json": "{oops"})
    provider = configured_provider(admin_access)
    inputs = provider_inputs(namespace, CPU_PROFILE)

    created = provider.create(inputs)

    problem = created.outs["problem"]
    assert problem["reason"] == "ProfileStoreMalformed"
    assert problem["message"].startswith(
        f"ConfigMap {namespace}/magicstick-runtime-profiles key values.json is not valid JSON"
    )
    assert stored(admin, ref)["data"] == {"values.json": "{oops"}
    assert provider.diff(created.id, created.outs, inputs).changes is True

    flux_bootstrap(admin, ref, {"resourceProfiles": FOREIGN})
    retried = provider.update(created.id, created.outs, inputs)
    assert retried.outs["problem"] == {}
    assert read_profiles(stored(admin, ref)) == {**FOREIGN, "magicstick-cpu-4": CPU_PROFILE}


def test_a_store_contended_on_every_attempt_is_the_entrys_problem_and_keeps_every_rival_write(
    namespace, admin: KubeClient, admin_access: KubeAccess, monkeypatch
):
    ref = store_in(namespace)
    flux_bootstrap(admin, ref, {"resourceProfiles": FOREIGN})
    rivals: list[RivalAfterEveryRead] = []

    @contextmanager
    def contended_client(access: KubeAccess):
        with open_client(access) as client:
            rivals.append(RivalAfterEveryRead(client, admin, ref))
            yield rivals[-1]

    monkeypatch.setattr(profile_store, "open_client", contended_client)
    provider = configured_provider(admin_access)
    inputs = provider_inputs(namespace, CPU_PROFILE)

    created = provider.create(inputs)

    problem = created.outs["problem"]
    assert (problem["reason"], problem["persistence"]) == ("ProfileStoreContended", "Temporary")
    assert f"before each of {DEFAULT_ATTEMPTS} attempts" in problem["message"]
    (rival,) = rivals
    assert read_profiles(stored(admin, ref)) == {
        **FOREIGN,
        **{f"magicstick-rival-{n}": CPU_PROFILE for n in range(1, rival.rival_writes + 1)},
    }
    assert provider.diff(created.id, created.outs, inputs).changes is True


def test_a_store_the_api_server_refuses_to_show_is_the_entrys_problem_with_the_servers_status(namespace, cluster):
    provider = configured(RuntimeProfileProvider(), kubeconfig_config(str(cluster.kubeconfig_path(READER_USER))))
    inputs = provider_inputs(namespace, CPU_PROFILE)

    created = provider.create(inputs)

    problem = created.outs["problem"]
    assert (problem["reason"], problem["persistence"]) == ("ProfileStoreRefused", "Temporary")
    assert problem["message"].startswith("403 Forbidden: ")
    assert provider.diff(created.id, created.outs, inputs).changes is True


def test_deleting_an_entry_from_a_malformed_store_succeeds_and_leaves_the_store_untouched(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    ref = store_in(namespace)
    store_data(admin, ref, {"values.json": "{oops"})
    configured_provider(admin_access).delete("id", provider_inputs(namespace, CPU_PROFILE))
    assert stored(admin, ref)["data"] == {"values.json": "{oops"}


def test_a_successful_write_has_no_problem_and_asks_for_no_retry(namespace, admin_access: KubeAccess):
    provider = configured_provider(admin_access)
    inputs = provider_inputs(namespace, CPU_PROFILE)
    created = provider.create(inputs)
    assert created.outs["problem"] == {}
    assert provider.diff(created.id, created.outs, inputs).changes is False
