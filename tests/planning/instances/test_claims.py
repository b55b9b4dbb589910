"""Who holds a contested name, and the names themselves, without a plan around them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planning.instances.claims import Claimant, backend_service, created_at, hostname, release, resolve
from planning.instances.names import derived_release_name, instance_name_problem
from tests.planning.builders import CATALOGS

HOST = hostname("team.openclaw.magicstick.local")
RELEASE = release("ai", "openclaw-team")


def _asking(name: str, created: str | None = None, *claims) -> Claimant:
    return Claimant("ai-system", name, created, wants=tuple(claims) or (HOST, RELEASE))


@pytest.mark.parametrize(
    ("claimants", "loser", "holder"),
    [
        ([_asking("b", "2026-01-01T10:00:00Z"), _asking("a", "2026-01-01T11:00:00Z")], "a", "b"),
        ([_asking("b", "2026-01-01T10:00:00Z"), _asking("a", "2026-01-01T10:00:00Z")], "b", "a"),
        ([_asking("a"), _asking("b", "2026-01-01T11:00:00Z")], "a", "b"),
        ([_asking("b"), _asking("a")], "b", "a"),
        ([_asking("a", "2026-01-01T10:00:00+00:00"), _asking("b", "2026-01-01 09:30:00+00:00")], "a", "b"),
        (
            [
                _asking("a", "2026-01-01T10:00:00Z"),
                Claimant("ai-system", "b", "2026-01-01T11:00:00Z", holds=(RELEASE,)),
            ],
            "a",
            "b",
        ),
    ],
    ids=[
        "the-earlier-creation-wins",
        "same-time-the-name-decides",
        "without-a-creation-time-an-object-counts-as-the-latest",
        "neither-has-a-creation-time",
        "either-rfc-3339-spelling",
        "a-name-held-in-the-cluster-stays-with-its-holder",
    ],
)
def test_one_claimant_holds_a_contested_name_and_the_other_gets_a_conflict_naming_it(claimants, loser, holder):
    resolution = resolve(claimants)
    assert set(resolution.conflicts) == {f"ai-system/{loser}"}
    assert resolution.conflicts[f"ai-system/{loser}"].holder == f"ai-system/{holder}"


def test_the_same_claimants_in_any_order_give_the_same_decision():
    claimants = [_asking(n, "2026-01-01T10:00:00Z") for n in ("c", "a", "b")]
    assert resolve(claimants) == resolve(list(reversed(claimants)))


def test_a_loser_takes_none_of_its_names_so_a_third_instance_is_judged_against_the_holder_alone():
    first = _asking("first", "2026-01-01T10:00:00Z", HOST)
    second = _asking("second", "2026-01-01T11:00:00Z", HOST, release("ai", "second"))
    third = _asking("third", "2026-01-01T12:00:00Z", release("ai", "second"))
    resolution = resolve([first, second, third])
    assert set(resolution.conflicts) == {"ai-system/second"}


def test_the_first_taken_name_in_the_order_asked_is_reported():
    holder = _asking("a", "2026-01-01T10:00:00Z", HOST, RELEASE, backend_service("ai", "openclaw-team"))
    conflict = resolve([holder, _asking("b", "2026-01-01T11:00:00Z", HOST, RELEASE)]).conflicts["ai-system/b"]
    assert (conflict.reason, conflict.claim) == ("HostnameConflict", HOST)
    assert conflict.message.startswith(
        "hostname team.openclaw.magicstick.local is held by AppInstance ai-system/a, which was created first"
    )


@pytest.mark.parametrize("value", ["", "yesterday", None])
def test_an_unreadable_creation_time_is_unknown(value):
    assert created_at(value) is None


_HELM_RELEASE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_INSTANCE_NAMES = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True)


@given(application=st.sampled_from(CATALOGS.applications.names), name=_INSTANCE_NAMES)
def test_a_derived_release_and_its_service_always_fit_their_limits(application, name):
    assert instance_name_problem(name) is None
    derived = derived_release_name(application=application, instance_name=name)
    service = CATALOGS.applications.get(application).backend_service_for(derived)
    assert len(derived) <= 53 and _HELM_RELEASE.match(derived)
    assert len(service) <= 63 and _HELM_RELEASE.match(service)


@given(
    first=st.tuples(st.sampled_from(CATALOGS.applications.names), _INSTANCE_NAMES),
    second=st.tuples(st.sampled_from(CATALOGS.applications.names), _INSTANCE_NAMES),
)
def test_two_different_application_and_name_pairs_never_derive_the_same_release(first, second):
    if first != second:
        assert derived_release_name(application=first[0], instance_name=first[1]) != derived_release_name(
            application=second[0], instance_name=second[1]
        )
