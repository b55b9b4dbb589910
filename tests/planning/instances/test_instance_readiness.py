"""An instance is Ready only when its release is Ready and its routes reach it now.

Ready = HelmRelease Ready for its generation + access guard accepted (accessGuardReady) + every
route the one planned now (with its backend) and accepted by its Gateway for its generation.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.planning.builders import ENVOY_GATEWAY_CONTROLLER, GATEWAY_REF, accepted_route, condition, plan_of, status_of
from tests.planning.instances.scene import converged, instance, instance_status, objects_of, platform

NAME = "openclaw-default"
World = list[dict]


def _ready_world(**spec) -> World:
    return converged(*platform("openclaw"), instance(NAME, "openclaw", **spec))


def _replace(world: World, kind: str, change: Callable[[dict], dict | None]) -> World:
    changed = [change(o) if o.get("kind") == kind else o for o in world]
    return [o for o in changed if o is not None]


def _routes_planned_before_the_guard_opened(world: World) -> World:
    closed = objects_of(plan_of(*platform("openclaw"), instance(NAME, "openclaw")), NAME)["HTTPRoute"]
    return [*(o for o in world if o.get("kind") != "HTTPRoute"), *(accepted_route(r) for r in closed)]


def _older_generation(obj: dict) -> dict:
    obj["metadata"]["generation"] = 2
    return obj


def _parents(*conditions: dict) -> Callable[[dict], dict]:
    def change(route: dict) -> dict:
        route["status"] = {
            "parents": [
                {
                    "parentRef": dict(GATEWAY_REF),
                    "controllerName": ENVOY_GATEWAY_CONTROLLER,
                    "conditions": list(conditions),
                }
            ]
        }
        return route

    return change


def _rejected_policy(policy: dict) -> dict:
    ancestor = policy["status"]["ancestors"][0]
    ancestor["conditions"] = [
        condition("Accepted", "False", reason="Invalid", message="oidc provider unreachable", observed_generation=1)
    ]
    return policy


ACCEPTED = condition("Accepted", "True", reason="Accepted", message="Route is accepted", observed_generation=1)


@pytest.mark.parametrize(
    ("change", "phase", "reason", "says"),
    [
        (lambda w: w, "Ready", "Ready", "OpenClaw instance is ready."),
        (
            lambda w: _replace(w, "SecurityPolicy", lambda o: None),
            "Reconciling",
            "WaitingForAccessGuard",
            "access guard",
        ),
        (
            lambda w: _replace(w, "SecurityPolicy", _older_generation),
            "Reconciling",
            "WaitingForAccessGuard",
            "generation 2 not observed yet",
        ),
        (
            lambda w: _replace(w, "SecurityPolicy", _rejected_policy),
            "Degraded",
            "AccessGuardRejected",
            "oidc provider unreachable",
        ),
        (lambda w: _replace(w, "HTTPRoute", lambda o: None), "Reconciling", "WaitingForRoutes", "not found"),
        (_routes_planned_before_the_guard_opened, "Reconciling", "WaitingForRoutes", "not the planned"),
        (
            lambda w: _replace(w, "HTTPRoute", _older_generation),
            "Reconciling",
            "WaitingForRoutes",
            "generation 2 not observed yet",
        ),
        (
            lambda w: _replace(
                w,
                "HTTPRoute",
                _parents(
                    ACCEPTED,
                    condition(
                        "ResolvedRefs",
                        "False",
                        reason="BackendNotFound",
                        message="service ai/openclaw-default not found",
                        observed_generation=1,
                    ),
                ),
            ),
            "Reconciling",
            "WaitingForRoutes",
            "service ai/openclaw-default not found",
        ),
        (
            lambda w: _replace(
                w,
                "HTTPRoute",
                _parents(
                    condition(
                        "Accepted",
                        "False",
                        reason="NotAllowedByListeners",
                        message="no listener matches",
                        observed_generation=1,
                    )
                ),
            ),
            "Degraded",
            "RouteRejected",
            "no listener matches",
        ),
    ],
    ids=[
        "release-guard-and-routes-ready",
        "guard-policy-not-created-yet",
        "guard-accepted-for-an-older-generation",
        "guard-rejected",
        "routes-not-created-yet",
        "routes-still-without-their-backend",
        "routes-accepted-for-an-older-generation",
        "route-backend-not-resolved",
        "route-rejected",
    ],
)
def test_an_instance_with_a_ready_release_is_ready_only_when_its_guard_and_routes_are(change, phase, reason, says):
    result = plan_of(*change(_ready_world()))
    status = instance_status(result, NAME)
    assert (status["phase"], status["reason"]) == (phase, reason)
    assert says in status["message"]
    assert status["conditions"][0]["status"] == ("True" if phase == "Ready" else "False")
    assert status_of(result, "Appliance", "local")["instances"]["openclaw"]["default"]["phase"] == phase


def test_an_instance_whose_guard_is_not_accepted_is_not_ready_even_with_authentication_none():
    world = _replace(_ready_world(access={"authentication": "none"}), "SecurityPolicy", lambda o: None)
    status = instance_status(plan_of(*world), NAME)
    assert (status["phase"], status["reason"], status["accessGuardReady"]) == (
        "Reconciling",
        "WaitingForAccessGuard",
        False,
    )
    assert status["authentication"] == "none"


def test_the_url_uses_https_as_the_gateway_serves_the_instance():
    result = plan_of(*_ready_world())
    assert instance_status(result, NAME)["url"] == "https://default.openclaw.magicstick.local/"
    assert (
        status_of(result, "Appliance", "local")["instances"]["openclaw"]["default"]["url"]
        == "https://default.openclaw.magicstick.local/"
    )


def test_accepted_policies_without_accepted_routes_report_the_guard_ready_but_not_the_instance():
    status = instance_status(plan_of(*_replace(_ready_world(), "HTTPRoute", lambda o: None)), NAME)
    assert (status["accessGuardReady"], status["phase"], status["reason"]) == (True, "Reconciling", "WaitingForRoutes")
