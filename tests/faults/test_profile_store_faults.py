"""The shared runtime-profile store under API server faults (invariant 7): bounded retries, no
lost entry, and no half-written store: every version that ever landed parses and is a whole
document (the old one plus exactly the change)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import pytest

from providers.kinds import CONFIG_MAP
from providers.kube import KubeClient
from providers.profile_store import (
    DEFAULT_ATTEMPTS,
    ProfileStoreContended,
    ProfileStoreRef,
    RuntimeProfileProvider,
    put_profile,
    read_document,
    remove_profile,
    serialise,
)
from tests.faults.conftest import ATTEMPTS, Faulty, reported
from tests.faults.proxy import Action, Answer, Fault, Hold, Interleave, Reset, ResetStage

FOREIGN = {"nvidia-gpu-l4": {"imageName": "nvidia-gpu", "limits": {"nvidia.com/gpu": "1"}}}
OURS = "magicstick-cpu-4"
PROFILE = {"imageName": "cpu", "requests": {"cpu": "2", "memory": "16Mi"}}
BEFORE = {"resourceProfiles": FOREIGN, "modelAutoscaling": {"interval": "10s"}}
AFTER = {**BEFORE, "resourceProfiles": {**FOREIGN, OURS: PROFILE}}


def store_path(ref: ProfileStoreRef) -> str:
    return CONFIG_MAP.object_path(ref.name, ref.namespace)


def bootstrapped(admin: KubeClient, namespace: str, document: dict = BEFORE) -> ProfileStoreRef:
    """The store as Flux creates it, holding an entry and a key that are not the program's."""
    ref = ProfileStoreRef(namespace=namespace)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": ref.name, "namespace": namespace},
        "data": {ref.key: serialise(document)},
    }
    admin.apply(CONFIG_MAP, body, field_manager="kustomize-controller")
    return ref


def landed(faulty: Faulty, ref: ProfileStoreRef) -> list[dict]:
    """The document of every write through the proxy that the server stored, in order.
    `json.loads` of each is the check that none was half written."""
    paths = (store_path(ref), CONFIG_MAP.collection_path(ref.namespace))
    return [json.loads(stored["data"][ref.key]) for path in paths for stored in faulty.proxy.written(path)]


def stored_document(admin: KubeClient, ref: ProfileStoreRef) -> dict:
    return read_document(admin.get(CONFIG_MAP, ref.name, ref.namespace), key=ref.key)


def test_a_409_storm_shorter_than_the_attempts_lands_the_entry_once_beside_the_foreign_one(
    faulty: Faulty, admin: KubeClient, namespace: str
):
    ref = bootstrapped(admin, namespace)
    faulty.proxy.plan(Fault("PATCH", store_path(ref), Answer(409), on=(1, 2, 3, 4)))

    assert put_profile(faulty.client, ref, OURS, PROFILE) is True

    assert (faulty.proxy.count("GET", store_path(ref)), faulty.proxy.count("PATCH", store_path(ref))) == (5, 5)
    assert landed(faulty, ref) == [AFTER]
    assert stored_document(admin, ref) == AFTER


def test_a_409_storm_longer_than_the_attempts_gives_up_contended_and_leaves_the_store_as_it_was(
    faulty: Faulty, admin: KubeClient, namespace: str
):
    ref = bootstrapped(admin, namespace)
    before = admin.get(CONFIG_MAP, ref.name, namespace)
    faulty.proxy.plan(Fault("PATCH", store_path(ref), Answer(409), on=None))

    with pytest.raises(ProfileStoreContended, match=f"before each of {DEFAULT_ATTEMPTS} attempts"):
        put_profile(faulty.client, ref, OURS, PROFILE)

    assert faulty.proxy.count("PATCH", store_path(ref)) == DEFAULT_ATTEMPTS
    assert faulty.proxy.count("GET", store_path(ref)) == DEFAULT_ATTEMPTS
    assert landed(faulty, ref) == []
    after = admin.get(CONFIG_MAP, ref.name, namespace)
    assert (after["data"], after["metadata"]["resourceVersion"]) == (
        before["data"],
        before["metadata"]["resourceVersion"],
    )


