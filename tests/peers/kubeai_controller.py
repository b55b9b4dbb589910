"""KubeAI's own controller (scripts/toolchain/build.sh) running against a test API server with the
configuration the program's KubeAI HelmRelease renders.

`helm template` of the vendored chart with the release's merged values (tests/peers/kubeai_chart.py)
gives every object KubeAI's Deployment runs with: the `kubeai-config` ConfigMap (system.yaml), the
autoscaler's state ConfigMap, the ServiceAccount, the Role and the RoleBinding. They are applied
into one namespace, and the controller runs as a process, as that ServiceAccount (a token from the
TokenRequest API), with `POD_NAMESPACE` and `CONFIG_PATH` as the Deployment sets them. Two
changes to system.yaml, both addresses, because a process shares the host's ports where a Pod has
its own: the health and metrics endpoints listen on free loopback ports. KubeAI's OpenAI-compatible
server always listens on port 8000 of every address (internal/manager/run.go), so one controller
runs at a time on a machine; a second one fails at start, saying so in its log.

No kubelet runs here: the Pods KubeAI creates stay Pending until a test writes their status as a
kubelet would (tests/peers/kubelet.py). Its log is kept in the work directory; a failure prints
its last lines.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import yaml

from providers.kube import KubeAccess, KubeClient, ResourceKind, open_client
from tests.cluster.apiserver import (
    ADMIN_USER,
    ChildProcess,
    ClusterInfo,
    TestIdentity,
    free_ports,
    launch,
    wait_ready,
    wait_until_allowed,
)
from tests.toolchain import kubeai

JsonObject = dict[str, Any]

CONFIG_MAP_SUFFIX: Final = "-config"
SYSTEM_KEY: Final = "system.yaml"
STARTUP_SECONDS: Final = 60.0
TOKEN_SECONDS: Final = 3600
OPENAI_PORT: Final = 8000
"""KubeAI's OpenAI-compatible server, fixed in its code."""
APPLIED_KINDS: Final[Mapping[tuple[str, str], ResourceKind]] = {
    ("v1", "ConfigMap"): ResourceKind(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True),
    ("v1", "Secret"): ResourceKind(group="", version="v1", kind="Secret", plural="secrets", namespaced=True),
    ("v1", "ServiceAccount"): ResourceKind(
        group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", namespaced=True
    ),
    ("rbac.authorization.k8s.io/v1", "Role"): ResourceKind(
        group="rbac.authorization.k8s.io", version="v1", kind="Role", plural="roles", namespaced=True
    ),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ResourceKind(
        group="rbac.authorization.k8s.io", version="v1", kind="RoleBinding", plural="rolebindings", namespaced=True
    ),
}
"""What of the chart's render the controller's Pod needs around it. The Deployment and Service are
the controller itself; the CRD is installed from the vendored copy the chart's equals
(tests/peers/test_kubeai_chart.py)."""
FIELD_MANAGER: Final = "helm-controller"
REQUIRED_PERMISSIONS: Final = (
    ("list", "pods", ""),
    ("list", "models", "kubeai.org"),
    ("create", "leases", "coordination.k8s.io"),
)


@dataclass(frozen=True)
class KubeAIController:
    """The running controller: its process, namespace, the system.yaml it runs with."""

    process: ChildProcess
    namespace: str
    system: JsonObject
    health_port: int

    def log_tail(self, lines: int = 30) -> str:
        return self.process.log_tail(lines)


def chart_system(objects: Sequence[Mapping[str, Any]]) -> JsonObject:
    """system.yaml of the `<release>-config` ConfigMap the chart renders."""
    (config,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith(CONFIG_MAP_SUFFIX)]
    system: JsonObject = yaml.safe_load(config["data"][SYSTEM_KEY])
    return system


def service_account_name(objects: Sequence[Mapping[str, Any]]) -> str:
    """The ServiceAccount the chart's Deployment runs the controller as (the chart also renders
    the one of the model Pods)."""
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    return str(deployment["spec"]["template"]["spec"]["serviceAccountName"])


def _request_token(client: KubeClient, namespace: str, account: str) -> str:
    answer = client.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        },
        content_type="application/json",
    )
    return str(answer["status"]["token"])


def _service_account_kubeconfig(cluster: ClusterInfo, workdir: Path, user: str, token: str) -> Path:
    path = workdir / "kubeai.kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "test", "cluster": {"server": cluster.url, "certificate-authority": str(cluster.ca_file)}}
                ],
                "users": [{"name": user, "user": {"token": token}}],
                "contexts": [{"name": user, "context": {"cluster": "test", "user": user}}],
                "current-context": user,
            }
        )
    )
    path.chmod(0o600)
    return path


def _refuse_a_taken_api_port() -> None:
    """KubeAI exits at once when port 8000 is taken on any address; say so before starting it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("0.0.0.0", OPENAI_PORT))
        except OSError as error:
            raise RuntimeError(
                f"KubeAI's controller listens on port {OPENAI_PORT} of every address (fixed in its code), "
                f"and that port is taken here ({error}): stop what listens there (`ss -ltnp | grep :{OPENAI_PORT}`)"
            ) from error


@contextlib.contextmanager
def running_kubeai(
    cluster: ClusterInfo, workdir: Path, *, namespace: str, chart_objects: Sequence[Mapping[str, Any]]
) -> Iterator[KubeAIController]:
    """Apply the chart's objects the controller needs into `namespace` (which must exist), start
    the controller as the chart's ServiceAccount, yield once it answers /readyz, stop it on exit."""
    _refuse_a_taken_api_port()
    health, metrics = free_ports(2)
    system = chart_system(chart_objects) | {
        "healthAddress": f"127.0.0.1:{health}",
        "metricsAddr": f"127.0.0.1:{metrics}",
    }
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / SYSTEM_KEY
    config_path.write_text(yaml.safe_dump(system, sort_keys=False))
    account = service_account_name(chart_objects)
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as admin:
        for obj in chart_objects:
            kind = APPLIED_KINDS.get((obj["apiVersion"], obj["kind"]))
            if kind is not None:
                placed = {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}
                admin.apply(kind, placed, field_manager=FIELD_MANAGER)
        token = _request_token(admin, namespace, account)
    user = f"system:serviceaccount:{namespace}:{account}"
    identity = TestIdentity(
        name=user, token=token, groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}")
    )
    for verb, resource, group in REQUIRED_PERMISSIONS:
        wait_until_allowed(cluster, identity, verb=verb, resource=resource, namespace=namespace, group=group)
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "KUBECONFIG": str(_service_account_kubeconfig(cluster, workdir, user, token)),
        "POD_NAMESPACE": namespace,
        "CONFIG_PATH": str(config_path),
    }
    process = launch("kubeai", [str(kubeai())], workdir, env=environment)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{health}", timeout=2.0) as probe:
            wait_ready(process, probe, "/readyz", time.monotonic() + STARTUP_SECONDS)
        yield KubeAIController(process=process, namespace=namespace, system=system, health_port=health)
    finally:
        process.stop()
