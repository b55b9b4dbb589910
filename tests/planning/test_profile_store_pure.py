"""The runtime-profile store's pure rules: reading, changing and bounding the document (invariant 7)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from providers.outcomes import ProblemReason, problem_output
from providers.profile_store import (
    MalformedProfileStore,
    ProfileStoreError,
    ProfileStoreFull,
    RuntimeProfileProvider,
    read_document,
    read_profiles,
    serialise,
    with_profile,
    without_profile,
)

CPU_PROFILE = {"imageName": "cpu", "requests": {"cpu": "2", "memory": "16Mi"}, "limits": {"cpu": "4"}}
FOREIGN = {"nvidia-gpu-l4": {"imageName": "nvidia-gpu", "limits": {"nvidia.com/gpu": "1"}}}


def config_map(text: str | None) -> dict:
    data = {} if text is None else {"values.json": text}
    return {"metadata": {"namespace": "flux-system", "name": "magicstick-runtime-profiles"}, "data": data}


def test_an_identical_profile_needs_no_write():
    assert with_profile({"magicstick-cpu-4": CPU_PROFILE}, "magicstick-cpu-4", dict(CPU_PROFILE), max_owned=64) is None


def test_a_new_profile_is_added_beside_the_existing_ones():
    profiles = with_profile(FOREIGN, "magicstick-cpu-4", CPU_PROFILE, max_owned=64)
    assert profiles == {**FOREIGN, "magicstick-cpu-4": CPU_PROFILE}


def test_a_changed_profile_replaces_the_owned_entry():
    changed = {**CPU_PROFILE, "limits": {"cpu": "8"}}
    profiles = {"magicstick-cpu-4": CPU_PROFILE}
    assert with_profile(profiles, "magicstick-cpu-4", changed, max_owned=64) == {"magicstick-cpu-4": changed}


def test_a_new_profile_beyond_the_bound_is_refused_with_a_message_naming_the_limit():
    full = {f"magicstick-p{i}": CPU_PROFILE for i in range(3)} | FOREIGN
    with pytest.raises(ProfileStoreFull, match="the limit is 3"):
        with_profile(full, "magicstick-p9", CPU_PROFILE, max_owned=3)


def test_foreign_entries_do_not_count_towards_the_bound():
    profiles = with_profile(
        {**FOREIGN, "other-tool-a": {}, "other-tool-b": {}}, "magicstick-cpu-4", CPU_PROFILE, max_owned=1
    )
    assert profiles is not None and "magicstick-cpu-4" in profiles


def test_an_existing_owned_entry_can_still_change_when_the_store_is_full():
    full = {f"magicstick-p{i}": CPU_PROFILE for i in range(3)}
    changed = {"imageName": "cpu"}
    assert with_profile(full, "magicstick-p1", changed, max_owned=3) == {**full, "magicstick-p1": changed}


def test_removing_an_owned_profile_keeps_every_other_entry():
    assert without_profile({**FOREIGN, "magicstick-cpu-4": CPU_PROFILE}, "magicstick-cpu-4") == FOREIGN


def test_removing_an_absent_profile_needs_no_write():
    assert without_profile(FOREIGN, "magicstick-cpu-4") is None


def test_a_foreign_entry_is_never_changed():
    with pytest.raises(ProfileStoreError, match="not owned"):
        with_profile(FOREIGN, "nvidia-gpu-l4", CPU_PROFILE, max_owned=64)


def test_a_foreign_entry_is_never_removed():
    with pytest.raises(ProfileStoreError, match="not owned"):
        without_profile(FOREIGN, "nvidia-gpu-l4")


FOREIGN_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=30).filter(
    lambda name: not name.startswith("magicstick-")
)
OWNED_NAMES = st.from_regex(r"magicstick-[a-z0-9]{1,20}", fullmatch=True)
BODIES = st.dictionaries(st.sampled_from(["imageName", "cpu", "memory"]), st.text(max_size=5), max_size=3)


@given(
    st.dictionaries(FOREIGN_NAMES, BODIES, max_size=5),
    st.dictionaries(OWNED_NAMES, BODIES, max_size=5),
    OWNED_NAMES,
    BODIES,
)
def test_putting_or_removing_an_owned_entry_leaves_all_foreign_entries_as_they_were(foreign, owned, name, body):
    profiles = {**foreign, **owned}
    for changed in (with_profile(profiles, name, body, max_owned=64), without_profile(profiles, name)):
        result = profiles if changed is None else changed
        assert {k: v for k, v in result.items() if k in foreign} == foreign


def test_a_missing_data_or_key_reads_as_no_profiles():
    assert read_profiles({"metadata": {"name": "x"}}) == {}
    assert read_profiles(config_map(None)) == {}


def test_the_empty_map_flux_bootstraps_reads_as_no_profiles():
    assert read_profiles(config_map('{\n  "resourceProfiles": {}\n}\n')) == {}


def test_stored_profiles_are_read_from_the_values_document():
    assert read_profiles(config_map(json.dumps({"resourceProfiles": FOREIGN}))) == FOREIGN


def test_other_keys_of_the_values_document_are_kept():
    document = read_document(config_map('{"resourceProfiles": {}, "modelAutoscaling": {"interval": "10s"}}'))
    assert document["modelAutoscaling"] == {"interval": "10s"}


@pytest.mark.parametrize("text", ['{"resourceProfiles": {', "[1, 2]", '{"resourceProfiles": [1]}'])
def test_a_malformed_store_is_refused_with_a_message_naming_the_config_map_and_key(text):
    with pytest.raises(
        MalformedProfileStore, match="ConfigMap flux-system/magicstick-runtime-profiles key values.json"
    ):
        read_profiles(config_map(text))


def test_serialisation_sorts_keys_and_uses_compact_separators():
    assert (
        serialise({"resourceProfiles": {"b": {"y": 1, "x": 2}, "a": {}}})
        == '{"resourceProfiles":{"a":{},"b":{"x":2,"y":1}}}'
    )


def provider_inputs(**overrides) -> dict:
    return {"profileName": "magicstick-cpu-4", "profile": CPU_PROFILE, "kubeconfig": None, "context": None} | overrides


def test_check_fills_in_the_default_store():
    result = RuntimeProfileProvider().check({}, provider_inputs())
    assert result.failures == []
    assert (result.inputs["namespace"], result.inputs["configMap"], result.inputs["key"]) == (
        "flux-system",
        "magicstick-runtime-profiles",
        "values.json",
    )


@pytest.mark.parametrize(
    "name",
    ["nvidia-gpu-l4", "magicstick-" + "x" * 53, "magicstick-CPU", "magicstick-cpu:4", "magicstick-", ""],
)
def test_check_refuses_a_profile_name_the_program_cannot_own(name):
    result = RuntimeProfileProvider().check({}, provider_inputs(profileName=name))
    assert [f.property for f in result.failures] == ["profileName"]


def test_check_accepts_a_profile_name_of_exactly_63_characters():
    result = RuntimeProfileProvider().check({}, provider_inputs(profileName="magicstick-" + "x" * 52))
    assert result.failures == []


def test_check_refuses_a_profile_that_is_not_a_mapping():
    result = RuntimeProfileProvider().check({}, provider_inputs(profile=["cpu"]))
    assert [f.property for f in result.failures] == ["profile"]


def test_check_refuses_a_store_key_a_config_map_cannot_hold():
    result = RuntimeProfileProvider().check({}, provider_inputs(key="values/json"))
    assert [f.property for f in result.failures] == ["key"]


@pytest.mark.parametrize("prop", ["namespace", "configMap", "key", "profileName"])
def test_a_changed_store_or_profile_name_replaces_the_entry(prop):
    provider = RuntimeProfileProvider()
    olds = provider.check({}, provider_inputs()).inputs
    news = {**olds, prop: "magicstick-other"}
    assert provider.diff("id", olds, news).replaces == [prop]


def test_a_changed_profile_body_updates_the_entry_in_place():
    provider = RuntimeProfileProvider()
    olds = provider.check({}, provider_inputs()).inputs
    diff = provider.diff("id", olds, {**olds, "profile": {**CPU_PROFILE, "limits": {"cpu": "8"}}})
    assert (diff.changes, diff.replaces) == (True, [])


def test_an_unchanged_entry_has_no_diff():
    provider = RuntimeProfileProvider()
    news = provider.check({}, provider_inputs()).inputs
    assert provider.diff("id", {**news, "problem": {}}, dict(news)).changes is False


def test_an_entry_whose_write_met_a_temporary_problem_is_written_again_in_place():
    provider = RuntimeProfileProvider()
    news = provider.check({}, provider_inputs()).inputs
    full = problem_output(ProblemReason.PROFILE_STORE_FULL, "the limit is 64")
    diff = provider.diff("id", {**news, "problem": full}, dict(news))
    assert (diff.changes, diff.replaces) == (True, [])


def test_state_of_an_earlier_version_without_a_problem_output_is_updated_once():
    provider = RuntimeProfileProvider()
    news = provider.check({}, provider_inputs()).inputs
    diff = provider.diff("id", dict(news), dict(news))
    assert (diff.changes, diff.replaces) == (True, [])