def test_other_writers_landing_between_each_read_and_write_lose_no_entry(
    faulty: Faulty, admin: KubeClient, namespace: str
):
    ref = bootstrapped(admin, namespace)
    others = {f"magicstick-other-{index}": {**PROFILE, "imageName": f"other-{index}"} for index in (1, 2, 3)}
    queue = iter(others.items())
    versions = [BEFORE]

    def another_writer() -> None:
        put_profile(admin, ref, *next(queue))
        versions.append(stored_document(admin, ref))

    faulty.proxy.plan(Fault("PATCH", store_path(ref), Interleave(another_writer), on=(1, 2, 3)))

    assert put_profile(faulty.client, ref, OURS, PROFILE) is True

    conflicts = [e for e in faulty.proxy.exchanges if e.method == "PATCH" and e.upstream == 409]
    assert (len(conflicts), faulty.proxy.count("PATCH", store_path(ref))) == (3, 4)
    everything = {**BEFORE, "resourceProfiles": {**FOREIGN, **others, OURS: PROFILE}}
    assert landed(faulty, ref) == [everything]
    versions += landed(faulty, ref)
    kept = [
        set(earlier["resourceProfiles"]) <= set(later["resourceProfiles"])
        for earlier, later in itertools.pairwise(versions)
    ]
    assert kept == [True] * 4, "every version keeps every entry of the one before"
    assert stored_document(admin, ref) == everything


def test_connections_reset_on_the_read_and_on_the_write_are_retried_and_the_entry_lands_once(
    faulty: Faulty, admin: KubeClient, namespace: str
):
    ref = bootstrapped(admin, namespace)
    faulty.proxy.plan(Fault("GET", store_path(ref), Reset()), Fault("PATCH", store_path(ref), Reset()))

    assert put_profile(faulty.client, ref, OURS, PROFILE) is True

    assert (faulty.proxy.count("GET", store_path(ref)), faulty.proxy.count("PATCH", store_path(ref))) == (2, 2)
    assert landed(faulty, ref) == [AFTER]


ANSWER_LOST: dict[str, Action] = {
    "reset": Reset(ResetStage.AFTER_FORWARD),
    "cut-body": Reset(ResetStage.MID_BODY),
    "timeout": Hold(after_forward=True),
}


@pytest.mark.parametrize("action", ANSWER_LOST.values(), ids=ANSWER_LOST.keys())
def test_a_write_whose_answer_is_lost_is_not_written_twice_and_the_store_holds_the_new_document(
    faulty: Faulty, admin: KubeClient, namespace: str, action: Action
):
    ref = bootstrapped(admin, namespace)
    faulty.proxy.plan(Fault("PATCH", store_path(ref), action))

    put_profile(faulty.client, ref, OURS, PROFILE)

    retried = [e.upstream for e in faulty.proxy.exchanges if e.method == "PATCH"]
    assert retried == [200, 409], "the retried write carries the old resourceVersion and is refused"
    assert faulty.proxy.count("GET", store_path(ref)) == 2
    assert landed(faulty, ref) == [AFTER]
    assert stored_document(admin, ref) == AFTER


def test_a_created_store_whose_answer_is_lost_is_read_again_and_holds_only_our_entry(
    faulty: Faulty, admin: KubeClient, namespace: str
):
    ref = ProfileStoreRef(namespace=namespace)
    faulty.proxy.plan(Fault("POST", CONFIG_MAP.collection_path(namespace), Reset(ResetStage.AFTER_FORWARD)))

    put_profile(faulty.client, ref, OURS, PROFILE)

    assert [e.upstream for e in faulty.proxy.exchanges if e.method == "POST"] == [201, 409]
    assert landed(faulty, ref) == [{"resourceProfiles": {OURS: PROFILE}}]
    assert stored_document(admin, ref) == {"resourceProfiles": {OURS: PROFILE}}


def test_a_removal_through_a_409_storm_keeps_every_entry_but_ours(faulty: Faulty, admin: KubeClient, namespace: str):
    ref = bootstrapped(admin, namespace, AFTER)
    faulty.proxy.plan(Fault("PATCH", store_path(ref), Answer(409), on=(1, 2)))

    assert remove_profile(faulty.client, ref, OURS) is True

    assert faulty.proxy.count("PATCH", store_path(ref)) == 3
    assert landed(faulty, ref) == [BEFORE]


def test_the_provider_under_a_failing_server_stops_after_the_policys_attempts_naming_the_answer(
    faulty: Faulty, admin: KubeClient, namespace: str, through_proxy: Callable
):
    ref = bootstrapped(admin, namespace)
    before = admin.get(CONFIG_MAP, ref.name, namespace)
    provider = through_proxy(RuntimeProfileProvider())
    inputs = provider.check({}, {"namespace": namespace, "profileName": OURS, "profile": PROFILE}).inputs
    faulty.proxy.plan(Fault("PATCH", store_path(ref), Answer(503), on=None))

    answer = reported(lambda: provider.create(inputs))

    assert "503 ServiceUnavailable" in answer
    assert faulty.proxy.count("PATCH", store_path(ref)) == ATTEMPTS
    assert faulty.proxy.count("GET", store_path(ref)) == 1
    assert (
        admin.get(CONFIG_MAP, ref.name, namespace)["metadata"]["resourceVersion"]
        == before["metadata"]["resourceVersion"]
    )
