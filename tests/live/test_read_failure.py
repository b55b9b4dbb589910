"""A read that fails mid-run stops the program before it declares anything (invariant 1)."""

from __future__ import annotations

import pytest

from cli.offline import RecordingMonitor, run_offline
from program import main as program
from providers.live_reader import SnapshotReadError
from tests.cluster.apiserver import READER_USER, ClusterInfo
from tests.live.world import CLUSTER_ROLE, CLUSTER_ROLE_BINDING, load, wait_until_rbac_says
from tests.planning.builders import activation, appliance

ROLE = "magicstick-test-reader"
_READ = ["get", "list"]


def _role(*, with_kustomizations: bool) -> dict:
    rules = [
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": _READ},
        {"apiGroups": [""], "resources": ["nodes", "configmaps", "pods"], "verbs": _READ},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": _READ},
        {"apiGroups": ["kubeai.org"], "resources": ["models"], "verbs": _READ},
        {"apiGroups": ["helm.toolkit.fluxcd.io"], "resources": ["helmreleases"], "verbs": _READ},
        {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes", "referencegrants"], "verbs": _READ},
        {"apiGroups": ["gateway.envoyproxy.io"], "resources": ["securitypolicies"], "verbs": _READ},
        {"apiGroups": ["appliance.magicstick.dev"], "resources": ["*"], "verbs": _READ},
        {"apiGroups": ["nfd.k8s-sigs.io"], "resources": ["nodefeatures"], "verbs": _READ},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices", "resourceclaims"], "verbs": _READ},
        {"apiGroups": ["pulumi.com"], "resources": ["stacks"], "verbs": ["get"]},
    ]
    if with_kustomizations:
        rules.append({"apiGroups": ["kustomize.toolkit.fluxcd.io"], "resources": ["kustomizations"], "verbs": _READ})
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": ROLE},
        "rules": rules,
    }


def _binding() -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": ROLE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": READER_USER}],
    }


@pytest.fixture
def reader_role(admin):
    """The reader's grants exist for this test only."""
    yield
    admin.delete(CLUSTER_ROLE_BINDING, ROLE)
    admin.delete(CLUSTER_ROLE, ROLE)


def _run_program(cluster: ClusterInfo, namespace: str, monitor: RecordingMonitor):
    config = {
        "kubeconfig": str(cluster.kubeconfig_path(READER_USER)),
        "systemNamespace": namespace,
        "now": "2026-01-01T00:00:00Z",
    }
    return run_offline(program.run, config, monitor=monitor)


def test_a_permission_revoked_between_runs_stops_the_next_run_before_any_resource_is_declared(
    clean_shared_namespaces, cluster: ClusterInfo, namespace, admin, reader_role
):
    load(
        admin,
        [
            dict(o, metadata={**o["metadata"], "namespace": namespace})
            for o in (appliance({"basis": True}), activation("kubeai"))
        ],
    )
    admin.apply(CLUSTER_ROLE, _role(with_kustomizations=True), field_manager="test-rbac")
    admin.apply(CLUSTER_ROLE_BINDING, _binding(), field_manager="test-rbac")
    kustomizations = {
        "user": READER_USER,
        "verb": "list",
        "group": "kustomize.toolkit.fluxcd.io",
        "resource": "kustomizations",
        "namespace": "flux-system",
    }
    wait_until_rbac_says(admin, allowed=True, **kustomizations)

    _, run = _run_program(cluster, namespace, RecordingMonitor())
    assert run.of_type("magicstick:index:Appliance")
    assert run.of_type("kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization")

    admin.apply(CLUSTER_ROLE, _role(with_kustomizations=False), field_manager="test-rbac")
    wait_until_rbac_says(admin, allowed=False, **kustomizations)
    monitor = RecordingMonitor()
    with pytest.raises(
        SnapshotReadError, match=r"reading Kustomization .* in namespace flux-system failed: 403 Forbidden"
    ):
        _run_program(cluster, namespace, monitor)
    assert monitor.registrations == []
