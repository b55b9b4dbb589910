"""App instances: HelmReleases, hostnames, access guard, status and removal."""

from __future__ import annotations

import pytest

from planning.frozen import thaw
from planning.readiness import SPEC_HASH_ANNOTATION, spec_hash
from tests.planning.builders import (
    CATALOGS,
    accepted_policy,
    activation,
    as_stored,
    observed_release,
    plan_of,
    running_guard,
    status_of,
)
from tests.planning.instances.scene import PAPERCLIP_VALUES, converged, helm_release_of, instance, objects_of, platform
from tests.support.crd_schema import upstream_registry


def release_observed(application: str, name: str, ready: str | None = "True", **observed) -> dict:
    """The HelmRelease planned for instance `name`, as the cluster returns it (see observed_release)."""
    planned = helm_release_of(plan_of(*platform(application), instance(name, application)), name)
    return observed_release(planned, ready, **observed)


def ready_release(
    name: str, status: str = "True", reason: str = "InstallSucceeded", message: str = "Helm install succeeded"
) -> dict:
    return release_observed("openclaw", name, status, reason=reason, message=message)


def policies_of(result, name: str) -> list:
    return objects_of(result, name)["SecurityPolicy"]


def guard_ready(*objects: dict) -> bool:
    result = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw"), running_guard(), *objects)
    return status_of(result, "AppInstance", "openclaw-default")["accessGuardReady"]


def planned_policy():
    (policy,) = policies_of(
        plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw")), "openclaw-default"
    )
    return policy


def test_an_instance_gets_one_helm_release_in_the_system_namespace_targeting_its_namespace():
    result = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw"))
    release = thaw(helm_release_of(result, "openclaw-default").body)
    assert release["metadata"]["namespace"] == "ai-system"
    assert release["spec"]["targetNamespace"] == "ai"
    chart = release["spec"]["chart"]["spec"]
    assert chart["chart"] == CATALOGS.applications.get("openclaw").chart
    assert chart["sourceRef"] == {"kind": "GitRepository", "name": "magicstick-public", "namespace": "flux-system"}
    assert upstream_registry().errors(release) == []


def test_paperclip_values_reach_the_release_with_agent_execution():
    result = plan_of(*platform("paperclip"), instance("paperclip-default", "paperclip", PAPERCLIP_VALUES))
    assert thaw(helm_release_of(result, "paperclip-default").body["spec"]["values"]) == PAPERCLIP_VALUES


def test_a_disabled_required_module_is_never_overridden_and_no_release_is_created():
    result = plan_of(
        *platform("openclaw"), activation("openclaw-operator", enabled=False), instance("openclaw-default", "openclaw")
    )
    assert objects_of(result, "openclaw-default") == {}
    status = status_of(result, "AppInstance", "openclaw-default")
    assert status["phase"] == "WaitingForModules"
    assert "openclaw-operator" in status["message"]


def test_a_missing_crd_waits_and_creates_no_release():
    result = plan_of(*platform("openclaw", crds=False), instance("openclaw-default", "openclaw"))
    assert objects_of(result, "openclaw-default") == {}
    status = status_of(result, "AppInstance", "openclaw-default")
    assert status["phase"] == "WaitingForCRD"
    assert "httproutes.gateway.networking.k8s.io" in status["message"]


def test_defaults_are_namespace_ai_single_sign_on_role_user_and_both_hostnames():
    result = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw"))
    status = status_of(result, "AppInstance", "openclaw-default")
    assert status["namespace"] == "ai"
    assert status["authentication"] == "sso"
    assert status["url"] == "https://default.openclaw.magicstick.local/"
    hosts = {
        h for route in objects_of(result, "openclaw-default")["HTTPRoute"] for h in route.body["spec"]["hostnames"]
    }
    assert {"default.openclaw.magicstick.local", "default.openclaw.magicstick.example.com"} <= hosts


