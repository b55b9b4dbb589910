"""The access guard, its grants, the EnvoyProxy filter order and the settings that shape the
SecurityPolicies (issue #13)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml

from planning.access_settings import AccessSettings
from planning.frozen import thaw
from planning.instances.access import ID_TOKEN_HEADER, IDENTITY_HEADERS
from planning.instances.guard import ENVOY_PROXY_CRD, GRANTS_CONFIG_MAP, grant_key
from planning.settings import PlanSettings
from tests.planning.builders import SETTINGS, accepted_policy, crd, plan_of, running_guard, status_of
from tests.planning.instances.scene import converged, instance, objects_of, platform
from tests.support.crd_schema import upstream_registry
from tests.support.vendored import REPOSITORY_ROOT

NAME = "openclaw-default"


def guard_of(result, kind: str) -> dict:
    return thaw(next(o for o in result.instances.guard if o.kind == kind).body)


def grants_of(result) -> dict:
    return {key: json.loads(value) for key, value in guard_of(result, "ConfigMap")["data"].items()}


def policy_of(result, name: str = NAME) -> dict:
    return thaw(objects_of(result, name)["SecurityPolicy"][0].body)


def test_no_guard_is_declared_while_no_instance_has_gateway_objects():
    assert plan_of(*platform("openclaw")).instances.guard == ()


def test_an_instance_brings_the_guard_its_service_disruption_budget_network_policy_and_grants_beside_the_gateway():
    result = plan_of(*platform("openclaw"), instance(NAME, "openclaw"))
    kinds = sorted(o.kind for o in result.instances.guard)
    assert kinds == ["ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service"]
    assert {o.namespace for o in result.instances.guard} == {SETTINGS.access.gateway_namespace}
    assert guard_of(result, "ConfigMap")["metadata"]["name"] == GRANTS_CONFIG_MAP


def test_the_guard_pod_is_non_root_with_a_read_only_root_filesystem_and_no_service_account_token():
    pod = guard_of(plan_of(*platform("openclaw"), instance(NAME, "openclaw")), "Deployment")["spec"]["template"]["spec"]
    context = pod["containers"][0]["securityContext"]
    assert pod["automountServiceAccountToken"] is False
    assert context["runAsNonRoot"] is True and context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False and context["capabilities"] == {"drop": ["ALL"]}
    assert pod["volumes"] == [{"name": "grants", "configMap": {"name": GRANTS_CONFIG_MAP}}]


class TestOnlyTheEnvoyProxiesReachTheGuard:
    @pytest.fixture
    def result(self):
        return plan_of(*platform("openclaw"), instance(NAME, "openclaw"))

    def test_the_policy_isolates_exactly_the_guard_pods_for_ingress(self, result):
        policy = guard_of(result, "NetworkPolicy")["spec"]
        pods = guard_of(result, "Deployment")["spec"]["template"]["metadata"]["labels"]

        assert policy["policyTypes"] == ["Ingress"]
        assert policy["podSelector"] == {"matchLabels": pods}
        assert guard_of(result, "NetworkPolicy")["metadata"]["namespace"] == SETTINGS.access.gateway_namespace

    def test_its_one_rule_admits_only_the_shared_gateways_envoy_proxy_pods_on_the_guard_port(self, result):
        (rule,) = guard_of(result, "NetworkPolicy")["spec"]["ingress"]
        (peer,) = rule["from"]
        (container,) = guard_of(result, "Deployment")["spec"]["template"]["spec"]["containers"]

        assert rule["ports"] == [{"protocol": "TCP", "port": container["ports"][0]["containerPort"]}]
        assert peer["podSelector"]["matchLabels"] == {
            "app.kubernetes.io/name": "envoy",
            "app.kubernetes.io/component": "proxy",
            "app.kubernetes.io/managed-by": "envoy-gateway",
            "gateway.envoyproxy.io/owning-gateway-name": SETTINGS.access.gateway_name,
            "gateway.envoyproxy.io/owning-gateway-namespace": SETTINGS.access.gateway_namespace,
        }

    def test_the_proxies_are_admitted_from_envoy_gateways_namespace_as_installed_and_from_the_gateway_namespace(
        self, result
    ):
        (rule,) = guard_of(result, "NetworkPolicy")["spec"]["ingress"]
        (peer,) = rule["from"]
        (installed,) = [
            d
            for d in yaml.safe_load_all(
                (REPOSITORY_ROOT / "magic-cluster/platform/basis/envoy-gateway.yaml").read_text()
            )
            if d["kind"] == "HelmRelease"
        ]

        assert peer["namespaceSelector"] == {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "In",
                    "values": sorted({installed["spec"]["targetNamespace"], SETTINGS.access.gateway_namespace}),
                }
            ]
        }

    def test_the_guard_port_setting_moves_the_admitted_port_with_the_container(self):
        settings = replace(SETTINGS, access=replace(SETTINGS.access, guard_port=9443))
        result = plan_of(*platform("openclaw"), instance(NAME, "openclaw"), settings=settings)

        (rule,) = guard_of(result, "NetworkPolicy")["spec"]["ingress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": 9443}]


@pytest.mark.parametrize(
    ("access", "expected"),
    [
        ({}, {"authentication": "sso", "minimumRole": "user", "sharing": {"mode": "all"}}),
        ({"role": "operator"}, {"authentication": "sso", "minimumRole": "operator", "sharing": {"mode": "all"}}),
        (
            {"sharing": {"mode": "selected", "users": ["bob", "alice"], "groups": ["ops"]}},
            {
                "authentication": "sso",
                "minimumRole": "user",
                "sharing": {"mode": "selected", "users": ["alice", "bob"], "groups": ["ops"]},
            },
        ),
        (
            {"sharing": {"mode": "selected"}},
            {
                "authentication": "sso",
                "minimumRole": "user",
                "sharing": {"mode": "selected", "users": [], "groups": []},
            },
        ),
        ({"authentication": "none"}, {"authentication": "none", "minimumRole": "user", "sharing": {"mode": "all"}}),
    ],
    ids=["default", "minimum-role", "selected-users-and-groups", "empty-selection", "authentication-none"],
)
def test_each_instance_has_one_grant_with_its_authentication_role_sharing_and_claim_names(access, expected):
    result = plan_of(*platform("openclaw"), instance(NAME, "openclaw", access=access))
    grant = grants_of(result)[grant_key("ai-system", NAME)]
    assert {key: grant[key] for key in expected} == expected
    assert grant["instance"] == f"ai-system/{NAME}"
    assert grant["claims"] == {"subject": "sub", "roles": "roles", "groups": "groups"}


def test_no_route_gets_a_backend_while_the_guard_has_not_rolled_out_even_with_accepted_policies():
    first = plan_of(*platform("openclaw"), instance(NAME, "openclaw"))
    policies = [accepted_policy(p) for p in objects_of(first, NAME)["SecurityPolicy"]]
    for guard in (
        [],
        [running_guard(available=0)],
        [running_guard(generation=2) | {"status": {"observedGeneration": 1}}],
    ):
        result = plan_of(*platform("openclaw"), instance(NAME, "openclaw"), *policies, *guard)
        status = status_of(result, "AppInstance", NAME)
        assert status["accessGuardReady"] is False
        assert all(
            "backendRefs" not in rule
            for route in objects_of(result, NAME)["HTTPRoute"]
            for rule in route.body["spec"]["rules"]
        )
    opened = plan_of(*platform("openclaw"), instance(NAME, "openclaw"), *policies, running_guard())
    assert status_of(opened, "AppInstance", NAME)["accessGuardReady"] is True


def test_the_shipped_placeholder_guard_image_keeps_the_routes_closed_and_says_which_setting_to_set():
    world = converged(*platform("openclaw"), instance(NAME, "openclaw"))
    result = plan_of(*world, settings=PlanSettings())
    status = status_of(result, "AppInstance", NAME)
    assert (status["accessGuardReady"], status["reason"]) == (False, "WaitingForAccessGuard")
    assert "magicstick:guardImage" in status["message"]


def test_an_instance_kept_as_last_applied_keeps_its_grant_as_the_cluster_holds_it():
    world = converged(
        *platform("openclaw"), instance(NAME, "openclaw", access={"role": "admin"}), instance("other", "openclaw")
    )
    assert any(o["kind"] == "ConfigMap" and o["metadata"]["name"] == GRANTS_CONFIG_MAP for o in world)
    broken = instance(NAME, "openclaw", access={"role": "nobody"})
    world = [o for o in world if o["metadata"]["name"] != NAME or o["kind"] != "AppInstance"] + [broken]
    result = plan_of(*world)
    assert status_of(result, "AppInstance", NAME)["phase"] == "Failed"
    assert grants_of(result)[grant_key("ai-system", NAME)]["minimumRole"] == "admin"


def test_the_envoy_proxy_runs_external_authorization_after_jwt_verification_and_validates_upstream():
    without = plan_of(*platform("openclaw"), instance(NAME, "openclaw"))
    assert "EnvoyProxy" not in {o.kind for o in without.instances.guard}
    result = plan_of(*platform("openclaw"), instance(NAME, "openclaw"), crd(ENVOY_PROXY_CRD))
    proxy = guard_of(result, "EnvoyProxy")
    assert proxy["spec"]["filterOrder"] == [
        {"name": "envoy.filters.http.ext_authz", "after": "envoy.filters.http.jwt_authn"}
    ]
    assert upstream_registry().errors(proxy) == []


def test_the_policy_sends_the_id_token_to_the_guard_and_its_identity_headers_upstream():
    ext = policy_of(plan_of(*platform("openclaw"), instance(NAME, "openclaw")))["spec"]["extAuth"]
    assert ext["headersToExtAuth"] == [ID_TOKEN_HEADER.lower()]
    assert ext["http"]["headersToBackend"] == list(IDENTITY_HEADERS)
    assert ext["http"]["backendRefs"][0]["namespace"] == SETTINGS.access.gateway_namespace
    assert ext["failOpen"] is False


def test_configured_sign_on_gateway_listener_and_dashboard_hosts_shape_the_policy_and_routes():
    access = replace(
        SETTINGS.access,
        oidc_issuer="https://login.example.com/realms/home",
        oidc_client_id="home-apps",
        oidc_scopes=("openid", "groups"),
        gateway_name="edge",
        gateway_listener="https",
        dashboard_hosts=("portal.example.com",),
    )
    result = plan_of(*platform("openclaw"), instance(NAME, "openclaw"), settings=replace(SETTINGS, access=access))
    policy = policy_of(result)["spec"]
    assert (policy["oidc"]["provider"]["issuer"], policy["oidc"]["clientID"], policy["oidc"]["scopes"]) == (
        "https://login.example.com/realms/home",
        "home-apps",
        ["openid", "groups"],
    )
    assert policy["jwt"]["providers"][0]["audiences"] == ["home-apps"]
    routes = {r.name: thaw(r.body)["spec"] for r in objects_of(result, NAME)["HTTPRoute"]}
    assert all(spec["parentRefs"][0]["sectionName"] == "https" for spec in routes.values())
    assert all(spec["parentRefs"][0]["name"] == "edge" for spec in routes.values())
    callback = next(spec for name, spec in routes.items() if name.endswith("-callback"))
    assert callback["hostnames"] == ["portal.example.com"]
    deployment = guard_of(result, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert "--issuer=https://login.example.com/realms/home" in deployment["args"]
    assert "--audience=home-apps" in deployment["args"]


def test_an_instance_without_sign_in_keeps_the_guard_and_says_so():
    world = converged(*platform("openclaw"), instance(NAME, "openclaw", access={"authentication": "none"}))
    status = status_of(plan_of(*world), "AppInstance", NAME)
    assert status["phase"] == "Ready"
    assert "access guard stays in front" in status["message"]
    assert status["authentication"] == "none"


def test_every_guard_object_is_a_kind_the_program_may_write_in_the_gateway_namespace():
    kinds = {
        (o.api_version, o.kind)
        for o in plan_of(*platform("openclaw"), instance(NAME, "openclaw"), crd(ENVOY_PROXY_CRD)).instances.guard
    }
    assert kinds == {
        ("v1", "ConfigMap"),
        ("v1", "Service"),
        ("apps/v1", "Deployment"),
        ("policy/v1", "PodDisruptionBudget"),
        ("networking.k8s.io/v1", "NetworkPolicy"),
        ("gateway.envoyproxy.io/v1alpha1", "EnvoyProxy"),
    }
    assert AccessSettings().guard_image.endswith(":CHANGEME")
