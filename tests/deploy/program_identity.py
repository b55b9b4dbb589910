"""Installing deploy/ into the test cluster and becoming its ServiceAccount.

The identity is the real one: a token the API server issues for the ServiceAccount through the
TokenRequest API (the test server signs service-account tokens), so authentication, the
ServiceAccount groups and RBAC are exactly those of the workspace pod in a real cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import httpx
import yaml

from api.crdgen import load_committed_crds
from providers.kinds import CRD
from providers.kube import KubeClient, ResourceKind
from tests.cluster.apiserver import ClusterInfo, TestIdentity, install_crds, wait_until_allowed
from tests.deploy.manifests import (
    SERVICE_ACCOUNT,
    SERVICE_ACCOUNT_GROUPS,
    SERVICE_ACCOUNT_USER,
    SYSTEM_NAMESPACE,
    Permission,
)

FIELD_MANAGER: Final = "magicstick-deploy-tests"
APPLIANCE_NAMESPACES: Final = (SYSTEM_NAMESPACE, "flux-system", "identity-system", "ai")
"""The namespaces the public base creates and the Roles live in."""
TOKEN_SECONDS: Final = 3600

NAMESPACE: Final = ResourceKind(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False)
_KINDS: Final = {
    ("v1", "ServiceAccount"): ResourceKind(
        group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True
    ),
    **{
        ("rbac.authorization.k8s.io/v1", kind): ResourceKind(
            group="rbac.authorization.k8s.io", version="v1", kind=kind, plural=plural, namespaced=namespaced
        )
        for kind, plural, namespaced in (
            ("ClusterRole", "clusterroles", False),
            ("ClusterRoleBinding", "clusterrolebindings", False),
            ("Role", "roles", True),
            ("RoleBinding", "rolebindings", True),
        )
    },
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
AUTH_DELEGATION: Final = (
    Permission(verb="create", group="authentication.k8s.io", resource="tokenreviews"),
    Permission(verb="create", group="authorization.k8s.io", resource="subjectaccessreviews"),
)
"""What the binding to the built-in system:auth-delegator role grants (the PKO workspace agent)."""


def ensure_namespaces(client: KubeClient, names: Iterable[str] = APPLIANCE_NAMESPACES) -> None:
    """Create each namespace unless it exists (an apply; other test suites share them)."""
    for name in names:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        client.apply(NAMESPACE, namespace, field_manager=FIELD_MANAGER)


def ensure_own_crds(cluster: ClusterInfo, client: KubeClient, directory: Path) -> list[str]:
    """Install the program's committed CRDs that the cluster lacks; returns the names installed."""
    missing = [crd for crd in load_committed_crds() if client.get_or_none(CRD, crd["metadata"]["name"]) is None]
    for crd in missing:
        (directory / f"{crd['metadata']['name']}.yaml").write_text(yaml.safe_dump(crd))
    if missing:
        install_crds(cluster, [directory])
    return [crd["metadata"]["name"] for crd in missing]


def apply_all(client: KubeClient, objects: Iterable[Mapping[str, Any]]) -> None:
    """Server-side apply every object, taking over fields another manager changed."""
    for obj in objects:
        client.apply(_KINDS[(obj["apiVersion"], obj["kind"])], obj, field_manager=FIELD_MANAGER, force=True)


def request_token(client: KubeClient, *, seconds: int = TOKEN_SECONDS) -> str:
    """A fresh token of the ServiceAccount from the TokenRequest API (audience: the API server)."""
    answer = client.request(
        "POST",
        f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}},
        content_type="application/json",
    )
    return str(answer["status"]["token"])


def service_account_identity(token: str) -> TestIdentity:
    """The ServiceAccount as the test cluster helpers address an identity."""
    return TestIdentity(name=SERVICE_ACCOUNT_USER, token=token, groups=SERVICE_ACCOUNT_GROUPS)


def wait_until_granted(cluster: ClusterInfo, identity: TestIdentity, permissions: Iterable[Permission]) -> None:
    """Wait until the authorizer's cache allows every permission (bindings take effect a moment late).

    One pass over a single connection first; only what is not allowed yet is waited for.
    """
    with cluster.client() as client:
        pending = [permission for permission in permissions if not is_allowed(client, identity, permission)]
    for permission in pending:
        wait_until_allowed(
            cluster,
            identity,
            verb=permission.verb,
            resource=permission.resource,
            namespace=permission.namespace,
            group=permission.group,
        )


def is_allowed(admin: httpx.Client, identity: TestIdentity, permission: Permission) -> bool:
    """The authorizer's answer right now, by a SubjectAccessReview sent with `admin`."""
    attributes = {"verb": permission.verb, "group": permission.group, "resource": permission.resource}
    if permission.namespace is not None:
        attributes["namespace"] = permission.namespace
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": identity.name, "groups": list(identity.groups), "resourceAttributes": attributes},
    }
    answer = admin.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
    answer.raise_for_status()
    return bool(answer.json().get("status", {}).get("allowed"))
