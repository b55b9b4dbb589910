"""The dashboard base (magic-cluster/platform/dashboard) deploys the real service with
least-privilege RBAC.

What it promises, and where each promise comes from:
- the Deployment runs the console script `magicstick-dashboard` with flags its own parser
  accepts (services/dashboard/settings.py; `--flag=value`, each once); it verifies ID tokens
  for the issuer and client ID the route signs in with (the same post-build variables), with
  the key set the access guard uses by default (planning/access_settings.py `jwks_uri`), read
  from the header the route forwards the token in (planning/instances/access.py
  `ID_TOKEN_HEADER`);
- it runs non-root on a read-only root filesystem with its ServiceAccount's token mounted;
- that ServiceAccount may impersonate users, and the four groups of the dashboard roles by name,
  and nothing else: the API server's RBAC and admission policy decide for the user;
- every object validates against its schema: the Gateway kinds against the vendored CRDs here,
  every kind in a server-side dry run on the test API server (which also runs the CRDs' CEL
  rules), and the impersonation rules are asked of the server as the ServiceAccount itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

import httpx
import pytest

from planning.access_settings import AccessSettings
from planning.instances.access import ID_TOKEN_HEADER
from planning.instances.guard import ENVOY_GATEWAY_NAMESPACE, NAMESPACE_NAME_LABEL, envoy_proxy_labels
from providers.kinds import DEPLOYMENT, HTTP_ROUTE, NETWORK_POLICY, SECURITY_POLICY, SERVICE
from providers.kube import KubeAccess, KubeClient, ResourceKind, open_client
from services.dashboard.settings import DashboardSettings, parse_settings
from services.oidc.claims import ROLES
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, TestIdentity, wait_until_allowed
from tests.deploy.program_identity import apply_all, ensure_namespaces
from tests.gitops.tree import REPOSITORY, build_text, flux_build, identity, of_kind
from tests.support.crd_schema import upstream_registry

BASE: Final = "magic-cluster/platform/dashboard"
NAMESPACE: Final = "ai-system"
ACCOUNT: Final = "magicstick-dashboard"
ACCOUNT_USER: Final = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
ACCOUNT_GROUPS: Final = ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated")
CONSOLE_SCRIPT: Final = "magicstick-dashboard"
PORT: Final = 8080

ROLE_GROUPS: Final = {
    "admin": "magicstick:administrators",
    "operator": "magicstick:operators",
    "user": "magicstick:users",
    "viewer": "magicstick:viewers",
}
"""The Kubernetes group of each dashboard role (the decided mapping, issue 29)."""

REQUIRED_FLAGS: Final = frozenset({"issuer", "audience", "jwks-uri"})

SETTINGS: Final = {
    "oidc_issuer": "https://sso.example.com/realms/appliance",
    "oidc_client_id": "appliance-console",
    "domain": "appliance.example.com",
    "local_domain": "appliance.example.local",
}
"""An installation's ai-appliance-settings, every value unlike the defaults."""

BUILDS: Final = {"defaults": None, "settings": SETTINGS}

KINDS: Final = {
    ("v1", "ServiceAccount"): ResourceKind(
        group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True
    ),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): ResourceKind(
        group="rbac.authorization.k8s.io", version="v1", kind="ClusterRole", plural="clusterroles", namespaced=False
    ),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ResourceKind(
        group="rbac.authorization.k8s.io",
        version="v1",
        kind="ClusterRoleBinding",
        plural="clusterrolebindings",
        namespaced=False,
    ),
    ("apps/v1", "Deployment"): DEPLOYMENT,
    ("v1", "Service"): SERVICE,
    (HTTP_ROUTE.api_version, "HTTPRoute"): HTTP_ROUTE,
    (SECURITY_POLICY.api_version, "SecurityPolicy"): SECURITY_POLICY,
    ("networking.k8s.io/v1", "NetworkPolicy"): NETWORK_POLICY,
    **{
        ("admissionregistration.k8s.io/v1", kind): ResourceKind(
            group="admissionregistration.k8s.io", version="v1", kind=kind, plural=plural, namespaced=False
        )
        for kind, plural in (
            ("ValidatingAdmissionPolicy", "validatingadmissionpolicies"),
            ("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings"),
        )
    },
}
"""Where the API server serves each kind of the base."""

Grant = tuple[str, str, str, str | None]
"""(verb, API group, resource, resource name or None for any)."""

