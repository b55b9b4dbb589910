"""`kubectl apply -k deploy/ --dry-run=server`, on the test API server with the Pulumi Kubernetes
Operator's CRDs installed: every object the kustomization builds is accepted as it is."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from providers.kube import KubeClient, ResourceKind
from tests.live.world import ensure_namespace
from tests.support.vendored import REPOSITORY_ROOT as REPO_ROOT

KUBECTL = shutil.which("kubectl")

KINDS = {
    ("v1", "ServiceAccount"): ResourceKind(
        group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True
    ),
    ("v1", "Namespace"): ResourceKind(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False),
    ("v1", "PersistentVolumeClaim"): ResourceKind(
        group="", version="v1", kind="PersistentVolumeClaim", plural="persistentvolumeclaims", namespaced=True
    ),
    ("apps/v1", "Deployment"): ResourceKind(
        group="apps", version="v1", kind="Deployment", plural="deployments", namespaced=True
    ),
    ("pulumi.com/v1", "Stack"): ResourceKind(
        group="pulumi.com", version="v1", kind="Stack", plural="stacks", namespaced=True
    ),
    **{
        ("rbac.authorization.k8s.io/v1", kind): ResourceKind(
            group="rbac.authorization.k8s.io",
            version="v1",
            kind=kind,
            plural=kind.lower() + "s",
            namespaced=not kind.startswith("Cluster"),
        )
        for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
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


def built() -> list[dict]:
    assert KUBECTL is not None, "kubectl (with kustomize) is needed; see README, Tests"
    answer = subprocess.run(
        [KUBECTL, "kustomize", str(REPO_ROOT / "deploy")], capture_output=True, text=True, check=False
    )
    assert answer.returncode == 0, answer.stderr
    return [doc for doc in yaml.safe_load_all(answer.stdout) if doc]


@pytest.mark.parametrize(
    "obj", built(), ids=lambda o: f"{o['kind']}/{o['metadata'].get('namespace', '-')}/{o['metadata']['name']}"
)
def test_every_object_of_the_deploy_kustomization_passes_a_server_side_dry_run(obj, admin: KubeClient):
    kind = KINDS[(obj["apiVersion"], obj["kind"])]
    namespace = obj["metadata"].get("namespace")
    if namespace:
        ensure_namespace(admin, namespace)
    answered = admin.apply(kind, obj, field_manager="kubectl", dry_run=True)
    assert answered["metadata"]["name"] == obj["metadata"]["name"]
