"""Status updates grouped into bounded batches by the objects' identities (planning/status_batches.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planning.frozen import freeze
from planning.objects import StatusUpdate
from planning.status_batches import MEMBERS_PER_BATCH, bucket_count, bucket_of, member_key, status_batches

API = "appliance.magicstick.dev/v1alpha1"


def update(name: str, kind: str = "ModelActivation", namespace: str = "ai") -> StatusUpdate:
    return StatusUpdate(api_version=API, kind=kind, namespace=namespace, name=name, status=freeze({"phase": "Ready"}))


def test_a_small_appliance_gets_one_batch_per_kind_named_by_the_kind():
    batches = status_batches(
        [update("chat"), update("local", kind="Appliance", namespace="ai-system"), update("embed")]
    )
    assert [(b.logical_name, [b.key(m) for m in b.members]) for b in batches] == [
        ("statuses/appliance/0", ["ai-system/local"]),
        ("statuses/modelactivation/0", ["ai/chat", "ai/embed"]),
    ]


def test_a_cluster_wide_object_is_keyed_by_its_name_alone():
    assert member_key("", "local") == "local"
    assert member_key("ai", "local") == "ai/local"


@pytest.mark.parametrize(
    ("members", "count"), [(0, 1), (1, 1), (100, 1), (101, 2), (200, 2), (201, 4), (1000, 16), (5000, 64)]
)
def test_the_bucket_count_is_the_smallest_power_of_two_that_keeps_the_average_within_the_bound(members, count):
    assert bucket_count(members) == count


def test_a_thousand_activations_need_sixteen_batches_none_far_above_the_bound():
    batches = status_batches([update(f"m{index:04d}") for index in range(1000)])
    assert len(batches) == 16
    assert max(len(b.members) for b in batches) <= 2 * MEMBERS_PER_BATCH


def test_an_objects_batch_does_not_depend_on_the_other_objects_or_their_order():
    names = [f"m{index}" for index in range(150)]
    forward = {b.key(m): b.logical_name for b in status_batches([update(n) for n in names]) for m in b.members}
    backward = {
        b.key(m): b.logical_name for b in status_batches([update(n) for n in reversed(names)]) for m in b.members
    }
    assert forward == backward


def test_two_updates_of_one_object_are_refused():
    with pytest.raises(ValueError, match="two status updates for ModelActivation ai/chat"):
        status_batches([update("chat"), update("chat")])


@given(
    st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True), unique=True, max_size=300),
    st.integers(min_value=1, max_value=64),
)
def test_every_update_is_in_exactly_one_batch_of_its_kind_at_the_bucket_of_its_key(names, per_batch):
    batches = status_batches([update(n) for n in names], per_batch=per_batch)
    keys = [b.key(m) for b in batches for m in b.members]
    assert sorted(keys) == sorted(member_key("ai", n) for n in names)
    count = bucket_count(len(names), per_batch=per_batch)
    assert all(bucket_of(b.key(m), count) == b.bucket for b in batches for m in b.members)


@given(st.from_regex(r"[a-z][a-z0-9-]{0,30}", fullmatch=True), st.integers(min_value=0, max_value=10))
def test_doubling_the_bucket_count_keeps_a_member_or_moves_it_by_the_old_count(name, power):
    count = 2**power
    before, after = bucket_of(name, count), bucket_of(name, 2 * count)
    assert after in (before, before + count)