EXPECTED_GRANTS: Final[frozenset[Grant]] = frozenset(
    {("impersonate", "", "users", None), *(("impersonate", "", "groups", group) for group in ROLE_GROUPS.values())}
)


def objects(settings: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The base as Flux applies it: `kubectl kustomize`, then post-build substitution."""
    return flux_build(REPOSITORY / BASE, settings)


def the_one(found: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (obj,) = of_kind(found, kind)
    return obj


def container(found: list[dict[str, Any]]) -> dict[str, Any]:
    (only,) = the_one(found, "Deployment")["spec"]["template"]["spec"]["containers"]
    return only


def flags(found: list[dict[str, Any]]) -> dict[str, str]:
    """The container's args as flag -> value; each must be `--name=value`, given once."""
    parsed: dict[str, str] = {}
    for arg in container(found)["args"]:
        assert arg.startswith("--") and "=" in arg, f"{arg!r} is not --name=value"
        name, value = arg.removeprefix("--").split("=", 1)
        assert name not in parsed, f"--{name} given twice"
        parsed[name] = value
    return parsed


def oidc(found: list[dict[str, Any]]) -> dict[str, Any]:
    return the_one(found, "SecurityPolicy")["spec"]["oidc"]


def grants(rules: Iterable[Mapping[str, Any]]) -> set[Grant]:
    """Each (verb, group, resource, name) a list of RBAC rules allows. Pure."""
    found: set[Grant] = set()
    for rule in rules:
        names = rule.get("resourceNames") or [None]
        for verb in rule.get("verbs") or ():
            for group in rule.get("apiGroups") or ():
                for resource in rule.get("resources") or ():
                    found |= {(verb, group, resource, name) for name in names}
    return found


def bound_rules(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every rule of the base bound to the dashboard's ServiceAccount, whatever role holds it."""
    roles = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in found
        if o["kind"] in {"Role", "ClusterRole"}
    }
    rules: list[dict[str, Any]] = []
    for binding in (o for o in found if o["kind"] in {"RoleBinding", "ClusterRoleBinding"}):
        if {"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE} not in binding["subjects"]:
            continue
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        rules += roles[(ref["kind"], namespace, ref["name"])]["rules"]
    return rules


# --- the base, as Flux builds it ------------------------------------------------------------


def test_the_base_builds_into_the_dashboard_its_service_account_its_impersonation_its_route_and_the_admission_policy():
    assert sorted(identity(o) for o in objects()) == sorted(
        [
            f"ServiceAccount/{NAMESPACE}/{ACCOUNT}",
            "ClusterRole/-/magicstick-dashboard-impersonator",
            "ClusterRoleBinding/-/magicstick-dashboard-impersonator",
            f"Deployment/{NAMESPACE}/{ACCOUNT}",
            f"Service/{NAMESPACE}/{ACCOUNT}",
            f"HTTPRoute/{NAMESPACE}/{ACCOUNT}",
            f"SecurityPolicy/{NAMESPACE}/{ACCOUNT}",
            f"NetworkPolicy/{NAMESPACE}/{ACCOUNT}",
            "ValidatingAdmissionPolicy/-/magicstick-module-activation-administrator-fields",
            "ValidatingAdmissionPolicyBinding/-/magicstick-module-activation-administrator-fields",
        ]
    )


@pytest.mark.parametrize("settings", BUILDS.values(), ids=BUILDS.keys())
def test_every_variable_of_the_base_has_a_default_so_nothing_is_left_to_substitute(settings):
    assert "${" in build_text(BASE)
    for obj in objects(settings):
        assert "${" not in str(obj), identity(obj)


def test_the_dashboard_runs_its_console_script_with_its_required_flags():
    found = objects()
    given = flags(found)

    assert container(found)["command"] == [CONSOLE_SCRIPT]
    assert set(given) >= REQUIRED_FLAGS
    assert "kubeconfig" not in given, "in the cluster it uses its ServiceAccount"
    assert (given["listen"], given["system-namespace"]) == (f"0.0.0.0:{PORT}", NAMESPACE)


def deployed_settings(settings: Mapping[str, str] | None = None) -> DashboardSettings:
    """The container's args as the dashboard itself reads them, with no environment."""
    return parse_settings(container(objects(settings))["args"], {})


@pytest.mark.parametrize("settings", BUILDS.values(), ids=BUILDS.keys())
def test_the_dashboard_accepts_every_flag_it_is_given_and_reads_them_as_written(settings):
    found = objects(settings)
    given = flags(found)
    read = deployed_settings(settings)

    assert (read.issuer, read.audience, read.jwks_uri, read.token_header) == (
        given["issuer"],
        given["audience"],
        given["jwks-uri"],
        given["token-header"],
    )
    assert (str(read.listen), read.system_namespace, read.kubeconfig) == (given["listen"], NAMESPACE, None)
    assert (read.claims.subject, read.claims.roles, read.claims.groups) == (
        given["subject-claim"],
        given["roles-claim"],
        given["groups-claim"],
    )


@pytest.mark.parametrize("settings", BUILDS.values(), ids=BUILDS.keys())
def test_it_verifies_tokens_for_the_issuer_and_client_the_route_signs_in_with(settings):
    found = objects(settings)
    given = flags(found)

    assert (given["issuer"], given["audience"]) == (oidc(found)["provider"]["issuer"], oidc(found)["clientID"])


@pytest.mark.parametrize("settings", BUILDS.values(), ids=BUILDS.keys())
def test_its_issuer_audience_and_key_set_are_those_the_access_guard_gets_from_the_same_settings(settings):
    given = flags(objects(settings))
    program = (
        AccessSettings()
        if settings is None
        else AccessSettings(oidc_issuer=settings["oidc_issuer"], oidc_client_id=settings["oidc_client_id"])
    )

    assert (given["issuer"], given["audience"], given["jwks-uri"]) == (
        program.oidc_issuer,
        program.oidc_client_id,
        program.jwks_uri,
    )


def test_its_claim_names_are_the_programs_own():
    given = flags(objects())
    program = AccessSettings()

    assert (given["subject-claim"], given["roles-claim"], given["groups-claim"]) == (
        program.subject_claim,
        program.roles_claim,
        program.groups_claim,
    )


@pytest.mark.parametrize("settings", BUILDS.values(), ids=BUILDS.keys())
def test_it_accepts_changes_only_from_the_pages_of_the_hosts_its_route_serves(settings):
    found = objects(settings)
    (route,) = of_kind(found, "HTTPRoute")

    assert deployed_settings(settings).hosts == tuple(route["spec"]["hostnames"])


def test_it_reads_the_id_token_from_the_header_the_route_forwards_it_in_as_the_instance_policies_do():
    found = objects()

    assert flags(found)["token-header"] == ID_TOKEN_HEADER
    assert oidc(found)["forwardIDToken"] == {"header": ID_TOKEN_HEADER}
    assert "forwardAccessToken" not in oidc(found), "the dashboard does not use the access token"


def test_the_route_signs_in_on_the_dashboard_itself_and_sends_to_its_port():
    found = objects()
    route, policy, service = the_one(found, "HTTPRoute"), the_one(found, "SecurityPolicy"), the_one(found, "Service")
    (rule,) = route["spec"]["rules"]
    (backend,) = rule["backendRefs"]
    (service_port,) = service["spec"]["ports"]
    (container_port,) = container(found)["ports"]

    assert policy["spec"]["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": route["metadata"]["name"]}
    ]
    assert (backend["name"], backend["port"]) == (service["metadata"]["name"], service_port["port"])
    assert service_port["targetPort"] == container_port["name"] == "http"
    assert container_port["containerPort"] == PORT == int(flags(found)["listen"].rsplit(":", 1)[1])
    assert (
        service["spec"]["selector"].items()
        <= the_one(found, "Deployment")["spec"]["template"]["metadata"]["labels"].items()
    )


def test_its_probes_ask_healthz_on_the_port_it_listens_on():
    running = container(objects())

    assert running["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert running["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}


def test_it_runs_non_root_on_a_read_only_root_with_only_tmp_writable():
    found = objects()
    pod = the_one(found, "Deployment")["spec"]["template"]["spec"]
    running = container(found)
    context = running["securityContext"]

    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert context["readOnlyRootFilesystem"] is True and context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context.get("privileged", False) is False
    assert running["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert pod["volumes"] == [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]


def test_it_requests_resources_and_is_bounded_in_memory():
    resources = container(objects())["resources"]

    assert {"cpu", "memory"} <= set(resources["requests"])
    assert "memory" in resources["limits"]


def test_it_talks_to_the_api_server_with_its_own_service_accounts_token():
    found = objects()
    pod = the_one(found, "Deployment")["spec"]["template"]["spec"]
    account = the_one(found, "ServiceAccount")

    assert pod["serviceAccountName"] == account["metadata"]["name"] == ACCOUNT
    assert account["metadata"]["namespace"] == the_one(found, "Deployment")["metadata"]["namespace"] == NAMESPACE
    assert pod["automountServiceAccountToken"] is True
    assert account.get("automountServiceAccountToken", True) is True


def test_the_placeholder_image_can_be_replaced_by_the_installation_setting():
    image = "registry.example.com/magicstick/dashboard:0.1.0@sha256:CHANGEME"

    assert container(objects({"dashboard_image": image}))["image"] == image


# --- its RBAC ----------------------------------------------------------------------------------


def test_every_dashboard_role_has_its_group_and_there_are_four():
    assert tuple(ROLE_GROUPS) == ROLES
    assert len(set(ROLE_GROUPS.values())) == 4


def test_its_service_account_may_impersonate_users_and_exactly_the_four_role_groups():
    assert grants(bound_rules(objects())) == EXPECTED_GRANTS


def test_the_impersonator_role_holds_exactly_those_two_rules_and_nothing_else():
    role = the_one(objects(), "ClusterRole")

    assert role["metadata"]["name"] == "magicstick-dashboard-impersonator"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]},
        {
            "apiGroups": [""],
            "resources": ["groups"],
            "resourceNames": sorted(ROLE_GROUPS.values()),
            "verbs": ["impersonate"],
        },
    ]
    assert "aggregationRule" not in role


