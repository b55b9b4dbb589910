"""The dashboard as deployed, against the test API server, with a test issuer.

- The program's CRDs, deploy/'s role RBAC and admission policy, and the dashboard base's
  ServiceAccount and impersonation RBAC (magic-cluster/platform/dashboard/rbac.yaml) are
  installed as they ship.
- The dashboard runs from its console script (`python -m services.dashboard.main`), with a
  kubeconfig holding a token the API server issued for its ServiceAccount (TokenRequest): it
  can do nothing but impersonate, so every answer below is the API server's own decision.
- Envoy's part, forwarding the signed-in user's ID token, is played by the test client: it sends
  a token the test issuer signed in the header Envoy would set.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from providers.kinds import APP_INSTANCE, HOST_OPERATION, MODEL_ACTIVATION, MODULE_ACTIVATION, NODE
from providers.kube import KubeClient, RetryPolicy
from services.readiness import NOTIFY_SOCKET
from tests.cluster.apiserver import ClusterInfo, TestIdentity
from tests.deploy.manifests import Permission
from tests.deploy.program_identity import apply_all, ensure_namespaces, ensure_own_crds, wait_until_granted
from tests.services.access_guard.issuer import AUDIENCE, ISSUER, IssuerKeys, JwksServer
from tests.services.access_guard.process import free_port, wait_until_ready
from tests.support.processes import stop_process

REPO_ROOT = Path(__file__).resolve().parents[3]
NAMESPACE = "ai-system"
SERVICE_ACCOUNT = "magicstick-dashboard"
TOKEN_HEADER = "X-Magicstick-Id-Token"
START_DEADLINE_SECONDS = 30.0
MANIFESTS = (
    REPO_ROOT / "deploy" / "rbac-administrators.yaml",
    REPO_ROOT / "magic-cluster" / "platform" / "admission" / "admission-policy.yaml",
    REPO_ROOT / "magic-cluster" / "platform" / "dashboard" / "rbac.yaml",
)
ROLES = {"admin": "alice", "operator": "oscar", "user": "ursula", "viewer": "victor"}
"""Each dashboard role and the subject of its test user."""


def _documents(path: Path) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def install(cluster: ClusterInfo, admin: KubeClient, workdir: Path) -> None:
    """Everything the dashboard needs in the cluster, as the repository ships it."""
    ensure_namespaces(admin)
    ensure_own_crds(cluster, admin, workdir)
    for manifest in MANIFESTS:
        apply_all(admin, _documents(manifest))


def service_account_kubeconfig(cluster: ClusterInfo, admin: KubeClient, path: Path) -> Path:
    answer = admin.request(
        "POST",
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 7200}},
        content_type="application/json",
    )
    token = str(answer["status"]["token"])
    identity = TestIdentity(name=f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}", token=token, groups=())
    wait_until_granted(cluster, identity, [Permission(verb="impersonate", group="", resource="users")])
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "test", "cluster": {"server": cluster.url, "certificate-authority": str(cluster.ca_file)}}
        ],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "dashboard", "context": {"cluster": "test", "user": SERVICE_ACCOUNT}}],
        "current-context": "dashboard",
    }
    path.write_text(yaml.safe_dump(config))
    return path


@dataclass
class Dashboard:
    process: subprocess.Popen[bytes]
    url: str
    log: Path
    keys: IssuerKeys

    def token(self, role: str, **claims: Any) -> str:
        return self.keys.token(sub=ROLES[role], roles=[role], **claims)

    def headers(self, role: str) -> dict[str, str]:
        return {TOKEN_HEADER: self.token(role)}

    def client(self, role: str | None = None) -> httpx.Client:
        headers = self.headers(role) if role is not None else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=15)

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        return stop_process(self.process, grace_seconds=10)


def start_dashboard(
    *, kubeconfig: Path, jwks: JwksServer, keys: IssuerKeys, log: Path, env: Mapping[str, str] | None = None
) -> Dashboard:
    """The console script on a free loopback port, once it says READY=1 and /healthz answers."""
    port = free_port()
    arguments = [
        "--issuer", ISSUER,
        "--audience", AUDIENCE,
        "--jwks-uri", jwks.uri,
        "--listen", f"127.0.0.1:{port}",
        "--kubeconfig", str(kubeconfig),
        "--system-namespace", NAMESPACE,
        "--log-level", "warning",
    ]  # fmt: skip
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as channel:
        name = f"magicstick-dashboard-test-{os.getpid()}-{port}"
        channel.bind("\0" + name)
        with log.open("wb") as stream:
            process = subprocess.Popen(
                [sys.executable, "-m", "services.dashboard.main", *arguments],
                cwd=REPO_ROOT,
                env={**os.environ, **(env or {}), NOTIFY_SOCKET: "@" + name},
                stdout=stream,
                stderr=subprocess.STDOUT,
            )
        dashboard = Dashboard(process=process, url=f"http://127.0.0.1:{port}", log=log, keys=keys)
        wait_until_ready(dashboard, channel, name="the dashboard", deadline=START_DEADLINE_SECONDS)
    return dashboard


@dataclass(frozen=True)
class World:
    cluster: ClusterInfo
    admin: KubeClient
    dashboard: Dashboard


def running_world(cluster: ClusterInfo, workdir: Path) -> Iterator[World]:
    """The installed cluster and a running dashboard (a generator for fixtures)."""
    keys = IssuerKeys()
    jwks = JwksServer(keys)
    jwks.start()
    with cluster.client() as http:
        admin = KubeClient(http, retry=RetryPolicy(attempts=3))
        install(cluster, admin, workdir)
        kubeconfig = service_account_kubeconfig(cluster, admin, workdir / "dashboard.kubeconfig")
        dashboard = start_dashboard(kubeconfig=kubeconfig, jwks=jwks, keys=keys, log=workdir / "dashboard.log")
        try:
            yield World(cluster=cluster, admin=admin, dashboard=dashboard)
        finally:
            dashboard.stop()
            jwks.stop()


RUNTIME_KINDS = (MODULE_ACTIVATION, MODEL_ACTIVATION, APP_INSTANCE, HOST_OPERATION)
"""What the dashboard writes."""


def held(world: World) -> dict[tuple[str, str], str]:
    """Every runtime request of the system namespace with its resourceVersion: the same before
    and after a request means the request wrote nothing."""
    return {
        (kind.kind, item["metadata"]["name"]): item["metadata"]["resourceVersion"]
        for kind in RUNTIME_KINDS
        for item in world.admin.list(kind, namespace=NAMESPACE)
    }


def registered_node(admin: KubeClient, name: str) -> dict[str, Any]:
    """The Node `name` as a kubelet registers it: its UID, and a boot ID in its status (made
    once, then read)."""
    if admin.get_or_none(NODE, name) is None:
        admin.create(
            NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}, field_manager="kubelet-test"
        )
        status = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"nodeInfo": {"bootID": "boot-0001"}},
        }
        admin.apply(NODE, status, field_manager="kubelet-test", subresource="status")
    return admin.get(NODE, name)
