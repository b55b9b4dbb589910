"""Envoy Gateway's own translator judges the access objects the program renders.

The scene is the demo appliance with one AppInstance per application and access mode
(tests/peers/scene.py). It is rendered until it settles, each SecurityPolicy and HTTPRoute
carrying the status the real translator gave it, so the routes have their backends because the
translator accepted the policies, not because a test said so. Then the translator's statuses and
its Envoy configuration (xDS) of the final render are checked against what the README promises.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from api.instances import APPLICATIONS
from planning.instances.reach import route_reaches
from planning.objects import DesiredObject
from planning.readiness import SPEC_HASH_ANNOTATION, Readiness, security_policy_readiness
from planning.snapshot import GenericObject, Snapshot
from tests.peers.envoy import Translation, judged, translate, translator_input
from tests.peers.scene import ACCESS_MODES, JsonObject, Rendered, Scene, instance_name
from tests.planning.builders import accepted_gateway_status, accepted_policy, accepted_route

GATEWAY = "ai-system/magicstick"
GUARD_SERVICE = ("ai-system", "magicstick-access-guard")
GUARD_PORT = 8080
EXT_AUTHZ = "envoy.filters.http.ext_authz"
JWT_AUTHN = "envoy.filters.http.jwt_authn"
OAUTH2 = "envoy.filters.http.oauth2"


@dataclass(frozen=True)
class Judged:
    rendered: Rendered
    translation: Translation
    guard_ip: str


@pytest.fixture(scope="module")
def judged_scene(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    directory = tmp_path_factory.mktemp("envoy-gateway")
    scene = Scene.every_application_and_access_mode(directory)

    def judge(rendered: Rendered) -> list[JsonObject]:
        verdict = translate(translator_input(rendered), directory / f"judge-{scene.renders}", xds=False)
        return judged(rendered, verdict)

    rendered = scene.settle(judge)
    objects = translator_input(rendered)
    (guard,) = [
        o
        for o in objects
        if o["kind"] == "Service" and (o["metadata"]["namespace"], o["metadata"]["name"]) == GUARD_SERVICE
    ]
    return Judged(rendered, translate(objects, directory / "final"), guard["spec"]["clusterIP"])


def _conditions(obj: Mapping[str, Any], key: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for entry in (obj.get("status") or {}).get(key) or ():
        for condition in entry.get("conditions") or ():
            yield condition["type"], condition


def _hcms(translation: Translation) -> list[tuple[str, Mapping[str, Any]]]:
    """The HTTP connection managers of the Gateway's own listeners (not Envoy's readiness one)."""
    found = []
    for listener in translation.listeners(GATEWAY):
        if not listener["name"].startswith(GATEWAY + "/"):
            continue
        chains = [
            *(listener.get("filterChains") or ()),
            *([listener["defaultFilterChain"]] if "defaultFilterChain" in listener else []),
        ]
        found += [(listener["name"], f["typedConfig"]) for chain in chains for f in chain["filters"]]
    return found


def _routes(translation: Translation) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(HTTPRoute name, xDS route) for every route of every virtual host."""
    for config in translation.route_configs(GATEWAY):
        for host in config.get("virtualHosts") or ():
            for route in host.get("routes") or ():
                yield route["name"].split("/")[2], route


def _policy_of(name: str) -> str:
    return f"{name}-access"


DEMO_INSTANCES = ("openclaw-default", "paperclip-default")


def test_the_scene_holds_the_demo_and_every_application_in_every_access_mode(judged_scene):
    policies = {p["metadata"]["name"] for p in judged_scene.rendered.of_kind("SecurityPolicy")}
    expected = {_policy_of(instance_name(a, m)) for a in APPLICATIONS for m in ACCESS_MODES} | {
        _policy_of(i) for i in DEMO_INSTANCES
    }
    assert policies == expected


def test_every_route_reaches_its_backend_once_the_translator_accepted_its_policy(judged_scene):
    without = [
        r["metadata"]["name"]
        for r in judged_scene.rendered.of_kind("HTTPRoute")
        if not all(rule.get("backendRefs") for rule in r["spec"]["rules"])
    ]
    assert without == []