def test_no_rule_bound_to_it_grants_a_wildcard_escalation_secrets_or_another_kind_of_identity():
    for rule in bound_rules(objects()):
        everything = [
            *rule.get("apiGroups", []),
            *rule.get("resources", []),
            *rule.get("verbs", []),
            *rule.get("resourceNames", []),
        ]
        assert not any("*" in value for value in everything), rule
        assert not {"escalate", "bind", "create", "update", "patch", "delete", "get", "list", "watch"} & set(
            rule["verbs"]
        ), rule
        assert not {"secrets", "serviceaccounts", "userextras", "uids", "serviceaccounts/token"} & set(
            rule["resources"]
        ), rule
        assert "nonResourceURLs" not in rule
        assert rule["apiGroups"] == [""], "uids and userextras are authentication.k8s.io's"
        assert not any(name.startswith("system:") for name in rule.get("resourceNames", [])), rule


def test_the_binding_names_only_the_dashboards_service_account():
    binding = the_one(objects(), "ClusterRoleBinding")

    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "magicstick-dashboard-impersonator",
    }


# --- schemas -----------------------------------------------------------------------------------


@pytest.mark.parametrize("settings", BUILDS.values(), ids=BUILDS.keys())
def test_the_route_and_its_sign_on_validate_against_the_vendored_gateway_schemas(settings):
    registry = upstream_registry()
    found = objects(settings)
    for obj in of_kind(found, "HTTPRoute") + of_kind(found, "SecurityPolicy"):
        assert registry.errors(obj) == [], identity(obj)


