"""The deploy/ manifests as data: loading them and reading what they grant. Pure, no cluster."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from tests.support.vendored import REPOSITORY_ROOT as REPO_ROOT

DEPLOY_DIR: Final = REPO_ROOT / "deploy"
KUSTOMIZATION_FILE: Final = "kustomization.yaml"
WORKFLOW_FILE: Final = "ci-preview.yaml"

SYSTEM_NAMESPACE: Final = "ai-system"
SERVICE_ACCOUNT: Final = "magicstick-program"
SERVICE_ACCOUNT_USER: Final = f"system:serviceaccount:{SYSTEM_NAMESPACE}:{SERVICE_ACCOUNT}"
SERVICE_ACCOUNT_GROUPS: Final = (
    "system:serviceaccounts",
    f"system:serviceaccounts:{SYSTEM_NAMESPACE}",
    "system:authenticated",
)
"""The groups the API server gives every token of this ServiceAccount."""

RBAC_API_VERSION: Final = "rbac.authorization.k8s.io/v1"
BUILT_IN_CLUSTER_ROLES: Final = frozenset({"system:auth-delegator"})
"""Cluster roles rbac.yaml binds without defining them: Kubernetes creates them at startup."""

JsonObject = dict[str, Any]


def yaml_files() -> tuple[Path, ...]:
    """Every YAML file in deploy/, sorted by name."""
    return tuple(sorted(path for path in DEPLOY_DIR.iterdir() if path.suffix in {".yaml", ".yml"}))


def documents(name: str) -> list[JsonObject]:
    """The non-empty YAML documents of deploy/`name`."""
    with (DEPLOY_DIR / name).open() as stream:
        return [document for document in yaml.safe_load_all(stream) if document is not None]


def kubernetes_files() -> tuple[str, ...]:
    """The files of Kubernetes objects: every YAML file but the kustomization and the CI workflow."""
    return tuple(path.name for path in yaml_files() if path.name not in {KUSTOMIZATION_FILE, WORKFLOW_FILE})


def the_one(objects: Iterable[Mapping[str, Any]], kind: str) -> JsonObject:
    (found,) = [dict(obj) for obj in objects if obj["kind"] == kind]
    return found


def walk(node: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every (path, value) pair below `node`, depth first, `node` itself included."""
    yield path, node
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from walk(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, (*path, index))


@dataclass(frozen=True, order=True)
class Permission:
    """One verb on one resource (`plural` or `plural/subresource`), in a namespace or cluster-wide."""

    verb: str
    group: str
    resource: str
    namespace: str | None = None

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else " cluster-wide"
        return f"{self.verb} {self.resource}.{self.group or 'core'}{where}"


def _binds_service_account(binding: Mapping[str, Any]) -> bool:
    return any(
        subject.get("kind") == "ServiceAccount"
        and subject.get("name") == SERVICE_ACCOUNT
        and subject.get("namespace") == SYSTEM_NAMESPACE
        for subject in binding.get("subjects") or ()
    )


def bound_rules(objects: Iterable[Mapping[str, Any]]) -> list[tuple[JsonObject, str | None]]:
    """Each rule of a role defined in `objects` and bound there to the ServiceAccount, with the
    namespace it applies in (None: cluster-wide)."""
    objects = list(objects)
    roles = {(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj for obj in objects}
    bound: list[tuple[JsonObject, str | None]] = []
    for binding in objects:
        if binding["kind"] not in {"RoleBinding", "ClusterRoleBinding"} or not _binds_service_account(binding):
            continue
        namespace = binding["metadata"].get("namespace")
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"]))
        for rule in (role or {}).get("rules") or ():
            bound.append((dict(rule), namespace))
    return bound


def granted(objects: Iterable[Mapping[str, Any]]) -> list[Permission]:
    """What the ServiceAccount may do by the roles defined and bound in `objects`, sorted.

    Rules restricted by resourceNames are left out: such a permission holds for named objects
    only, and a permission here is about every object of the resource.
    """
    permissions = {
        Permission(verb=verb, group=group, resource=resource, namespace=namespace)
        for rule, namespace in bound_rules(objects)
        if not rule.get("resourceNames")
        for group in rule.get("apiGroups") or ()
        for resource in rule.get("resources") or ()
        for verb in rule.get("verbs") or ()
    }
    return sorted(permissions, key=lambda p: (p.namespace or "", p.group, p.resource, p.verb))


def allows(objects: Iterable[Mapping[str, Any]], permission: Permission, name: str | None = None) -> bool:
    """Whether a role defined and bound in `objects` grants `permission` on the object `name`.

    RBAC's matching, for the rule shapes rbac.yaml uses: a namespaced permission is granted by a
    Role of its namespace or by the ClusterRole; resourceNames, when a rule has them, must
    contain `name`.
    """
    for rule, namespace in bound_rules(objects):
        if namespace is not None and namespace != permission.namespace:
            continue
        names = rule.get("resourceNames")
        if (
            permission.group in rule.get("apiGroups", ())
            and permission.resource in rule.get("resources", ())
            and permission.verb in rule.get("verbs", ())
            and (not names or name in names)
        ):
            return True
    return False


def granted_to_group(objects: Iterable[Mapping[str, Any]], group: str) -> set[Permission]:
    """What members of the Kubernetes group `group` may do by the ClusterRoles and Roles defined
    in `objects` and bound there to that group (RoleBindings: in their namespace; a
    ClusterRoleBinding: cluster-wide). Rules narrowed by resourceNames are left out, as in
    `granted`."""
    objects = list(objects)
    roles = {(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj for obj in objects}
    permissions: set[Permission] = set()
    for binding in objects:
        if binding["kind"] not in {"RoleBinding", "ClusterRoleBinding"}:
            continue
        if not any(s.get("kind") == "Group" and s.get("name") == group for s in binding.get("subjects") or ()):
            continue
        namespace = binding["metadata"].get("namespace")
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"])) or {}
        permissions |= {
            Permission(verb=verb, group=api_group, resource=resource, namespace=namespace)
            for rule in role.get("rules") or ()
            if not rule.get("resourceNames")
            for api_group in rule.get("apiGroups") or ()
            for resource in rule.get("resources") or ()
            for verb in rule.get("verbs") or ()
        }
    return permissions
