"""The offloading store against a real API server: compare-and-swap, bootstrap from absence only,
and Flux's server-side apply with `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

from providers.kinds import CONFIG_MAP
from providers.kube import KubeAccess, KubeClient, open_client
from providers.offloading_store import (
    OFFLOADING_FIELD_MANAGER,
    OFFLOADING_STORE,
    OffloadingProfileProvider,
)
from providers.profile_store import (
    FLUX_SSA_ANNOTATION,
    FLUX_WATCH_LABEL,
    IF_NOT_PRESENT,
    STORE_ANNOTATIONS,
    ProfileStoreRef,
    bootstrap_store,
    put_profile,
    read_profiles,
    serialise,
)
from tests.providers.engine import configured, kubeconfig_config

WRITERS = 20
FLUX_MANAGER = "kustomize-controller"
FOREIGN = {"nvidia-gpu-l4": {"imageName": "nvidia-gpu", "limits": {"nvidia.com/gpu": "1"}}}
OFFLOAD_PROFILE = {
    "imageName": "nvidia-gpu",
    "requests": {"cpu": "2000m", "memory": "24576Mi", "nvidia.com/gpu": "1"},
    "limits": {"memory": "24576Mi", "nvidia.com/gpu": "1"},
}


def store_in(namespace: str) -> ProfileStoreRef:
    return ProfileStoreRef(namespace=namespace, name=OFFLOADING_STORE.ref.name, key=OFFLOADING_STORE.ref.key)


def bootstrap_manifest(ref: ProfileStoreRef) -> dict:
    """The bootstrap document of the GitOps tree: an empty map, applied by Flux only when absent."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ref.name,
            "namespace": ref.namespace,
            "annotations": {FLUX_SSA_ANNOTATION: IF_NOT_PRESENT},
        },
        "data": {ref.key: json.dumps({"resourceProfiles": {}})},
    }


def flux_apply(client: KubeClient, manifest: dict) -> bool:
    """Play kustomize-controller: server-side apply with force under its field manager, except that
    an object whose manifest says `ssa: IfNotPresent` is applied only when it does not exist yet.
    True when it applied."""
    metadata = manifest["metadata"]
    if_not_present = (metadata.get("annotations") or {}).get(FLUX_SSA_ANNOTATION) == IF_NOT_PRESENT
    if if_not_present and client.get_or_none(CONFIG_MAP, metadata["name"], metadata["namespace"]) is not None:
        return False
    client.apply(CONFIG_MAP, manifest, field_manager=FLUX_MANAGER, force=True)
    return True


def stored(client: KubeClient, ref: ProfileStoreRef) -> dict:
    return client.get(CONFIG_MAP, ref.name, ref.namespace)


def put(client: KubeClient, ref: ProfileStoreRef, name: str, body: dict, **options) -> bool:
    return put_profile(client, ref, name, body, store=OFFLOADING_STORE, **options)


