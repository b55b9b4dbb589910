"""Names an instance holds alone: its hostnames, its Helm release and its backend Service.

Two instances never share one. A true collision (the same hostname asked twice) gives the later
object, by metadata.creationTimestamp then namespace/name, a Conflict naming the earlier one,
which keeps running.
"""

from __future__ import annotations

import pytest

from planning.frozen import thaw
from tests.planning.builders import CATALOGS, observed_release, plan_of, status_of
from tests.planning.instances.scene import (
    PAPERCLIP_VALUES,
    backend_services,
    converged,
    helm_release_of,
    instance,
    instance_status,
    objects_of,
    platform,
)

EARLY = "2026-01-01T10:00:00Z"
LATE = "2026-01-01T11:00:00Z"


def _routes_hosts(result, name: str) -> set[str]:
    return {h for r in objects_of(result, name).get("HTTPRoute", ()) for h in r.body["spec"]["hostnames"]}


# One backend, release and hostname per instance


def test_instances_of_two_applications_with_the_same_name_in_one_namespace_reach_two_different_services():
    openclaw = instance("openclaw-default", "openclaw")
    paperclip = instance("paperclip-default", "paperclip", PAPERCLIP_VALUES)
    result = plan_of(*converged(*platform("openclaw", "paperclip"), openclaw, paperclip))
    assert backend_services(result, "openclaw-default") == {("ai", "openclaw-default")}
    assert backend_services(result, "paperclip-default") == {("ai", "paperclip-default")}
    grants = [
        thaw(g.body["spec"]["to"])
        for n in ("openclaw-default", "paperclip-default")
        for g in objects_of(result, n)["ReferenceGrant"]
    ]
    assert grants == [
        [{"group": "", "kind": "Service", "name": "openclaw-default"}],
        [{"group": "", "kind": "Service", "name": "paperclip-default"}],
    ]


@pytest.mark.parametrize(
    ("application", "service"),
    [
        ("openclaw", "openclaw-team"),
        ("hermes", "hermes-team"),
        ("paperclip", "paperclip-team"),
        ("kubeopencode", "kubeopencode-team-server"),
        ("odysseus", "odysseus-team-odysseus"),
    ],
)
def test_a_new_instance_is_released_as_application_dash_name_and_its_routes_reach_the_service_its_chart_derives_from_that_release(
    application, service
):
    result = plan_of(*converged(*platform(application), instance("mine", application, {"name": "team"})))
    release = helm_release_of(result, "mine")
    assert (release.name, release.body["spec"]["releaseName"]) == ("mine", f"{application}-team")
    assert backend_services(result, "mine") == {("ai", service)}
    assert CATALOGS.applications.get(application).backend_service_for(f"{application}-team") == service


def test_a_long_instance_name_gives_a_release_of_at_most_53_and_a_service_of_at_most_63_characters_with_a_stable_hash():
    name = "a" * 63
    first = plan_of(*converged(*platform("kubeopencode"), instance("long", "kubeopencode", {"name": name})))
    again = plan_of(*converged(*platform("kubeopencode"), instance("long", "kubeopencode", {"name": name})))
    release = helm_release_of(first, "long").body["spec"]["releaseName"]
    ((_, service),) = backend_services(first, "long")
    assert len(release) <= 53 and release.startswith("kubeopencode-aaa")
    assert len(service) <= 63 and service == f"{release}-server"
    assert helm_release_of(again, "long").body["spec"]["releaseName"] == release


def test_an_existing_release_keeps_its_name_so_the_instance_is_not_reinstalled():
    mine = instance("mine", "openclaw", {"name": "team"})
    existing = observed_release(helm_release_of(plan_of(*platform("openclaw"), mine), "mine"))
    existing["spec"]["releaseName"] = "mine"
    result = plan_of(*converged(*platform("openclaw"), mine, existing))
    assert helm_release_of(result, "mine").body["spec"]["releaseName"] == "mine"
    assert backend_services(result, "mine") == {("ai", "mine")}


@pytest.mark.parametrize("value", ["Team", "team.one", "-team", "a" * 64, "team_one"])
def test_an_instance_name_that_cannot_be_a_hostname_label_is_an_invalid_spec(value):
    result = plan_of(*platform("openclaw"), instance("mine", "openclaw", {"name": value}))
    status = instance_status(result, "mine")
    assert (status["phase"], status["reason"]) == ("Failed", "InvalidSpec")
    assert status["message"].startswith("spec.values.name:")
    assert objects_of(result, "mine") == {}