def test_exposure_local_omits_the_public_hostname():
    result = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw", access={"exposure": "local"}))
    hosts = {
        h for route in objects_of(result, "openclaw-default")["HTTPRoute"] for h in route.body["spec"]["hostnames"]
    }
    assert "default.openclaw.magicstick.example.com" not in hosts
    assert "default.openclaw.magicstick.local" in hosts


def test_routes_have_no_backend_until_the_guard_policies_are_accepted():
    first = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw"))
    routes = objects_of(first, "openclaw-default")["HTTPRoute"]
    assert all("backendRefs" not in rule for route in routes for rule in route.body["spec"]["rules"])
    assert status_of(first, "AppInstance", "openclaw-default")["accessGuardReady"] is False

    policies = [accepted_policy(p) for p in objects_of(first, "openclaw-default")["SecurityPolicy"]]
    second = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw"), *policies, running_guard())
    assert status_of(second, "AppInstance", "openclaw-default")["accessGuardReady"] is True
    backends = [
        ref
        for route in objects_of(second, "openclaw-default")["HTTPRoute"]
        for rule in route.body["spec"]["rules"]
        for ref in rule.get("backendRefs", ())
    ]
    assert backends and all(ref["port"] == CATALOGS.applications.get("openclaw").backend_port for ref in backends)


def test_a_policy_the_server_filled_with_its_crd_defaults_opens_the_routes_once_its_generation_is_accepted():
    observed = accepted_policy(planned_policy())
    assert observed["spec"] != thaw(planned_policy().body["spec"])
    assert observed["metadata"]["annotations"][SPEC_HASH_ANNOTATION] == spec_hash(planned_policy().body["spec"])
    assert guard_ready(observed) is True


def _with_older_spec_hash(observed: dict) -> dict:
    observed["metadata"]["annotations"][SPEC_HASH_ANNOTATION] = spec_hash({**observed["spec"], "targetRefs": []})
    return observed