def test_twenty_concurrent_writers_lose_no_entry_and_leave_the_foreign_one(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    ref = store_in(namespace)
    flux_apply(admin, {**bootstrap_manifest(ref), "data": {ref.key: json.dumps({"resourceProfiles": FOREIGN})}})
    wanted = {
        f"magicstick-offload-w{index}": {**OFFLOAD_PROFILE, "requests": {"memory": f"{1024 + index}Mi"}}
        for index in range(WRITERS)
    }
    start = threading.Barrier(WRITERS)

    def writer(name: str) -> bool:
        with open_client(admin_access) as client:
            start.wait()
            # More writers than the store's bound: the bound is tested on its own below.
            return put(client, ref, name, wanted[name], attempts=WRITERS, max_owned=WRITERS)

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        assert list(pool.map(writer, wanted)) == [True] * WRITERS
    assert read_profiles(stored(admin, ref)) == {**FOREIGN, **wanted}


def test_bootstrap_creates_an_absent_store_with_an_empty_map_and_the_if_not_present_annotation(
    namespace, admin: KubeClient
):
    ref = store_in(namespace)
    assert bootstrap_store(admin, ref, store=OFFLOADING_STORE) is True
    created = stored(admin, ref)
    assert created["data"] == {ref.key: serialise({"resourceProfiles": {}})}
    assert created["metadata"]["annotations"][FLUX_SSA_ANNOTATION] == IF_NOT_PRESENT
    assert created["metadata"]["labels"][FLUX_WATCH_LABEL] == "Enabled"


def test_bootstrap_leaves_an_existing_store_exactly_as_it_is(namespace, admin: KubeClient):
    ref = store_in(namespace)
    put(admin, ref, "magicstick-offload-a", OFFLOAD_PROFILE)
    version = stored(admin, ref)["metadata"]["resourceVersion"]
    assert bootstrap_store(admin, ref, store=OFFLOADING_STORE) is False
    after = stored(admin, ref)
    assert after["metadata"]["resourceVersion"] == version
    assert read_profiles(after) == {"magicstick-offload-a": OFFLOAD_PROFILE}


def test_a_store_the_program_creates_first_carries_the_flux_annotations(namespace, admin: KubeClient):
    ref = store_in(namespace)
    put(admin, ref, "magicstick-offload-a", OFFLOAD_PROFILE)
    created = stored(admin, ref)
    assert created["metadata"]["annotations"] == dict(STORE_ANNOTATIONS)
    assert created["metadata"]["labels"] == {FLUX_WATCH_LABEL: "Enabled"}
    managers = {entry["manager"] for entry in created["metadata"]["managedFields"]}
    assert managers == {OFFLOADING_FIELD_MANAGER}


def test_flux_reapplying_its_if_not_present_bootstrap_keeps_the_program_entries(namespace, admin: KubeClient):
    ref = store_in(namespace)
    assert flux_apply(admin, bootstrap_manifest(ref)) is True
    put(admin, ref, "magicstick-offload-a", OFFLOAD_PROFILE)
    assert flux_apply(admin, bootstrap_manifest(ref)) is False
    assert read_profiles(stored(admin, ref)) == {"magicstick-offload-a": OFFLOAD_PROFILE}


def test_a_forced_apply_without_if_not_present_would_reset_the_store(namespace, admin: KubeClient):
    """Why the bootstrap must carry IfNotPresent: the program's merge patches leave Flux the owner
    of `data.values.json` it applied, so a forced re-apply takes the value back."""
    ref = store_in(namespace)
    flux_apply(admin, bootstrap_manifest(ref))
    put(admin, ref, "magicstick-offload-a", OFFLOAD_PROFILE)
    plain = bootstrap_manifest(ref)
    plain["metadata"] = {"name": ref.name, "namespace": ref.namespace}
    assert flux_apply(admin, plain) is True
    assert read_profiles(stored(admin, ref)) == {}


def test_the_provider_writes_its_entry_and_reports_a_full_store_as_a_problem(
    namespace, admin: KubeClient, admin_access: KubeAccess
):
    ref = store_in(namespace)
    assert admin_access.kubeconfig is not None
    provider = configured(OffloadingProfileProvider(), kubeconfig_config(admin_access.kubeconfig))
    inputs = provider.check(
        {}, {"namespace": namespace, "profileName": "magicstick-offload-a", "profile": OFFLOAD_PROFILE}
    ).inputs
    assert (inputs["configMap"], inputs["key"]) == (ref.name, ref.key)
    assert provider.create(inputs).outs["problem"] == {}
    assert read_profiles(stored(admin, ref)) == {"magicstick-offload-a": OFFLOAD_PROFILE}

    for index in range(OFFLOADING_STORE.max_owned - 1):
        put(admin, ref, f"magicstick-offload-f{index}", OFFLOAD_PROFILE)
    extra = provider.check({}, {**inputs, "profileName": "magicstick-offload-z"}).inputs
    problem = provider.create(extra).outs["problem"]
    assert problem["reason"] == "ProfileStoreFull"
    assert f"ConfigMap {namespace}/{ref.name} key {ref.key}" in problem["message"]
    assert "magicstick-offload-z" not in read_profiles(stored(admin, ref))
