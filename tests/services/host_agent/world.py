"""The host agent as installed, against the test API server, with a fake root.

- The program's CRDs and the agent's identity (magic-cluster/platform/host-agent/: its
  ServiceAccount, RBAC and admission policy) are installed as they ship.
- Each test gets a Node of its own (a unique name, its own boot ID and kernel in status) and a
  kubeconfig holding a token the API server issued for the agent's ServiceAccount, bound to
  that Node (TokenRequest with a boundObjectRef): the identity install.sh gives a node.
- The agent runs from its console script (`python -m services.host_agent.main serve`) with
  `--root` at a fake host (fake_host.py). Host commands go to recording stand-ins first on
  PATH: each appends its argv to a log and exits 0, so the test reads what the agent asked.
- Waiting is on events: a watch of the HostOperation, bounded by a deadline.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from api.meta import API_VERSION, GROUP
from providers.kinds import HOST_OPERATION, NODE
from providers.kube import KubeClient, ResourceKind
from services.host_agent.cluster import AgentCluster
from services.readiness import NOTIFY_SOCKET
from tests.cluster.apiserver import ClusterInfo, TestIdentity
from tests.deploy.manifests import Permission
from tests.deploy.program_identity import NAMESPACE as NAMESPACE_KIND
from tests.deploy.program_identity import apply_all, ensure_namespaces, ensure_own_crds, wait_until_granted
from tests.services.host_agent.fake_host import FakeHost, strix_halo
from tests.support.processes import stop_process

REPO_ROOT = Path(__file__).resolve().parents[3]
IDENTITY_DIR = REPO_ROOT / "magic-cluster" / "platform" / "host-agent"
NAMESPACE = "ai-system"
SERVICE_ACCOUNT = "magicstick-host-agent"
NETWORK_NAMESPACE = "magicstick-host-network"
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
START_DEADLINE_SECONDS = 30.0
WAIT_SECONDS = 30
HOST_COMMANDS = ("systemctl", "modprobe")
_SERIALS = itertools.count(1)


def _documents(path: Path) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


AGENT_IDENTITY = TestIdentity(
    name=f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}",
    token="",
    groups=("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"),
)
AGENT_PERMISSIONS = (
    Permission(verb="patch", group="", resource="nodes"),
    Permission(verb="get", group="", resource="secrets", namespace=NETWORK_NAMESPACE),
    Permission(verb="list", group=GROUP, resource="hostoperations", namespace=NAMESPACE),
    Permission(verb="patch", group=GROUP, resource="hostoperations/status", namespace=NAMESPACE),
    Permission(verb="create", group=GROUP, resource="appliancesetups", namespace="identity-system"),
    Permission(verb="patch", group=GROUP, resource="appliancesetups/status", namespace="identity-system"),
)


def install(cluster: ClusterInfo, admin: KubeClient, workdir: Path) -> None:
    """The program's CRDs and the agent's identity, as the repository ships them; returns once
    the authorizer grants what the agent needs."""
    ensure_namespaces(admin)
    for namespace in _documents(IDENTITY_DIR / "namespace.yaml"):
        admin.apply(NAMESPACE_KIND, namespace, field_manager="kubectl")
    ensure_own_crds(cluster, admin, workdir)
    for name in ("serviceaccount.yaml", "rbac.yaml", "admission-policy.yaml"):
        apply_all(admin, _documents(IDENTITY_DIR / name))
    wait_until_granted(cluster, AGENT_IDENTITY, AGENT_PERMISSIONS)


def create_node(
    admin: KubeClient,
    name: str,
    *,
    boot_id: str,
    kernel: str,
    labels: Mapping[str, str] | None = None,
    resources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Node as a kubelet registers it: its boot ID and kernel in status.nodeInfo (and NFD's labels).
    Each is a control-plane node, as a single-node appliance's is (only such a node's agent may
    create ApplianceSetup/local)."""
    metadata = {"name": name, "labels": {CONTROL_PLANE: "", **(labels or {})}}
    created = admin.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": metadata}, field_manager="kubelet")
    status: dict[str, Any] = {
        "nodeInfo": {"bootID": boot_id, "kernelVersion": kernel, "architecture": "amd64", "operatingSystem": "linux"}
    }
    if resources:
        status |= {"capacity": dict(resources), "allocatable": dict(resources)}
    admin.request(
        "PATCH",
        NODE.object_path(name) + "/status",
        body={"status": status},
        content_type="application/merge-patch+json",
    )
    return created


