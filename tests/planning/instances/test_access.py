"""Gateway access to an instance: hostnames, roles, sharing, fail-closed routes, policies."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from planning.frozen import thaw
from planning.instances.access import (
    ID_TOKEN_HEADER,
    UNAUTHENTICATED_ANNOTATION,
    AccessSettings,
    InstanceAccess,
    access_objects,
    allowed_roles,
    hostnames,
)
from planning.labels import FIELD_MANAGER_ANNOTATION
from planning.readiness import SPEC_HASH_ANNOTATION, spec_hash
from services.access_guard.settings import DEFAULT_IDLE_TIMEOUT_SECONDS
from tests.planning.builders import CATALOGS, access_for
from tests.support.crd_schema import upstream_registry
from tests.support.hash_seeds import digest, digests_under_hash_seeds

SETTINGS = AccessSettings()
FIELD_MANAGER = "magicstick"
DOMAIN = "magicstick.example.com"
LOCAL_DOMAIN = "magicstick.local"


def objects(access: InstanceAccess) -> list[dict[str, Any]]:
    return [thaw(obj.body) for obj in access_objects(access, SETTINGS, field_manager=FIELD_MANAGER)]


def of_kind(access: InstanceAccess, kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects(access) if obj["kind"] == kind]


def route(access: InstanceAccess, suffix: str) -> dict[str, Any]:
    (found,) = [r for r in of_kind(access, "HTTPRoute") if r["metadata"]["name"].endswith(f"-{suffix}")]
    return found


def policy(access: InstanceAccess) -> dict[str, Any]:
    (found,) = of_kind(access, "SecurityPolicy")
    return found["spec"]


def allow_rules(access: InstanceAccess) -> list[list[dict[str, Any]]]:
    """The claims of every Allow rule, one list per rule."""
    authorization = policy(access)["authorization"]
    assert authorization["defaultAction"] == "Deny"
    return [rule["principal"]["jwt"]["claims"] for rule in authorization.get("rules", ()) if rule["action"] == "Allow"]


def claim(name: str, values: list[str], value_type: str = "StringArray") -> dict[str, Any]:
    return {"name": name, "valueType": value_type, "values": values}


USER_OR_HIGHER = claim("roles", ["admin", "operator", "user"])


# Hostnames


@pytest.mark.parametrize(
    ("exposure", "expected"),
    [
        ("localAndPublic", ("default.openclaw.magicstick.local", "default.openclaw.magicstick.example.com")),
        ("local", ("default.openclaw.magicstick.local", None)),
    ],
)
def test_hostnames_are_derived_from_instance_application_and_domains(exposure, expected):
    assert (
        hostnames(
            instance_name="default", application="openclaw", domain=DOMAIN, local_domain=LOCAL_DOMAIN, exposure=exposure
        )
        == expected
    )


def test_an_unknown_exposure_is_refused():
    with pytest.raises(ValueError, match="exposure"):
        hostnames(
            instance_name="default", application="openclaw", domain=DOMAIN, local_domain=LOCAL_DOMAIN, exposure="public"
        )


def test_each_application_route_serves_its_own_derived_host():
    access = access_for()
    assert route(access, "local")["spec"]["hostnames"] == ["default.openclaw.magicstick.local"]
    assert route(access, "public")["spec"]["hostnames"] == ["default.openclaw.magicstick.example.com"]


def test_exposure_local_creates_no_public_route_and_the_policy_does_not_target_one():
    access = access_for(exposure="local")
    names = [r["metadata"]["name"] for r in of_kind(access, "HTTPRoute")]
    assert names == ["openclaw-default-local", "openclaw-default-callback"]
    assert all(
        DOMAIN not in host
        for r in of_kind(access, "HTTPRoute")
        if not r["metadata"]["name"].endswith("-callback")
        for host in r["spec"]["hostnames"]
    )
    assert [ref["name"] for ref in policy(access)["targetRefs"]] == names


# Roles and sharing


@pytest.mark.parametrize(
    ("minimum", "allowed"),
    [
        ("viewer", ("admin", "operator", "user", "viewer")),
        ("user", ("admin", "operator", "user")),
        ("operator", ("admin", "operator")),
        ("admin", ("admin",)),
    ],
)
def test_a_minimum_role_allows_exactly_itself_and_every_higher_role(minimum, allowed):
    assert allowed_roles(minimum) == allowed


def test_an_unknown_role_is_refused():
    with pytest.raises(ValueError, match="role"):
        allowed_roles("superuser")


@pytest.mark.parametrize("minimum", ["viewer", "user", "operator", "admin"])
def test_without_sharing_one_rule_allows_the_inherited_roles_and_everything_else_is_denied(minimum):
    assert allow_rules(access_for(role=minimum)) == [[claim("roles", list(allowed_roles(minimum)))]]


def test_sharing_mode_all_keeps_role_based_access():
    assert allow_rules(access_for(sharing_mode="all")) == [[USER_OR_HIGHER]]


@pytest.mark.parametrize(
    ("users", "groups", "expected"),
    [
        (("u-2", "u-1"), (), [[claim("sub", ["u-1", "u-2"], "String"), USER_OR_HIGHER]]),
        ((), ("g-1",), [[claim("groups", ["g-1"]), USER_OR_HIGHER]]),
        (
            ("u-1",),
            ("g-1",),
            [[claim("sub", ["u-1"], "String"), USER_OR_HIGHER], [claim("groups", ["g-1"]), USER_OR_HIGHER]],
        ),
    ],
    ids=["users", "groups", "users-and-groups"],
)
def test_selected_sharing_allows_only_listed_principals_who_also_hold_an_allowed_role(users, groups, expected):
    assert allow_rules(access_for(sharing_mode="selected", users=users, groups=groups)) == expected


def test_an_empty_selection_has_no_allow_rule_and_denies_everyone():
    authorization = policy(access_for(sharing_mode="selected"))["authorization"]
    assert authorization == {"defaultAction": "Deny"}


@pytest.mark.parametrize(
    "overrides",
    [
        {"authentication": "none", "sharing_mode": "selected", "users": ("u-1",)},
        {"sharing_mode": "all", "users": ("u-1",)},
        {"sharing_mode": None, "groups": ("g-1",)},
        {"role": "superuser"},
        {"dashboard_hosts": ()},
    ],
    ids=["selected-without-sso", "lists-with-mode-all", "lists-without-sharing", "unknown-role", "no-dashboard-host"],
)
def test_contradictory_access_inputs_are_refused(overrides):
    with pytest.raises(ValueError):
        access_for(**overrides)


# Failing closed and reaching the backend


def test_no_route_has_a_backend_until_the_guard_is_ready():
    for r in of_kind(access_for(guard_ready=False), "HTTPRoute"):
        assert all("backendRefs" not in rule for rule in r["spec"]["rules"]), r["metadata"]["name"]


@pytest.mark.parametrize("application", ["openclaw", "hermes", "paperclip", "kubeopencode", "odysseus"])
def test_once_the_guard_is_ready_every_route_reaches_the_instance_service_at_its_catalog_port(application):
    entry = CATALOGS.applications.get(application)
    expected = [
        {
            "group": "",
            "kind": "Service",
            "name": entry.backend_service_for("default"),
            "namespace": "ai",
            "port": entry.backend_port,
        }
    ]
    for r in of_kind(access_for(application, guard_ready=True), "HTTPRoute"):
        assert [rule["backendRefs"] for rule in r["spec"]["rules"]] == [expected], r["metadata"]["name"]


def test_hermes_browser_routes_reach_the_dashboard_port_not_the_in_cluster_gateway_port():
    ports = {
        ref["port"]
        for r in of_kind(access_for("hermes", guard_ready=True), "HTTPRoute")
        for rule in r["spec"]["rules"]
        for ref in rule["backendRefs"]
    }
    assert ports == {9119}


def test_the_security_policy_does_not_change_when_the_guard_becomes_ready():
    assert policy(access_for(guard_ready=False)) == policy(access_for(guard_ready=True))


def test_routes_live_in_the_gateway_namespace_and_attach_to_the_shared_gateway():
    for r in of_kind(access_for(), "HTTPRoute"):
        assert r["metadata"]["namespace"] == "ai-system"
        assert r["spec"]["parentRefs"] == [
            {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "magicstick", "namespace": "ai-system"}
        ]


# Timeouts and the callback route


@pytest.mark.parametrize("suffix", ["local", "public"])
def test_application_routes_match_every_path_without_a_total_request_timeout(suffix):
    (rule,) = route(access_for(), suffix)["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
    assert rule["timeouts"] == {"request": "0s"}


def test_the_callback_route_is_an_exact_instance_path_on_the_dashboard_hosts_with_a_bounded_timeout():
    callback = route(access_for(), "callback")
    assert callback["spec"]["hostnames"] == ["dashboard.magicstick.local", "dashboard.magicstick.example.com"]
    (rule,) = callback["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "Exact", "value": "/oauth2/openclaw/openclaw-default/callback"}}]
    assert rule["timeouts"] == {"request": "15s"}


# ReferenceGrant


def test_the_reference_grant_lets_gateway_routes_reach_only_the_instance_service():
    (grant,) = of_kind(access_for(), "ReferenceGrant")
    assert grant["metadata"]["namespace"] == "ai"
    assert grant["spec"] == {
        "from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "ai-system"}],
        "to": [{"group": "", "kind": "Service", "name": "default"}],
    }


def test_an_instance_in_the_gateway_namespace_needs_no_reference_grant():
    assert of_kind(access_for(namespace="ai-system"), "ReferenceGrant") == []


# The SecurityPolicy


def test_one_security_policy_covers_every_route_of_the_instance():
    access = access_for()
    (found,) = of_kind(access, "SecurityPolicy")
    assert found["metadata"]["namespace"] == "ai-system"
    assert found["spec"]["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name}
        for name in ("openclaw-default-local", "openclaw-default-public", "openclaw-default-callback")
    ]


@pytest.mark.parametrize("authentication", ["sso", "none"])
def test_the_fail_closed_guard_names_the_instance_whatever_the_authentication(authentication):
    guard = policy(access_for(authentication=authentication))["extAuth"]
    assert guard["failOpen"] is False
    assert guard["http"]["backendRefs"] == [
        {"group": "", "kind": "Service", "name": "magicstick-access-guard", "namespace": "ai-system", "port": 8080}
    ]
    assert guard["http"]["path"] == "/instances/ai-system/openclaw-default"


def test_envoy_closes_an_idle_connection_to_the_guard_before_the_guard_would():
    """The guard closes connections idle for --idle-timeout-seconds; a check Envoy sent on one at
    that moment would fail (and deny). Envoy's own idle timeout is shorter, so it never does."""
    guard = policy(access_for())["extAuth"]["http"]
    envoy_idle = guard["backendSettings"]["timeout"]["http"]["connectionIdleTimeout"]

    assert envoy_idle.endswith("s") and float(envoy_idle.removesuffix("s")) < DEFAULT_IDLE_TIMEOUT_SECONDS