# --- on the test API server ---------------------------------------------------------------------


@pytest.fixture
def admin(cluster: ClusterInfo) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as client:
        ensure_namespaces(client, (NAMESPACE,))
        yield client


@pytest.mark.parametrize("settings", BUILDS.values(), ids=BUILDS.keys())
def test_every_object_of_the_base_passes_a_server_side_dry_run(settings, admin: KubeClient):
    for obj in objects(settings):
        answered = admin.apply(
            KINDS[(obj["apiVersion"], obj["kind"])], obj, field_manager="kustomize-controller", dry_run=True
        )
        assert answered["metadata"]["name"] == obj["metadata"]["name"]


def request_token(admin: KubeClient) -> str:
    answer = admin.request(
        "POST",
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
        content_type="application/json",
    )
    return str(answer["status"]["token"])


@pytest.fixture
def dashboard(cluster: ClusterInfo, admin: KubeClient) -> TestIdentity:
    """The dashboard's ServiceAccount with the base's RBAC applied, as the API server knows it."""
    found = objects()
    apply_all(admin, [o for o in found if o["kind"] in {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}])
    account = TestIdentity(name=ACCOUNT_USER, token=request_token(admin), groups=ACCOUNT_GROUPS)
    wait_until_allowed(cluster, account, verb="impersonate", resource="users")
    return account


