"""One real node for the test API server: the kubelet and kube-proxy built from Go modules
(tests/toolchain.py), Debian's containerd and runc, and a bridge network from Debian's CNI plugins.

- containerd runs with its own root, state and socket below the node's directory (nothing of
  the host's own containerd, if any, is used). `restrict_oom_score_adj` is set: the machines
  this runs on withhold CAP_SYS_RESOURCE, so a negative oom_score_adj (containerd gives the
  sandbox -998) is refused by the kernel, and runc fails with "can't get final child's PID from
  pipe: EOF"; restricted, every container gets at least containerd's own score.
- The kubelet: the cgroupfs driver, swap allowed, cgroup v1 allowed (`failCgroupV1: false`: these
  machines mount v1), no TLS bootstrap: a client certificate the test client CA signs, as
  `system:node:<name>` in `system:nodes`, which the ClusterRole `system:node` is bound to (the
  test server authorizes by RBAC alone, without the Node authorizer).
- Images come from no registry: a busybox rootfs (Debian's busybox-static) is made an OCI image
  with umoci and imported with `ctr -n k8s.io images import`; it is also the sandbox image.
  Pods name it with `imagePullPolicy: Never`. The images of scripts/images/build.sh
  (tests/images.py) are imported the same way, under the digest tag they were built with, so a
  Pod naming one with the default pull policy (IfNotPresent) finds it and pulls nothing.

- kube-proxy in iptables mode, as `system:kube-proxy` (bound to `system:node-proxier` by the
  server's default policy): it routes Service addresses, the `kubernetes` Service among them, so
  a Pod reaches the API server as any in-cluster client does. It sets no sysctl it need not
  (conntrack limits, route_localnet), and serves no health or metrics port.
- Cluster DNS: CoreDNS (tests/toolchain.py) on the node's address, port 53, with a cluster's
  Corefile (the `kubernetes` plugin for `cluster.local`, the rest forwarded), reading the API
  server as `system:coredns` with the rights of CoreDNS's own ClusterRole. The kubelet names it as
  `clusterDNS`, so Pods resolve Service names (`<service>.<namespace>`) as on any cluster; the
  Pulumi Kubernetes Operator reaches its workspace pods that way.

Teardown deletes every Pod of the node through the API server (the kubelet stops them), stops
kube-proxy (and removes its rules with `kube-proxy --cleanup`), the kubelet and containerd, and
removes what a crash could leave: shims, mounts, the bridge.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from providers.kinds import NODE, POD
from providers.kube import KubeAccess, KubeClient, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.images import LocalImage
from tests.support.processes import stop_process
from tests.toolchain import coredns, kube_proxy, kubelet

HOST_PARTS: Final = {
    "containerd": "/usr/bin/containerd",
    "ctr": "/usr/bin/ctr",
    "runc": "/usr/sbin/runc",
    "bridge CNI plugin": "/usr/lib/cni/bridge",
    "umoci": "/usr/bin/umoci",
    "busybox": "/bin/busybox",
}
"""Debian's packages containerd, runc, containernetworking-plugins, umoci and busybox-static."""
BRIDGE: Final = "cni-mstest0"
POD_SUBNET: Final = "10.213.0.0/24"
IMAGE_REPOSITORY: Final = "localhost/magicstick-test/busybox"
READY_SECONDS: Final = 120
RBAC: Final = "rbac.authorization.k8s.io"
CLUSTER_DOMAIN: Final = "cluster.local"
DNS_USER: Final = "system:coredns"
NODE_CONTROLLERS: Final = (
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "persistentvolume-binder-controller",
    "persistentvolumeclaim-protection-controller",
    "persistentvolume-protection-controller",
    "serviceaccount-controller",
    "root-ca-certificate-publisher-controller",
    "endpointslice-controller",
    "disruption-controller",
    "node-lifecycle-controller",
    "garbagecollector",
    "namespace",
)
"""The kube-controller-manager controllers the node's cluster runs (tests/node/conftest.py says why)."""


class NodeSetupError(Exception):
    """A part of the node is missing or did not start; the message says which and how to get it."""


def missing_host_parts() -> list[str]:
    return [f"{name} ({path})" for name, path in HOST_PARTS.items() if not os.access(path, os.X_OK)]