def node_bound_token(admin: KubeClient, node: Mapping[str, Any], *, seconds: int = 7200) -> str:
    """A token of the agent's ServiceAccount bound to `node`, requested as install.sh does (by the admin)."""
    cluster = AgentCluster(
        admin, node_name=str(node["metadata"]["name"]), namespace=NAMESPACE, setup_namespace="identity-system"
    )
    return cluster.node_bound_token(
        namespace=NAMESPACE, service_account=SERVICE_ACCOUNT, seconds=seconds, node=dict(node)
    )


def write_kubeconfig(cluster: ClusterInfo, token: str, path: Path) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "test", "cluster": {"server": cluster.url, "certificate-authority": str(cluster.ca_file)}}
        ],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "host-agent", "context": {"cluster": "test", "user": SERVICE_ACCOUNT}}],
        "current-context": "host-agent",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def recording_tools(directory: Path, log: Path) -> Path:
    """Stand-ins for the host commands: each appends its name and arguments to `log`."""
    directory.mkdir(parents=True, exist_ok=True)
    for command in HOST_COMMANDS:
        script = directory / command
        script.write_text(f'#!/bin/sh\necho "{command} $*" >> "{log}"\n')
        script.chmod(0o755)
    return directory


@dataclass
class AgentWorld:
    cluster: ClusterInfo
    admin: KubeClient
    node: dict[str, Any]
    host: FakeHost
    kubeconfig: Path
    tools: Path
    command_log: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def node_name(self) -> str:
        return str(self.node["metadata"]["name"])

    @property
    def node_uid(self) -> str:
        return str(self.node["metadata"]["uid"])

    @property
    def boot_id(self) -> str:
        return (self.host.root / "proc/sys/kernel/random/boot_id").read_text().strip()

    def argv(self, command: str) -> list[str]:
        return [
            sys.executable, "-m", "services.host_agent.main", command,
            "--root", str(self.host.root), "--node-name", self.node_name, "--kubeconfig", str(self.kubeconfig),
            "--poll-seconds", "0.2", "--confirmation-seconds", "30",
        ]  # fmt: skip

    def environment(self, failpoint: str | None = None) -> dict[str, str]:
        env = {
            **os.environ,
            "PATH": f"{self.tools}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(REPO_ROOT),
        }
        env.pop("MAGICSTICK_HOST_AGENT_FAILPOINT", None)
        if failpoint is not None:
            env["MAGICSTICK_HOST_AGENT_FAILPOINT"] = failpoint
        return env

    def publish_evidence(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv("evidence"), env=self.environment(), capture_output=True, text=True, timeout=60, check=False
        )

    def start(self, *, failpoint: str | None = None) -> subprocess.Popen[bytes]:
        """`serve`, once it said READY=1 (or, with a failpoint, started: it may die before)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as channel:
            address = str(self.host.root.parent / f"notify-{next(_SERIALS)}.sock")
            channel.bind(address)
            env = {**self.environment(failpoint), NOTIFY_SOCKET: address}
            log = open(self.host.root.parent / "agent.log", "ab")  # noqa: SIM115 - the process owns it
            process = subprocess.Popen(self.argv("serve"), env=env, stdout=log, stderr=subprocess.STDOUT)
            log.close()
            self.processes.append(process)
            if failpoint is None:
                channel.settimeout(START_DEADLINE_SECONDS)
                try:
                    assert channel.recv(64) == b"READY=1"
                except TimeoutError:
                    raise AssertionError(f"the agent did not say READY=1:\n{self.log_text()}") from None
        return process

    def log_text(self) -> str:
        path = self.host.root.parent / "agent.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        for process in self.processes:
            stop_process(process, grace_seconds=10)
        self.processes.clear()

    def commands(self) -> list[str]:
        return self.command_log.read_text().splitlines() if self.command_log.exists() else []

    def object_name(self, name: str) -> str:
        """Operations of every test share the namespace: each world's names start with its node's."""
        return f"{self.node_name}-{name}"

    def request(self, name: str, action: str, **spec: Any) -> dict[str, Any]:
        """A HostOperation bound to this world's node and boot; its request ID is unique in the
        session (a request ID already carried by another operation is refused)."""
        body = {
            "action": action,
            "nodeName": self.node_name,
            "nodeUID": self.node_uid,
            "bootID": self.boot_id,
            "requestID": f"{self.object_name(name)}-request",
            "acknowledgeDisruption": True,
            **spec,
        }
        obj = {
            "apiVersion": API_VERSION,
            "kind": "HostOperation",
            "metadata": {"name": self.object_name(name), "namespace": NAMESPACE},
            "spec": body,
        }
        return self.admin.create(HOST_OPERATION, obj, field_manager="test-administrator")

    def operation(self, name: str) -> dict[str, Any]:
        return self.admin.get(HOST_OPERATION, self.object_name(name), NAMESPACE)

    def node_now(self) -> dict[str, Any]:
        return self.admin.get(NODE, self.node_name)

    def wait_for(
        self, name: str, until: Callable[[dict[str, Any]], bool], *, process: subprocess.Popen[bytes] | None = None
    ) -> dict[str, Any]:
        """The HostOperation once `until(status)` holds."""
        return self.watch_until(
            HOST_OPERATION,
            NAMESPACE,
            self.object_name(name),
            lambda obj: obj is not None and until(obj.get("status") or {}),
            process=process,
        )

    def watch_until(
        self,
        kind: ResourceKind,
        namespace: str,
        name: str,
        until: Callable[[dict[str, Any] | None], bool],
        *,
        process: subprocess.Popen[bytes] | None = None,
    ) -> dict[str, Any]:
        """The object once `until(object or None)` holds, watching the namespace's changes of that kind;
        fails when nothing changes for WAIT_SECONDS or the agent exits."""
        collection = self.admin.list_collection(kind, namespace=namespace)
        current = next((obj for obj in collection.items if obj["metadata"]["name"] == name), None)
        version = collection.resource_version
        while not until(current):
            if process is not None and process.poll() is not None:
                raise AssertionError(f"the agent exited with {process.returncode}:\n{self.log_text()}")
            changed = False
            with self.admin.watch(
                kind, namespace=namespace, resource_version=version, timeout_seconds=WAIT_SECONDS
            ) as stream:
                for event in stream:
                    version = event.resource_version or version
                    if event.type.value != "BOOKMARK" and (event.object.get("metadata") or {}).get("name") == name:
                        current, changed = (None if event.type.value == "DELETED" else event.object), True
                        break
            if not changed:
                raise AssertionError(
                    f"{kind.kind} {name} did not change within {WAIT_SECONDS} s: {current}\n{self.log_text()}"
                )
        assert current is not None
        return current


def new_world(
    cluster: ClusterInfo,
    admin: KubeClient,
    workdir: Path,
    *,
    name: str,
    labels: Mapping[str, str] | None = None,
    resources: Mapping[str, str] | None = None,
) -> Iterator[AgentWorld]:
    """A Node `name`, its fake Strix Halo host and the agent's kubeconfig for it; agents stopped after."""
    host = strix_halo(workdir / "root", boot_id=f"boot-{name}")
    kernel = (host.root / "proc/sys/kernel/osrelease").read_text().strip()
    node = create_node(admin, name, boot_id=f"boot-{name}", kernel=kernel, labels=labels, resources=resources)
    kubeconfig = write_kubeconfig(cluster, node_bound_token(admin, node), workdir / "kubeconfig")
    log = workdir / "commands.log"
    world = AgentWorld(cluster, admin, node, host, kubeconfig, recording_tools(workdir / "tools", log), log)
    try:
        yield world
    finally:
        world.stop()