def test_every_http_route_is_accepted_with_its_references_resolved(judged_scene):
    routes = judged_scene.translation.of("httpRoutes")
    assert len(routes) == len(judged_scene.rendered.of_kind("HTTPRoute"))
    refused = {
        route["metadata"]["name"]: (kind, condition.get("reason"), condition.get("message"))
        for route in routes
        for kind, condition in _conditions(route, "parents")
        if kind in ("Accepted", "ResolvedRefs") and condition["status"] != "True"
    }
    assert refused == {}
    for route in routes:
        assert {kind for kind, c in _conditions(route, "parents") if c["status"] == "True"} >= {
            "Accepted",
            "ResolvedRefs",
        }


def test_every_security_policy_is_accepted(judged_scene):
    policies = judged_scene.translation.of("securityPolicies")
    assert len(policies) == len(judged_scene.rendered.of_kind("SecurityPolicy"))
    verdicts = {
        p["metadata"]["name"]: [
            (c["status"], c.get("reason"), c.get("message"))
            for kind, c in _conditions(p, "ancestors")
            if kind == "Accepted"
        ]
        for p in policies
    }
    assert {name: v for name, v in verdicts.items() if v != [("True", "Accepted", "Policy has been accepted.")]} == {}


def test_every_instance_is_ready_on_the_translators_word(judged_scene):
    names = [instance_name(a, m) for a in APPLICATIONS for m in ACCESS_MODES] + list(DEMO_INSTANCES)
    not_ready = {}
    for name in names:
        status = _instance_status(judged_scene, name)
        if status.get("phase") != "Ready":
            not_ready[name] = status.get("message")
    assert not_ready == {}


def _instance_status(judged_scene: Judged, name: str) -> Mapping[str, Any]:
    (found,) = [
        s for s in judged_scene.rendered.statuses if s["kind"] == "AppInstance" and s["metadata"]["name"] == name
    ]
    return found["status"]


def test_ext_authz_runs_after_oidc_and_jwt_authentication_on_every_listener(judged_scene):
    managers = _hcms(judged_scene.translation)
    assert {name for name, _ in managers} == {f"{GATEWAY}/http", f"{GATEWAY}/https"}
    for name, manager in managers:
        filters = [f["name"] for f in manager["httpFilters"]]
        ext_authz = [i for i, f in enumerate(filters) if f.startswith(EXT_AUTHZ)]
        authentication = [i for i, f in enumerate(filters) if f.startswith((JWT_AUTHN, OAUTH2))]
        assert len(ext_authz) == len(judged_scene.rendered.of_kind("SecurityPolicy")), name
        assert {filters[i].split("/")[0] for i in authentication} == {JWT_AUTHN, OAUTH2}, name
        assert min(ext_authz) > max(authentication), (name, filters)


def test_every_ext_authz_filter_asks_the_access_guard_for_its_instance(judged_scene):
    translation = judged_scene.translation
    endpoints = {
        e["endpointConfig"]["clusterName"]: [
            lb["endpoint"]["address"]["socketAddress"]
            for group in e["endpointConfig"]["endpoints"]
            for lb in group["lbEndpoints"]
        ]
        for e in translation.configs(GATEWAY, "EndpointsConfigDump")["dynamicEndpointConfigs"]
    }
    for _, manager in _hcms(translation):
        for http_filter in manager["httpFilters"]:
            if not http_filter["name"].startswith(EXT_AUTHZ):
                continue
            policy = http_filter["name"].rsplit("/", 1)[1]
            instance = policy.removesuffix("-access")
            service = http_filter["typedConfig"]["httpService"]
            assert service["pathPrefix"] == f"/instances/ai-system/{instance}"
            assert service["serverUri"]["uri"].startswith(f"http://{GUARD_SERVICE[1]}.{GUARD_SERVICE[0]}:{GUARD_PORT}/")
            assert endpoints[service["serverUri"]["cluster"]] == [
                {"address": judged_scene.guard_ip, "portValue": GUARD_PORT}
            ]