@dataclass(frozen=True)
class RealNode:
    name: str
    image: str
    """The busybox image every Pod of the tests runs (imagePullPolicy Never)."""
    admin: KubeClient
    pod_logs: Path
    """The kubelet's podLogsDir: `<namespace>_<pod>_<uid>/<container>/<restart>.log` (it serves no logs API here)."""

    def log_tail(self, namespace: str, pod: str, *, lines: int = 20) -> str:
        """The last lines each container of the Pod wrote, from the kubelet's log files."""
        found = sorted(self.pod_logs.glob(f"{namespace}_{pod}_*/*/*.log"))
        return "\n".join(
            f"{path.relative_to(self.pod_logs)}:\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
            for path in found
        )


def _run(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode != 0:
        raise NodeSetupError(f"`{' '.join(argv)}` exited with {done.returncode}: {done.stderr.strip()[-800:]}")
    return done.stdout


def busybox_image(workdir: Path) -> tuple[Path, str]:
    """An OCI archive of a busybox rootfs, and the tag it is imported as (its content's digest)."""
    layout, bundle = workdir / "oci", workdir / "bundle"
    _run("umoci", "init", "--layout", str(layout))
    _run("umoci", "new", "--image", f"{layout}:busybox")
    _run("umoci", "unpack", "--image", f"{layout}:busybox", str(bundle))
    binaries = bundle / "rootfs" / "bin"
    binaries.mkdir(parents=True, exist_ok=True)
    shutil.copy2(HOST_PARTS["busybox"], binaries / "busybox")
    for applet in ("sh", "sleep", "echo", "cat", "test"):
        (binaries / applet).symlink_to("busybox")
    _run("umoci", "repack", "--image", f"{layout}:busybox", str(bundle))
    _run(
        "umoci",
        "config",
        "--image",
        f"{layout}:busybox",
        "--config.entrypoint",
        "/bin/sleep",
        "--config.cmd",
        "infinity",
    )
    index = json.loads((layout / "index.json").read_text())
    digest = str(index["manifests"][0]["digest"]).removeprefix("sha256:")
    archive = workdir / "busybox.tar"
    _run("tar", "-C", str(layout), "-cf", str(archive), ".")
    return archive, f"{IMAGE_REPOSITORY}:{digest[:20]}"


def _containerd_config(directory: Path, sandbox_image: str) -> str:
    return f"""version = 2
root = "{directory}/root"
state = "{directory}/state"
[grpc]
  address = "{directory}/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{sandbox_image}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{directory}/cni"
"""


def _cni_config() -> str:
    return json.dumps(
        {
            "cniVersion": "0.4.0",
            "name": "magicstick-test",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,
                    "ipMasq": False,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                    },
                }
            ],
        }
    )


def _kubelet_config(cluster: ClusterInfo, socket: Path, workdir: Path, dns: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cgroupDriver": "cgroupfs",
        "failSwapOn": False,
        "failCgroupV1": False,
        "containerRuntimeEndpoint": f"unix://{socket}",
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(cluster.client_ca_file)},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "port": 0,
        "readOnlyPort": 0,
        "healthzPort": 0,
        "podLogsDir": str(workdir / "pod-logs"),
        "evictionHard": {"nodefs.available": "1%", "imagefs.available": "1%", "memory.available": "100Mi"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "resolvConf": "/etc/resolv.conf",
        "clusterDNS": [dns],
        "clusterDomain": CLUSTER_DOMAIN,
    }


def _corefile(address: str, kubeconfig: Path) -> str:
    """The Corefile of a cluster's DNS: Service and Pod names from the API server, the rest forwarded."""
    return f""".:53 {{
    bind {address}
    errors
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 5
    forward . /etc/resolv.conf
}}
"""


def _bind_dns(admin: KubeClient) -> None:
    """What CoreDNS's own ClusterRole grants it: read Services, EndpointSlices, Pods and Namespaces."""
    role = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": DNS_USER},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["endpoints", "services", "pods", "namespaces"],
                "verbs": ["list", "watch"],
            },
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
        ],
    }
    binding = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": DNS_USER},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": DNS_USER},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": DNS_USER}],
    }
    for plural, body in (("clusterroles", role), ("clusterrolebindings", binding)):
        admin.request("PATCH", f"/apis/{RBAC}/v1/{plural}/{DNS_USER}", params={"fieldManager": "tests", "force": "true"},
                      body=body, content_type="application/apply-patch+yaml")  # fmt: skip


