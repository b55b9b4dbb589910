"""magic-cluster/platform/host-agent/ read as files, and held equal to the agent's code: the
namespace of the network Secrets, the only Secrets and no Pods in its roles, the token limits its
renewal keeps. The API server's own verdicts are tests/cluster/test_host_agent_identity.py."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Final

from services.host_agent.cluster import FIELD_MANAGER
from services.host_agent.identity import MAX_TOKEN_SECONDS, RENEW_EVERY_SECONDS, ServiceAccountToken
from services.host_agent.settings import DEFAULT_NETWORK_NAMESPACE
from tests.deploy.manifests import documents

HOST_AGENT_DIR: Final = "../magic-cluster/platform/host-agent"
YEAR: Final = 365 * 24 * 3600


def shipped(name: str) -> list[dict[str, Any]]:
    return documents(f"{HOST_AGENT_DIR}/{name}")


def policy_variable(name: str) -> str:
    policy = next(
        doc for doc in shipped("admission-policy.yaml") if doc["metadata"]["name"] == "magicstick-host-agent-own-node"
    )
    return str(next(v for v in policy["spec"]["variables"] if v["name"] == name)["expression"])


def rules_on(resource: str) -> list[tuple[str | None, list[str]]]:
    """(namespace or None for the ClusterRole, verbs) of every rule of rbac.yaml on `resource`."""
    return [
        (role["metadata"].get("namespace"), list(rule["verbs"]))
        for role in shipped("rbac.yaml")
        if role["kind"] in ("Role", "ClusterRole")
        for rule in role["rules"]
        if resource in rule["resources"]
    ]


def test_the_kustomization_creates_the_network_namespace_before_the_roles_in_it() -> None:
    (kustomization,) = shipped("kustomization.yaml")
    (namespace,) = shipped("namespace.yaml")

    assert kustomization["resources"][0] == "namespace.yaml"
    assert namespace["metadata"]["name"] == DEFAULT_NETWORK_NAMESPACE
    assert namespace["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"] == "disabled"


def test_the_agent_may_get_secrets_by_name_in_the_network_namespace_and_nowhere_else() -> None:
    assert rules_on("secrets") == [(DEFAULT_NETWORK_NAMESPACE, ["get"])]


def test_the_role_in_the_network_namespace_grants_nothing_but_secrets() -> None:
    roles = [
        role
        for role in shipped("rbac.yaml")
        if role["kind"] == "Role" and role["metadata"]["namespace"] == DEFAULT_NETWORK_NAMESPACE
    ]

    assert [rule["resources"] for role in roles for rule in role["rules"]] == [["secrets"]]


def test_the_agent_may_not_read_pods_at_all() -> None:
    assert rules_on("pods") == []


def test_the_policy_caps_tokens_at_the_lifetime_the_agent_renews_with() -> None:
    assert int(policy_variable("tokenMaxSeconds")) == MAX_TOKEN_SECONDS


def test_the_policy_knows_the_agents_field_manager() -> None:
    assert re.findall(r"'([^']+)'", policy_variable("agentManager")) == [FIELD_MANAGER]


def test_a_year_long_install_token_is_renewed_after_an_hour_for_a_week() -> None:
    token = ServiceAccountToken(
        namespace="ai-system", service_account="magicstick-host-agent", issued_at=1_000_000, expires_at=1_000_000 + YEAR
    )

    assert not token.due(datetime.fromtimestamp(1_000_000 + RENEW_EVERY_SECONDS - 1, UTC))
    assert token.due(datetime.fromtimestamp(1_000_000 + RENEW_EVERY_SECONDS, UTC))
    assert token.renewal_seconds == MAX_TOKEN_SECONDS


def test_a_short_token_is_renewed_after_two_thirds_of_its_lifetime_with_the_same_lifetime() -> None:
    token = ServiceAccountToken(
        namespace="ai-system", service_account="magicstick-host-agent", issued_at=0, expires_at=1800
    )

    assert not token.due(datetime.fromtimestamp(1199, UTC))
    assert token.due(datetime.fromtimestamp(1200, UTC))
    assert token.renewal_seconds == 1800
