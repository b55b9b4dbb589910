"""Fixtures: deploy/ installed into the test cluster, and the program's ServiceAccount.

- `appliance_cluster` (session): the shared test cluster with the appliance namespaces and the
  program's own CRDs, each created only when absent.
- `program_identity` (function): applies deploy/serviceaccount.yaml and deploy/rbac.yaml (which
  also restores anything an earlier test revoked), issues a fresh ServiceAccount token through
  the TokenRequest API and waits until every granted permission is in effect.
- `program_access` (function): a `KubeAccess` for that identity, as the program's code takes it;
  `program` is an open `KubeClient` on it, `admin` one for the cluster admin.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from providers.kube import KubeAccess, KubeClient, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo, TestIdentity
from tests.deploy.manifests import documents, granted
from tests.deploy.program_identity import (
    AUTH_DELEGATION,
    apply_all,
    ensure_namespaces,
    ensure_own_crds,
    request_token,
    service_account_identity,
    wait_until_granted,
)


@pytest.fixture(scope="session")
def appliance_cluster(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> ClusterInfo:
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as client:
        ensure_namespaces(client)
        ensure_own_crds(cluster, client, tmp_path_factory.mktemp("own-crds"))
    return cluster


@pytest.fixture
def admin(appliance_cluster: ClusterInfo) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(appliance_cluster.kubeconfig_path(ADMIN_USER)))) as client:
        yield client


@pytest.fixture
def program_identity(appliance_cluster: ClusterInfo, admin: KubeClient) -> TestIdentity:
    objects = [*documents("serviceaccount.yaml"), *documents("rbac.yaml")]
    apply_all(admin, objects)
    identity = service_account_identity(request_token(admin))
    wait_until_granted(appliance_cluster, identity, [*granted(objects), *AUTH_DELEGATION])
    return identity


@pytest.fixture
def program_access(appliance_cluster: ClusterInfo, program_identity: TestIdentity) -> KubeAccess:
    return KubeAccess(kubeconfig=str(appliance_cluster.kubeconfig_path(program_identity)))


@pytest.fixture
def program(program_access: KubeAccess) -> Iterator[KubeClient]:
    with open_client(program_access) as client:
        yield client