# A true collision: the same hostname asked twice


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        (
            instance("a-claw", "openclaw", {"name": "team"}, created=EARLY),
            instance("b-claw", "openclaw", {"name": "team"}, created=LATE),
        ),
        (
            instance("team", "openclaw", {}, created=EARLY),
            instance("b-claw", "openclaw", {"name": "team"}, created=LATE),
        ),
        (
            instance("z-claw", "openclaw", {"name": "team"}, created=EARLY),
            instance("a-claw", "openclaw", {"name": "team"}, created=LATE),
        ),
        (
            instance("a-claw", "openclaw", {"name": "team"}, created=EARLY),
            instance("b-claw", "openclaw", {"name": "team"}, created=EARLY),
        ),
        (instance("a-claw", "openclaw", {"name": "team"}), instance("b-claw", "openclaw", {"name": "team"})),
        (
            instance("a-claw", "openclaw", {"name": "team"}, created=EARLY, access={"exposure": "local"}),
            instance("b-claw", "openclaw", {"name": "team"}, created=LATE),
        ),
        (
            instance("a-claw", "openclaw", {"name": "team"}, created=EARLY),
            instance("b-claw", "openclaw", {"name": "team"}, created=LATE, targetNamespace="other"),
        ),
    ],
    ids=[
        "same-values-name",
        "values-name-equals-the-other-objects-name",
        "creation-time-decides-not-the-name",
        "same-creation-time-the-name-decides",
        "no-creation-time-the-name-decides",
        "local-only-against-local-and-public",
        "different-target-namespaces",
    ],
)
def test_the_later_of_two_instances_asking_for_the_same_hostname_gets_a_conflict_naming_the_earlier(earlier, later):
    result = plan_of(*converged(*platform("openclaw"), earlier, later))
    first, second = earlier["metadata"]["name"], later["metadata"]["name"]
    status = instance_status(result, second)
    assert (status["phase"], status["reason"]) == ("Conflict", "HostnameConflict")
    assert (
        f"AppInstance ai-system/{first}" in status["message"] and "team.openclaw.magicstick.local" in status["message"]
    )
    assert status["conflictsWith"] == {"kind": "AppInstance", "namespace": "ai-system", "name": first}
    assert objects_of(result, second) == {}
    assert instance_status(result, first)["phase"] == "Ready"
    assert _routes_hosts(result, first) >= {"team.openclaw.magicstick.local"}
    assert status_of(result, "Appliance", "local")["instances"]["openclaw"]["team"]["phase"] == "Ready"


def _running_under_the_old_scheme(*instances: dict) -> list[dict]:
    """What each instance, alone, runs once converged, released as its object's name (before
    release names were `<application>-<instance name>`)."""
    running = []
    for obj in (o for i in instances for o in converged(*platform("openclaw"), i)):
        if obj.get("kind") == "HelmRelease":
            obj["spec"]["releaseName"] = obj["metadata"]["name"]
        if obj.get("kind") in ("HelmRelease", "HTTPRoute", "SecurityPolicy", "ReferenceGrant"):
            running.append(obj)
    return running


def test_an_existing_collision_leaves_the_later_instances_release_running_but_takes_its_routes_off_the_contested_hostname():
    earlier = instance("a-claw", "openclaw", {"name": "team"}, created=EARLY)
    later = instance("b-claw", "openclaw", {"name": "team"}, created=LATE)
    result = plan_of(*converged(*platform("openclaw"), earlier, later, *_running_under_the_old_scheme(earlier, later)))
    assert instance_status(result, "a-claw")["phase"] == "Ready"
    assert helm_release_of(result, "a-claw").body["spec"]["releaseName"] == "a-claw"
    assert instance_status(result, "b-claw")["reason"] == "HostnameConflict"
    kept = objects_of(result, "b-claw")
    assert [(r.name, r.body["spec"]["releaseName"]) for r in kept["HelmRelease"]] == [("b-claw", "b-claw")]
    assert [r.name for r in kept["HTTPRoute"]] == ["b-claw-callback"]


def test_a_name_whose_release_already_runs_stays_with_that_instance_even_against_an_earlier_one():
    earlier = instance("a-claw", "openclaw", {"name": "team"}, created=EARLY)
    later = instance("b-claw", "openclaw", {"name": "team"}, created=LATE)
    running = [
        o
        for o in converged(*platform("openclaw"), later)
        if o.get("kind") in ("HelmRelease", "HTTPRoute", "SecurityPolicy", "ReferenceGrant")
    ]
    result = plan_of(*converged(*platform("openclaw"), earlier, later, *running))
    status = instance_status(result, "a-claw")
    assert (status["phase"], status["reason"]) == ("Conflict", "ReleaseNameConflict")
    assert (
        "Helm release ai/openclaw-team is held by AppInstance ai-system/b-claw, whose objects already hold it"
        in status["message"]
    )
    assert instance_status(result, "b-claw")["phase"] == "Ready"
    assert objects_of(result, "a-claw") == {}


def test_a_new_instance_whose_release_name_an_existing_release_already_holds_gets_a_conflict():
    holder = instance("holder", "openclaw", {"name": "other"}, created=LATE)
    held = observed_release(helm_release_of(plan_of(*platform("openclaw"), holder), "holder"))
    held["spec"]["releaseName"] = "openclaw-team"
    newcomer = instance("newcomer", "openclaw", {"name": "team"}, created=EARLY)
    result = plan_of(*converged(*platform("openclaw"), holder, held, newcomer))
    status = instance_status(result, "newcomer")
    assert (status["phase"], status["reason"]) == ("Conflict", "ReleaseNameConflict")
    assert "AppInstance ai-system/holder" in status["message"]
    assert helm_release_of(result, "holder").body["spec"]["releaseName"] == "openclaw-team"
    assert objects_of(result, "newcomer") == {}