def test_single_sign_on_uses_the_shared_client_and_returns_to_the_instance_callback_path():
    oidc = policy(access_for())["oidc"]
    assert oidc["provider"]["issuer"] == SETTINGS.oidc_issuer
    assert oidc["clientID"] == "magicstick-apps"
    assert oidc["clientSecret"]["name"] == "magicstick-oidc-client"
    assert oidc["redirectURL"] == "https://%REQ(:authority)%/oauth2/openclaw/openclaw-default/callback"
    assert oidc["logoutPath"] == "/oauth2/openclaw/openclaw-default/logout"


def test_the_provider_endpoints_are_explicit_so_envoy_gateway_needs_no_discovery():
    """Given the authorization and token endpoints, Envoy Gateway does not fetch the issuer's
    discovery document, whose failure would make the policy Invalid; logout needs the end
    session endpoint set as well."""
    issuer = SETTINGS.oidc_issuer
    assert policy(access_for())["oidc"]["provider"] == {
        "issuer": issuer,
        "authorizationEndpoint": f"{issuer}/protocol/openid-connect/auth",
        "tokenEndpoint": f"{issuer}/protocol/openid-connect/token",
        "endSessionEndpoint": f"{issuer}/protocol/openid-connect/logout",
    }


def test_configured_provider_endpoints_replace_the_derived_ones():
    settings = replace(
        SETTINGS,
        oidc_issuer="https://login.example.com/",
        oidc_authorization_endpoint="https://login.example.com/authorize",
        oidc_token_endpoint="https://login.example.com/oauth/token",
        oidc_end_session_endpoint="https://login.example.com/v2/logout",
    )
    (found,) = [
        thaw(obj.body)
        for obj in access_objects(access_for(), settings, field_manager=FIELD_MANAGER)
        if obj.kind == "SecurityPolicy"
    ]

    assert found["spec"]["oidc"]["provider"] == {
        "issuer": "https://login.example.com/",
        "authorizationEndpoint": "https://login.example.com/authorize",
        "tokenEndpoint": "https://login.example.com/oauth/token",
        "endSessionEndpoint": "https://login.example.com/v2/logout",
    }