def _without_spec_hash(observed: dict) -> dict:
    del observed["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
    return observed


@pytest.mark.parametrize(
    ("options", "change"),
    [
        ({}, _with_older_spec_hash),
        ({}, _without_spec_hash),
        ({"generation": 2, "observed_generation": 1}, lambda o: o),
        ({"accepted": "False", "reason": "Invalid", "message": "oidc provider unreachable"}, lambda o: o),
    ],
    ids=["accepted-for-an-older-spec", "without-the-spec-hash", "accepted-for-an-older-generation", "rejected"],
)
def test_the_routes_stay_closed_until_the_current_policy_is_accepted(options, change):
    observed = change(accepted_policy(planned_policy(), **options))
    result = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw"), observed, running_guard())
    assert status_of(result, "AppInstance", "openclaw-default")["accessGuardReady"] is False
    assert all(
        "backendRefs" not in rule
        for route in objects_of(result, "openclaw-default")["HTTPRoute"]
        for rule in route.body["spec"]["rules"]
    )


def test_hermes_routes_reach_its_dashboard_port():
    first = plan_of(*platform("hermes"), instance("hermes-default", "hermes"))
    policies = [accepted_policy(p) for p in objects_of(first, "hermes-default")["SecurityPolicy"]]
    result = plan_of(*platform("hermes"), instance("hermes-default", "hermes"), *policies, running_guard())
    ports = {
        ref["port"]
        for route in objects_of(result, "hermes-default")["HTTPRoute"]
        for rule in route.body["spec"]["rules"]
        for ref in rule.get("backendRefs", ())
    }
    assert ports == {9119}


def test_the_instance_is_ready_when_its_helm_release_guard_and_routes_are_and_reports_it_in_the_appliance():
    result = plan_of(*converged(*platform("openclaw"), instance("openclaw-default", "openclaw")))
    status = status_of(result, "AppInstance", "openclaw-default")
    assert (status["phase"], status["accessGuardReady"]) == ("Ready", True)
    assert (status["kind"], status["name"], status["namespace"]) == ("OpenClawInstance", "default", "ai")
    assert (status["releaseName"], status["backendService"]) == ("openclaw-default", "ai/openclaw-default")
    summary = status_of(result, "Appliance", "local")["instances"]["openclaw"]["default"]
    assert summary == {
        "phase": "Ready",
        "namespace": "ai",
        "kind": "OpenClawInstance",
        "name": "default",
        "url": "https://default.openclaw.magicstick.local/",
        "message": status["message"],
    }


def test_a_failed_helm_release_makes_the_instance_degraded_with_its_message():
    failing = ready_release("openclaw-default", "False", "InstallFailed", "chart render failed")
    status = status_of(
        plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw"), failing),
        "AppInstance",
        "openclaw-default",
    )
    assert status["phase"] == "Degraded"
    assert "chart render failed" in status["message"]


def test_a_helm_release_ready_for_an_older_generation_leaves_the_instance_reconciling():
    stale = release_observed("openclaw", "openclaw-default", generation=2, observed_generation=1)
    result = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw"), stale)
    status = status_of(result, "AppInstance", "openclaw-default")
    assert (status["phase"], status["reason"]) == ("Reconciling", "Reconciling")
    assert status["conditions"][0]["status"] == "False"
    assert status_of(result, "Appliance", "local")["phase"] != "Ready"


def test_a_helm_release_the_server_just_created_leaves_the_instance_reconciling():
    created = release_observed("openclaw", "openclaw-default", None)
    assert created["status"] == {"observedGeneration": -1}
    status = status_of(
        plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw"), created),
        "AppInstance",
        "openclaw-default",
    )
    assert status["phase"] == "Reconciling"


def test_authentication_none_is_honoured_only_when_explicit_and_the_status_says_so():
    result = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw", access={"authentication": "none"}))
    status = status_of(result, "AppInstance", "openclaw-default")
    assert status["authentication"] == "none"
    assert "explicitly" in status["unauthenticated"]
    default = status_of(
        plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw")), "AppInstance", "openclaw-default"
    )
    assert default["authentication"] == "sso" and "unauthenticated" not in default


def test_a_disabled_instance_has_no_release_and_no_gateway_objects():
    result = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw", enabled=False))
    assert objects_of(result, "openclaw-default") == {}
    assert status_of(result, "AppInstance", "openclaw-default")["phase"] == "Disabled"


def test_an_invalid_edit_keeps_the_release_as_it_was():
    observed = ready_release("openclaw-default")
    observed["spec"] = {
        "interval": "10m0s",
        "chart": {"spec": {"chart": "./kept", "sourceRef": {"kind": "GitRepository", "name": "flux-system"}}},
    }
    observed = as_stored(observed)
    assert observed["spec"]["chart"]["spec"]["version"] == "*"
    broken = instance("openclaw-default", "openclaw", access={"role": "superuser"})
    result = plan_of(*platform("openclaw"), broken, observed)
    assert thaw(helm_release_of(result, "openclaw-default").body["spec"]) == observed["spec"]
    assert status_of(result, "AppInstance", "openclaw-default")["reason"] == "InvalidSpec"


def test_every_rendered_gateway_object_validates_against_the_upstream_schemas():
    result = plan_of(*platform("paperclip"), instance("paperclip-default", "paperclip", PAPERCLIP_VALUES))
    for objects in objects_of(result, "paperclip-default").values():
        for obj in objects:
            assert upstream_registry().errors(thaw(obj.body)) == [], obj.identity


def test_the_appliance_waits_for_its_instances_once_its_modules_are_ready():
    result = plan_of(*platform("openclaw"), instance("openclaw-default", "openclaw"))
    condition = status_of(result, "Appliance", "local")["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "WaitingForInstances")
    assert condition["message"] == "Waiting for openclaw/default to become ready."
    ready = plan_of(*converged(*platform("openclaw"), instance("openclaw-default", "openclaw")))
    assert status_of(ready, "Appliance", "local")["phase"] == "Ready"