def test_application_routes_have_no_total_timeout_and_callback_routes_keep_theirs(judged_scene):
    timeouts: dict[str, set[str]] = {}
    for route_name, route in _routes(judged_scene.translation):
        timeouts.setdefault(route_name, set()).add(route["route"]["timeout"])
    assert len(timeouts) == len(judged_scene.rendered.of_kind("HTTPRoute"))
    for route_name, found in timeouts.items():
        expected = {"15s"} if route_name.endswith("-callback") else {"0s"}
        assert found == expected, route_name


def _rbac(route: Mapping[str, Any]) -> Mapping[str, Any]:
    return route["typedPerFilterConfig"]["envoy.filters.http.rbac"]["rbac"]["matcher"]


@pytest.mark.parametrize("application", APPLICATIONS)
def test_a_selected_sharing_with_an_empty_selection_denies_everyone(judged_scene, application):
    instance = instance_name(application, "nobody")
    matchers = [_rbac(route) for name, route in _routes(judged_scene.translation) if name.startswith(instance + "-")]
    assert matchers
    for matcher in matchers:
        assert "matcherList" not in matcher
        assert matcher["onNoMatch"]["action"]["typedConfig"]["action"] == "DENY"


def test_a_selected_sharing_allows_only_its_users_and_groups(judged_scene):
    instance = instance_name("openclaw", "selected")
    (matcher,) = {
        repr(_rbac(route)): _rbac(route)
        for name, route in _routes(judged_scene.translation)
        if name == f"{instance}-local"
    }.values()
    allowed = [m["onMatch"]["action"]["name"] for m in matcher["matcherList"]["matchers"]]
    assert allowed == ["allow-selected-users", "allow-selected-groups"]
    assert matcher["onNoMatch"]["action"]["typedConfig"]["action"] == "DENY"


def _generic(obj: JsonObject) -> GenericObject:
    (found,) = Snapshot.from_objects([obj]).generated
    return found


def test_the_programs_reading_of_each_verdict_agrees_with_the_translator(judged_scene):
    rendered = judged_scene.rendered
    for policy in rendered.of_kind("SecurityPolicy"):
        answer = judged_scene.translation.named("securityPolicies", policy["metadata"]["name"])
        stored = judged(Rendered((policy,)), judged_scene.translation)[0]
        accepted = all(c["status"] == "True" for kind, c in _conditions(answer, "ancestors") if kind == "Accepted")
        verdict = security_policy_readiness(
            _generic(stored), planned_hash=policy["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
        )
        assert (verdict.readiness is Readiness.READY) == accepted, policy["metadata"]["name"]
    for route in rendered.of_kind("HTTPRoute"):
        stored = judged(Rendered((route,)), judged_scene.translation)[0]
        verdict = route_reaches(_generic(stored), planned_hash=route["metadata"]["annotations"][SPEC_HASH_ANNOTATION])
        assert verdict.readiness is Readiness.READY, route["metadata"]["name"]


def _without_times(status: Mapping[str, Any], key: str) -> list[JsonObject]:
    return [
        {
            **entry,
            "conditions": [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in entry["conditions"]],
        }
        for entry in status[key]
    ]


def test_the_in_repo_doubles_of_an_accepted_policy_and_route_write_what_the_translator_writes(judged_scene):
    """accepted_gateway_status is what every test that plays Envoy Gateway writes (the live and
    e2e worlds, the planning worlds, accepted_policy and accepted_route)."""
    rendered = judged_scene.rendered
    policy = rendered.of_kind("SecurityPolicy")[0]
    route = next(r for r in rendered.of_kind("HTTPRoute") if r["metadata"]["name"].endswith("-local"))
    translator = judged(Rendered((policy, route)), judged_scene.translation)
    for played, answered, key in (
        (accepted_policy(DesiredObject.of(policy))["status"], translator[0]["status"], "ancestors"),
        (accepted_route(DesiredObject.of(route))["status"], translator[1]["status"], "parents"),
        (accepted_gateway_status("ancestors", 1), translator[0]["status"], "ancestors"),
        (accepted_gateway_status("parents", 1), translator[1]["status"], "parents"),
    ):
        assert _without_times(played, key) == _without_times(answered, key)