def test_derived_provider_endpoints_drop_the_issuer_trailing_slash():
    settings = replace(SETTINGS, oidc_issuer="https://login.example.com/realms/home/")

    assert (settings.authorization_endpoint, settings.token_endpoint, settings.end_session_endpoint) == (
        "https://login.example.com/realms/home/protocol/openid-connect/auth",
        "https://login.example.com/realms/home/protocol/openid-connect/token",
        "https://login.example.com/realms/home/protocol/openid-connect/logout",
    )


def test_the_jwt_provider_verifies_the_id_token_that_oidc_forwards():
    spec = policy(access_for())
    (provider,) = spec["jwt"]["providers"]
    assert spec["oidc"]["forwardIDToken"] == {"header": ID_TOKEN_HEADER}
    assert provider["extractFrom"] == {"headers": [{"name": ID_TOKEN_HEADER}]}
    assert provider["issuer"] == SETTINGS.oidc_issuer
    assert provider["audiences"] == ["magicstick-apps"]
    assert provider["remoteJWKS"] == {"uri": f"{SETTINGS.oidc_issuer}/protocol/openid-connect/certs"}
    rules = spec["authorization"]["rules"]
    assert {rule["principal"]["jwt"]["provider"] for rule in rules} == {provider["name"]}


def test_authentication_none_keeps_only_the_guard_and_marks_every_object_unauthenticated():
    access = access_for(authentication="none")
    assert set(policy(access)) == {"targetRefs", "extAuth"}
    for obj in objects(access):
        assert "explicitly" in obj["metadata"]["annotations"][UNAUTHENTICATED_ANNOTATION], obj["kind"]