def _kube_proxy_config(kubeconfig: Path, name: str) -> dict[str, Any]:
    """iptables mode; no serving port; no sysctl it need not set (conntrack limits, route_localnet)."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": name,
        "mode": "iptables",
        "clusterCIDR": POD_SUBNET,
        "healthzBindAddress": "",
        "metricsBindAddress": "",
        "iptables": {"localhostNodePorts": False},
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }


def node_ip() -> str:
    """The host's first IPv4 address other than loopback: the node's, and where its Pods reach the API server."""
    for address in _run("hostname", "-I").split():
        if "." in address and not address.startswith("127."):
            return address
    raise NodeSetupError("the host has no IPv4 address other than loopback for the node")


def _wait_ready(admin: KubeClient, name: str, kubelet_process: subprocess.Popen[bytes], log: Path) -> None:
    collection = admin.list_collection(NODE)
    version = collection.resource_version
    if any(_ready(node) for node in collection.items if node["metadata"]["name"] == name):
        return
    while True:
        if kubelet_process.poll() is not None:
            raise NodeSetupError(f"the kubelet exited with {kubelet_process.returncode}:\n{log.read_text()[-3000:]}")
        seen = False
        with admin.watch(NODE, resource_version=version, timeout_seconds=READY_SECONDS) as stream:
            for event in stream:
                version = event.resource_version or version
                if (event.object.get("metadata") or {}).get("name") == name:
                    seen = True
                    if _ready(event.object):
                        return
        if not seen:
            raise NodeSetupError(
                f"node {name} did not become Ready within {READY_SECONDS} s:\n{log.read_text()[-3000:]}"
            )


def _ready(node: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or ()
    )


def _bind_nodes(admin: KubeClient) -> None:
    binding = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "magicstick-test-nodes"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "system:node"},
        "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "system:nodes"}],
    }
    admin.request("PATCH", f"/apis/{RBAC}/v1/clusterrolebindings/magicstick-test-nodes", params={"fieldManager": "tests", "force": "true"},
                  body=binding, content_type="application/apply-patch+yaml")  # fmt: skip


def _delete_pods(admin: KubeClient, name: str) -> None:
    pods = (
        admin.request("GET", POD.collection_path(), params={"fieldSelector": f"spec.nodeName={name}"}).get("items")
        or []
    )
    for pod in pods:
        metadata = pod["metadata"]
        with contextlib.suppress(Exception):
            admin.request(
                "DELETE",
                POD.object_path(metadata["name"], metadata["namespace"]),
                body={"gracePeriodSeconds": 0},
                content_type="application/json",
            )


def _stop_tasks(socket: Path) -> None:
    """Kill and remove every container containerd still runs (a stopped kubelet stops none)."""
    ctr = ("ctr", "--address", str(socket), "-n", "k8s.io")
    listed = subprocess.run(
        [*ctr, "tasks", "ls", "-q"], capture_output=True, text=True, check=False, timeout=30
    ).stdout.split()
    for task in listed:
        subprocess.run([*ctr, "tasks", "kill", "-s", "SIGKILL", task], capture_output=True, check=False, timeout=30)
    for task in listed:
        subprocess.run([*ctr, "tasks", "delete", "-f", task], capture_output=True, check=False, timeout=30)


def _leftovers(directory: Path) -> None:
    """What a killed containerd leaves: its shims, mounts below the node, the bridge."""
    subprocess.run(["pkill", "-KILL", "-f", f"containerd-shim-runc-v2 .*{directory}"], check=False)
    mounts = [
        line.split()[1]
        for line in Path("/proc/mounts").read_text().splitlines()
        if line.split()[1].startswith(str(directory))
    ]
    for mount in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], check=False)
    subprocess.run(["ip", "link", "delete", BRIDGE], check=False, capture_output=True)


@contextlib.contextmanager
def running_node(
    cluster: ClusterInfo, workdir: Path, *, name: str = "real-node-1", images: Sequence[LocalImage] = ()
) -> Iterator[RealNode]:
    missing = missing_host_parts()
    if missing:
        raise NodeSetupError(
            f"missing on this machine: {', '.join(missing)}; run scripts/system-packages.sh (make system) to install them"
        )
    binary = kubelet()
    directory = workdir / "node"
    (directory / "cni").mkdir(parents=True)
    archive, image = busybox_image(workdir)
    (directory / "containerd.toml").write_text(_containerd_config(directory, image))
    (directory / "cni" / "10-bridge.conflist").write_text(_cni_config())
    socket = directory / "containerd.sock"
    with contextlib.ExitStack() as stack:
        stack.callback(_leftovers, directory)
        admin = stack.enter_context(open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))))
        containerd_log = open(directory / "containerd.log", "wb")  # noqa: SIM115 - the process holds it
        containerd = subprocess.Popen(
            ["containerd", "--config", str(directory / "containerd.toml")],
            stdout=containerd_log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(stop_process, containerd, grace_seconds=10)
        _run_until_served(socket, containerd, directory / "containerd.log")
        stack.callback(_stop_tasks, socket)
        _run(
            "ctr",
            "--address",
            str(socket),
            "-n",
            "k8s.io",
            "images",
            "import",
            "--base-name",
            IMAGE_REPOSITORY,
            str(archive),
        )
        _run("ctr", "--address", str(socket), "-n", "k8s.io", "images", "tag", f"{IMAGE_REPOSITORY}:busybox", image)
        for local in images:
            _import(socket, local)
        _bind_nodes(admin)
        address = node_ip()
        _bind_dns(admin)
        (directory / "Corefile").write_text(_corefile(address, cluster.certificate_kubeconfig_path(DNS_USER)))
        dns_log = open(directory / "coredns.log", "wb")  # noqa: SIM115 - the process holds it
        dns = subprocess.Popen(
            [str(coredns()), "-conf", str(directory / "Corefile")], stdout=dns_log, stderr=subprocess.STDOUT
        )
        stack.callback(stop_process, dns, grace_seconds=5)
        kubeconfig = cluster.certificate_kubeconfig_path(f"system:node:{name}", "system:nodes")
        (directory / "kubelet.yaml").write_text(yaml.safe_dump(_kubelet_config(cluster, socket, directory, address)))
        log = directory / "kubelet.log"
        kubelet_log = open(log, "wb")  # noqa: SIM115 - the process holds it
        kubelet_process = subprocess.Popen(
            [str(binary), f"--kubeconfig={kubeconfig}", f"--config={directory / 'kubelet.yaml'}", f"--root-dir={directory / 'kubelet'}",
             f"--cert-dir={directory / 'kubelet-certs'}", f"--hostname-override={name}", f"--node-ip={address}", "--v=1"],
            stdout=kubelet_log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        stack.callback(stop_process, kubelet_process, grace_seconds=20)
        stack.callback(_delete_pods, admin, name)
        _wait_ready(admin, name, kubelet_process, log)
        proxy_kubeconfig = cluster.certificate_kubeconfig_path("system:kube-proxy")
        (directory / "kube-proxy.yaml").write_text(yaml.safe_dump(_kube_proxy_config(proxy_kubeconfig, name)))
        proxy_log = open(directory / "kube-proxy.log", "wb")  # noqa: SIM115 - the process holds it
        proxy = subprocess.Popen(
            [str(kube_proxy()), f"--config={directory / 'kube-proxy.yaml'}", "--v=1"],
            stdout=proxy_log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(_flush_proxy_rules, kube_proxy())
        stack.callback(stop_process, proxy, grace_seconds=10)
        yield RealNode(name=name, image=image, admin=admin, pod_logs=directory / "pod-logs")


def _import(socket: Path, image: LocalImage) -> None:
    """The archive's one image, named by its reference (the archive tags it with its digest)."""
    repository = image.reference.rsplit(":", 1)[0]
    _run(
        "ctr",
        "--address",
        str(socket),
        "-n",
        "k8s.io",
        "images",
        "import",
        "--base-name",
        repository,
        str(image.archive),
    )
    listed = _run("ctr", "--address", str(socket), "-n", "k8s.io", "images", "ls", "-q").split()
    if image.reference not in listed:
        raise NodeSetupError(f"containerd did not list {image.reference} after importing {image.archive}: {listed}")


def _flush_proxy_rules(binary: Path) -> None:
    """kube-proxy's own cleanup of the iptables chains it made (`--cleanup`)."""
    subprocess.run([str(binary), "--cleanup"], capture_output=True, check=False, timeout=60)


def _run_until_served(socket: Path, containerd: subprocess.Popen[bytes], log: Path) -> None:
    """containerd answers on its socket (`ctr version` until it does, bounded)."""
    for _ in range(200):
        if containerd.poll() is not None:
            raise NodeSetupError(f"containerd exited with {containerd.returncode}:\n{log.read_text()[-3000:]}")
        done = subprocess.run(
            ["ctr", "--address", str(socket), "version"], capture_output=True, check=False, timeout=10
        )
        if done.returncode == 0:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            containerd.wait(timeout=0.05)
    raise NodeSetupError(f"containerd did not answer on {socket}:\n{log.read_text()[-3000:]}")