def as_dashboard(cluster: ClusterInfo, account: TestIdentity, headers: Iterable[tuple[str, str]]) -> httpx.Response:
    """A SelfSubjectReview as the ServiceAccount sending these impersonation headers."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    with cluster.client(account) as client:
        return client.post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews", json=review, headers=httpx.Headers(list(headers))
        )


@pytest.mark.parametrize("role", ROLES)
def test_the_dashboard_acts_as_a_signed_in_user_with_the_groups_of_their_role_and_every_lower_one(
    role, cluster: ClusterInfo, dashboard: TestIdentity
):
    held = [ROLE_GROUPS[r] for r in ROLES[ROLES.index(role) :]]
    answer = as_dashboard(
        cluster, dashboard, [("Impersonate-User", "oidc:alice"), *(("Impersonate-Group", g) for g in held)]
    )

    assert answer.status_code in (200, 201), answer.text
    user = answer.json()["status"]["userInfo"]
    assert user["username"] == "oidc:alice"
    assert set(held) <= set(user["groups"]) <= {*held, "system:authenticated"}


@pytest.mark.parametrize(
    "headers",
    [
        [("Impersonate-User", "oidc:alice"), ("Impersonate-Group", "system:masters")],
        [
            ("Impersonate-User", "oidc:alice"),
            ("Impersonate-Group", "magicstick:viewers"),
            ("Impersonate-Group", "magicstick:auditors"),
        ],
        [("Impersonate-User", f"system:serviceaccount:{NAMESPACE}:magicstick-program")],
        [("Impersonate-User", "oidc:alice"), ("Impersonate-Extra-scopes", "view")],
        [("Impersonate-User", "oidc:alice"), ("Impersonate-Uid", "0b7e3a44-0000-4000-8000-000000000000")],
    ],
    ids=["system-masters", "a-group-outside-the-four", "a-service-account", "user-extras", "a-uid"],
)
def test_the_dashboard_may_not_impersonate_anything_beyond_users_and_the_four_groups(
    headers, cluster: ClusterInfo, dashboard: TestIdentity
):
    answer = as_dashboard(cluster, dashboard, headers)

    assert answer.status_code == 403, answer.text
    assert "cannot impersonate" in answer.json()["message"]


def rules_review(client: httpx.Client, headers: Iterable[tuple[str, str]] = ()) -> set[tuple[str, ...]]:
    """What the API server says the caller (or whom it impersonates) may do in the namespace:
    each resource grant, and each (verb, non-resource URL)."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": NAMESPACE},
    }
    answer = client.post(
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", json=review, headers=httpx.Headers(list(headers))
    )
    assert answer.status_code in (200, 201), answer.text
    status = answer.json()["status"]
    assert status.get("incomplete") is not True, status
    urls = {
        (verb, url)
        for rule in status.get("nonResourceRules") or ()
        for verb in rule["verbs"]
        for url in rule["nonResourceURLs"]
    }
    return {*grants(status.get("resourceRules") or ()), *urls}


def test_as_itself_the_dashboard_may_do_nothing_beyond_what_every_service_account_may_but_impersonate(
    cluster: ClusterInfo, dashboard: TestIdentity
):
    """Compared with a ServiceAccount of the same namespace that nothing is bound to."""
    baseline_headers = [
        ("Impersonate-User", f"system:serviceaccount:{NAMESPACE}:magicstick-dashboard-unbound"),
        *(("Impersonate-Group", group) for group in ACCOUNT_GROUPS),
    ]
    with cluster.client() as admin_http:
        baseline = rules_review(admin_http, baseline_headers)
    with cluster.client(dashboard) as dashboard_http:
        own = rules_review(dashboard_http)

    assert own - baseline == EXPECTED_GRANTS
    assert baseline - own == set()


def test_only_the_shared_gateways_envoy_proxies_reach_the_dashboards_port():
    """The access guard's rule (planning/instances/guard.py), for the dashboard's Pods and port."""
    (policy,) = of_kind(objects(), "NetworkPolicy")
    (deployment,) = of_kind(objects(), "Deployment")
    settings = AccessSettings()
    (rule,) = policy["spec"]["ingress"]
    (source,) = rule["from"]

    assert policy["spec"]["podSelector"]["matchLabels"] == deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert source["podSelector"]["matchLabels"] == envoy_proxy_labels(settings)
    assert source["namespaceSelector"]["matchExpressions"] == [
        {
            "key": NAMESPACE_NAME_LABEL,
            "operator": "In",
            "values": sorted({ENVOY_GATEWAY_NAMESPACE, settings.gateway_namespace}),
        }
    ]
    container_port = deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
    assert rule["ports"] == [{"protocol": "TCP", "port": container_port}]