def test_single_sign_on_objects_carry_no_unauthenticated_annotation():
    assert all(UNAUTHENTICATED_ANNOTATION not in obj["metadata"]["annotations"] for obj in objects(access_for()))


# Identity, labels, conformance, determinism


def test_every_object_is_labelled_annotated_and_named_after_its_kind_namespace_and_name():
    for obj in access_objects(access_for(), SETTINGS, field_manager=FIELD_MANAGER):
        metadata = thaw(obj.body["metadata"])
        assert obj.logical_name == f"{obj.kind.lower()}/{obj.namespace}/{obj.name}"
        assert (metadata["name"], metadata["namespace"]) == (obj.name, obj.namespace)
        assert metadata["labels"] == {
            "app.kubernetes.io/managed-by": "magicstick",
            "appliance.magicstick.dev/app-instance": "openclaw-default",
        }
        assert metadata["annotations"][FIELD_MANAGER_ANNOTATION] == FIELD_MANAGER


def test_long_instance_names_are_fitted_and_stay_distinct():
    first = access_for(instance="openclaw-" + "a" * 70 + "-one")
    second = access_for(instance="openclaw-" + "a" * 70 + "-two")
    names_first = {obj["metadata"]["name"] for obj in objects(first)}
    names_second = {obj["metadata"]["name"] for obj in objects(second)}
    assert all(len(name) <= 63 for name in names_first | names_second)
    assert not names_first & names_second
    assert all(len(value) <= 63 for obj in objects(first) for value in obj["metadata"]["labels"].values())


CONFORMANCE_CASES = {
    "sso-closed": {},
    "sso-open": {"guard_ready": True},
    "local-only": {"exposure": "local", "guard_ready": True},
    "none": {"authentication": "none", "guard_ready": True},
    "sharing-all": {"sharing_mode": "all"},
    "sharing-selected": {"sharing_mode": "selected", "users": ("u-1",), "groups": ("g-1", "g-2")},
    "sharing-empty": {"sharing_mode": "selected"},
    "same-namespace": {"namespace": "ai-system", "guard_ready": True},
}


@pytest.mark.parametrize("application", ["openclaw", "hermes", "paperclip", "kubeopencode", "odysseus"])
@pytest.mark.parametrize("case", sorted(CONFORMANCE_CASES))
def test_every_generated_object_validates_against_the_upstream_schemas(application, case):
    for obj in objects(access_for(application, **CONFORMANCE_CASES[case])):
        assert upstream_registry().errors(obj) == [], f"{obj['kind']}/{obj['metadata']['name']}"


def unordered_selection():
    """Sharing with selected users and groups, each listed out of order; the guard ready."""
    return access_for(sharing_mode="selected", users=("u-2", "u-1"), groups=("g-2", "g-1"), guard_ready=True)


def test_the_same_inputs_give_the_same_objects_and_list_order_does_not_matter():
    first = unordered_selection()
    second = replace(first, users=("u-1", "u-2"), groups=("g-1", "g-2"))
    assert objects(first) == objects(second)


def test_the_same_inputs_give_the_same_objects_byte_for_byte_whatever_the_hash_seed():
    expression = "access_objects(unordered_selection(), SETTINGS, field_manager=FIELD_MANAGER)"
    imports = (
        "from tests.planning.instances.test_access import FIELD_MANAGER, SETTINGS, access_objects, unordered_selection"
    )
    planned = access_objects(unordered_selection(), SETTINGS, field_manager=FIELD_MANAGER)
    assert digests_under_hash_seeds(expression, imports=imports) == [digest(repr(planned))] * 2


def test_the_security_policy_records_the_hash_of_its_planned_spec():
    (found,) = of_kind(access_for(), "SecurityPolicy")
    assert found["metadata"]["annotations"][SPEC_HASH_ANNOTATION] == spec_hash(found["spec"])
    other = policy(access_for(role="admin"))
    assert spec_hash(other) != spec_hash(found["spec"])
