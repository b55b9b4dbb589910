"""deploy/rbac-administrators.yaml as a file: the dashboard's four roles as Kubernetes groups, each
an increment on the one below, bound in the namespace the runtime objects live in. No cluster
here; tests/deploy/test_administrators_rbac.py asks the real authorizer."""

from __future__ import annotations

from typing import Any, Final

import pytest
import yaml

from api.crdgen import load_committed_crds
from api.meta import GROUP
from services.oidc.claims import ROLES
from tests.deploy.manifests import RBAC_API_VERSION, SYSTEM_NAMESPACE, Permission, documents, granted_to_group
from tests.support.vendored import REPOSITORY_ROOT as REPO_ROOT

MANIFEST: Final = "rbac-administrators.yaml"
ROLE_GROUPS: Final = {
    "admin": "magicstick:administrators",
    "operator": "magicstick:operators",
    "user": "magicstick:users",
    "viewer": "magicstick:viewers",
}
"""The Kubernetes group of each dashboard role (services/oidc/claims.py ROLES), as decided."""
READ: Final = ("get", "list", "watch")
RUNTIME_OBJECTS: Final = ("appliances", "moduleactivations", "modelactivations", "appinstances", "hostoperations")
INTENT: Final = ("moduleactivations", "modelactivations", "appinstances")
WRITE: Final = ("create", "update", "patch", "delete")
EXAMPLES: Final = REPO_ROOT / "examples"


def permissions(verbs: tuple[str, ...], group: str, resources: tuple[str, ...]) -> set[Permission]:
    return {Permission(verb, group, resource, SYSTEM_NAMESPACE) for verb in verbs for resource in resources}


VIEWING: Final = (
    permissions(READ, GROUP, RUNTIME_OBJECTS)
    | permissions(READ, "", ("events",))
    | permissions(READ, "pulumi.com", ("stacks",))
)
"""The runtime objects, the Events that explain them, and the program's PKO Stack (its last update)."""
OPERATING: Final = permissions(WRITE, GROUP, INTENT)
ADMINISTERING: Final = permissions(("create", "delete", "patch"), GROUP, ("hostoperations",))
"""patch: the confirmation annotation of a network change (the spec is immutable)."""
READING_NODES: Final = {Permission(verb, "", "nodes", None) for verb in READ}
"""Cluster-wide, by the one ClusterRoleBinding: a HostOperation and a GPU sharing change are bound to a Node's UID and boot ID."""


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return documents(MANIFEST)


def granted_to(objects: list[dict[str, Any]], role: str) -> set[Permission]:
    return granted_to_group(objects, ROLE_GROUPS[role])


def test_every_dashboard_role_has_its_group():
    assert set(ROLE_GROUPS) == set(ROLES)


def test_it_holds_cluster_roles_bound_by_role_bindings_but_for_the_administrators_node_reader(objects):
    assert {obj["apiVersion"] for obj in objects} == {RBAC_API_VERSION}
    assert {obj["kind"] for obj in objects} == {"ClusterRole", "RoleBinding", "ClusterRoleBinding"}
    cluster_wide = [obj for obj in objects if obj["kind"] == "ClusterRoleBinding"]
    assert [(b["roleRef"]["name"], [s["name"] for s in b["subjects"]]) for b in cluster_wide] == [
        ("magicstick-appliance-node-reader", [ROLE_GROUPS["admin"]])
    ]


@pytest.mark.parametrize("role", ["viewer", "user"])
def test_viewers_and_users_may_read_the_runtime_objects_and_core_events_and_write_nothing(objects, role):
    assert granted_to(objects, role) == VIEWING


def test_operators_may_also_create_change_and_delete_module_model_and_instance_intent(objects):
    assert granted_to(objects, "operator") == VIEWING | OPERATING


def test_administrators_may_also_create_and_delete_host_operations(objects):
    assert granted_to(objects, "admin") == VIEWING | OPERATING | ADMINISTERING | READING_NODES


def test_no_one_may_update_a_host_operation_or_write_any_status_and_only_administrators_patch_one_to_confirm(objects):
    for role in ROLE_GROUPS:
        granted = granted_to(objects, role)
        changes = {p.verb for p in granted if p.resource == "hostoperations" and p.verb in {"update", "patch"}}
        assert changes == ({"patch"} if role == "admin" else set())
        assert not {p for p in granted if "/" in p.resource}


def test_no_rule_grants_secrets_wildcards_names_or_escalation(objects):
    for role in (obj for obj in objects if obj["kind"] == "ClusterRole"):
        for rule in role["rules"]:
            assert "secrets" not in rule["resources"]
            assert "*" not in [*rule["resources"], *rule["verbs"], *rule["apiGroups"]]
            assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"])
            assert "resourceNames" not in rule and "nonResourceURLs" not in rule


def test_every_resource_of_our_group_is_a_plural_of_a_committed_crd(objects):
    plurals = {crd["spec"]["names"]["plural"] for crd in load_committed_crds()}
    resources = {p.resource for role in ROLE_GROUPS for p in granted_to(objects, role) if p.group == GROUP}

    assert resources <= plurals
    assert "hostoperations" in plurals


def test_each_role_binding_keeps_its_name_and_role_ref_and_lists_every_group_at_or_above_its_level(objects):
    """A roleRef cannot change in place, so the bindings of earlier releases keep theirs and an
    apply upgrades them; one group is enough for everything its role may do."""
    bindings = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "RoleBinding"}

    assert {name: b["roleRef"]["name"] for name, b in bindings.items()} == {
        "magicstick-appliance-viewers": "magicstick-appliance-viewer",
        "magicstick-appliance-operators": "magicstick-appliance-operator",
        "magicstick-appliance-administrators": "magicstick-appliance-administrator",
    }
    assert {name: {s["name"] for s in b["subjects"]} for name, b in bindings.items()} == {
        "magicstick-appliance-viewers": set(ROLE_GROUPS.values()),
        "magicstick-appliance-operators": {ROLE_GROUPS["operator"], ROLE_GROUPS["admin"]},
        "magicstick-appliance-administrators": {ROLE_GROUPS["admin"]},
    }
    assert {s["kind"] for b in bindings.values() for s in b["subjects"]} == {"Group"}


def test_the_roles_are_bound_in_the_namespace_the_runtime_objects_live_in(objects):
    pulumi_config = yaml.safe_load((REPO_ROOT / "Pulumi.yaml").read_text())["config"]
    runtime = [
        document
        for path in sorted(EXAMPLES.rglob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text())
        if isinstance(document, dict) and str(document.get("apiVersion", "")).startswith(f"{GROUP}/")
    ]

    assert pulumi_config["magicstick:systemNamespace"]["default"] == SYSTEM_NAMESPACE
    assert runtime
    assert {document["metadata"].get("namespace") for document in runtime} == {SYSTEM_NAMESPACE}
    assert {obj["metadata"]["namespace"] for obj in objects if obj["kind"] == "RoleBinding"} == {SYSTEM_NAMESPACE}


def test_the_header_says_what_narrows_module_activation_writes_to_the_fields():
    header = (REPO_ROOT / "deploy" / MANIFEST).read_text().split("apiVersion:", 1)[0]

    assert "magic-cluster/platform/admission/admission-policy.yaml" in header
