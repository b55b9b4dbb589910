"""A real Kubernetes API server for the tests: etcd plus a current kube-apiserver, one per session.

Public face:

- `running_cluster(identities=...)` starts etcd on a free loopback port with a temporary
  data directory, then kube-apiserver over HTTPS on 127.0.0.1 with token and client
  certificate authentication and RBAC, waits until it is ready and yields a `ClusterInfo`
  (url, ca_file, admin_token, identities, `client(identity)`, `kubeconfig_path(identity)`,
  `client_certificate(user, *groups)`, `certificate_kubeconfig_path(user, *groups)`); on exit
  it stops the API server first, then etcd (SIGTERM, then SIGKILL after a bound).
- `TestIdentity` is one bearer token the server accepts; `token_auth_file` is the pure
  mapping from identities to the server's token file. By default there are two: the admin
  (group system:masters) and `magicstick-reader` (no groups: no rights until a test binds some).
- Client certificates: the server trusts a client CA made for the session; a certificate it
  issues authenticates as its common name, with one group per organisation (`ClientCertificate`).
- `install_crds`, `upstream_crd_paths`, `create_namespace` and `wait_until_allowed` prepare the
  cluster for a test over the same HTTPS the program uses.
- `launch`, `wait_ready` and `free_ports` start and watch the other processes a test cluster
  runs beside it (Flux's controllers, tests/flux/controllers.py) as the server's own are.

Rules:

- Binaries are found, never built here (`tests/toolchain.py`): `$MAGICSTICK_KUBE_APISERVER`
  and `$MAGICSTICK_ETCD`, else the cache that `scripts/toolchain/build.sh` fills, at the
  versions of `scripts/toolchain/versions.env`. A missing binary is an error that says how to
  build it, never a skip.
- Every wait is bounded by a deadline and polls with a short pause. Waits exist only for
  what the server does asynchronously (startup, CRD establishment and discovery, the RBAC
  authorizer's cache); tests themselves never sleep.
- There is no kube-controller-manager and no kubelet: nothing garbage-collects, namespaces
  never finish terminating, no Pod runs. Tests play the controllers by writing status.
- It is started as envtest starts it: HTTPS only, RBAC, a static token file and a client CA
  for the test users, a signing key for ServiceAccount tokens (TokenRequest). CRDs are
  installed unmodified; their CEL rules, defaults and strict field validation are enforced.

> **Why** — a fake API server agrees with whatever the test author believes; this one
> enforces resourceVersions, schemas, pruning, defaults, field managers and RBAC for real.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import re
import secrets
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import httpx
import yaml

from tests import toolchain
from tests.support.processes import stop_process
from tests.support.vendored import VENDORED_CRDS

KUBE_VERSION: Final = toolchain.versions().kube
"""The kube-apiserver version the toolchain script builds and the tests run against."""

ADMIN_USER: Final = "magicstick-test-admin"
READER_USER: Final = "magicstick-reader"
SERVICE_CLUSTER_IP_RANGE: Final = "10.96.0.0/24"

STARTUP_TIMEOUT: Final = 60.0
STOP_TIMEOUT: Final = 10.0
API_TIMEOUT: Final = 30.0
POLL_INTERVAL: Final = 0.05

UPSTREAM_CRD_FILES: Final = (
    "flux-kustomize-controller/kustomize.toolkit.fluxcd.io_kustomizations.yaml",
    "flux-helm-controller/helm.toolkit.fluxcd.io_helmreleases.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_gitrepositories.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_helmrepositories.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_ocirepositories.yaml",
    "kubeai/kubeai.org_models.yaml",
    "gateway-api/gateway.networking.k8s.io_httproutes.yaml",
    "gateway-api/gateway.networking.k8s.io_referencegrants.yaml",
    "envoy-gateway/gateway.envoyproxy.io_securitypolicies.yaml",
    "envoy-gateway/gateway.envoyproxy.io_envoyproxies.yaml",
    "node-feature-discovery/nfd-api-crds.yaml",
    "nvidia-gpu-operator/nvidia.com_clusterpolicies.yaml",
    "rocm-gpu-operator/amd.com_deviceconfigs.yaml",
    "intel-device-plugins-for-kubernetes/deviceplugin.intel.com_gpudeviceplugins.yaml",
    "pulumi-kubernetes-operator/pulumi.com_stacks.yaml",
)
"""Upstream CRDs of the kinds the program declares or observes, relative to `third_party/crds/`."""

_CRD_API: Final = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

JsonObject = dict[str, Any]
_T = TypeVar("_T")


class ClusterError(Exception):
    """Base of every failure of the test cluster library."""


class BinaryNotFound(ClusterError):
    """A binary the cluster needs is not installed."""


class StartupFailed(ClusterError):
    """etcd or kube-apiserver did not become ready; carries the tail of its log."""


class ApiError(ClusterError):
    """The API server answered a helper's request with an error Status."""

    def __init__(self, *, method: str, path: str, status_code: int, reason: str, message: str) -> None:
        super().__init__(f"{method} {path}: {status_code} {reason}: {message}")
        self.status_code = status_code
        self.reason = reason
        self.message = message

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        try:
            body = response.json()
        except ValueError:
            body = {}
        return cls(
            method=response.request.method,
            path=response.request.url.raw_path.decode(),
            status_code=response.status_code,
            reason=str(body.get("reason", response.reason_phrase)),
            message=str(body.get("message", response.text[:500])),
        )


class Timeout(ClusterError):
    """A bounded wait ran out."""


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate and its key, PEM files signed by the cluster's client CA."""

    user: str
    groups: tuple[str, ...]
    cert_file: Path
    key_file: Path


@dataclass(frozen=True)
class TestIdentity:
    """A user the API server authenticates by bearer token (static token file)."""

    __test__ = False  # not a pytest test class

    name: str
    token: str
    groups: tuple[str, ...] = ()


def new_identity(name: str, *groups: str) -> TestIdentity:
    """An identity with a fresh random token."""
    return TestIdentity(name=name, token=secrets.token_urlsafe(24), groups=tuple(groups))


def default_identities() -> tuple[TestIdentity, ...]:
    """The admin (group system:masters, bypasses RBAC) and `magicstick-reader` (no groups, no rights)."""
    return (new_identity(ADMIN_USER, "system:masters"), new_identity(READER_USER))


def token_auth_file(identities: Sequence[TestIdentity]) -> str:
    """The content of kube-apiserver's --token-auth-file: `token,user,uid,"group1,group2"` per line.

    Pure. Names and tokens must be unique; a comma or quote would break the CSV.
    """
    names = [identity.name for identity in identities]
    tokens = [identity.token for identity in identities]
    if len(set(names)) != len(names) or len(set(tokens)) != len(tokens):
        raise ValueError("identity names and tokens must be unique")
    lines = []
    for identity in identities:
        fields = (identity.token, identity.name, *identity.groups)
        if any("," in value or '"' in value or "\n" in value for value in fields):
            raise ValueError(f"identity {identity.name!r} has a comma, quote or newline")
        line = f"{identity.token},{identity.name},{identity.name}"
        lines.append(f'{line},"{",".join(identity.groups)}"' if identity.groups else line)
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ClusterInfo:
    """Where a running test cluster answers and who may talk to it."""

    url: str
    """https://127.0.0.1:PORT"""
    ca_file: Path
    """The API server's self-signed serving certificate (with its CA), to verify TLS."""
    admin_token: str
    identities: Mapping[str, TestIdentity]
    """Every identity the server accepts, by user name (the admin included)."""
    workdir: Path
    startup_seconds: float
    """Wall time from launching etcd to the API server answering /readyz."""
    pids: Mapping[str, int] = field(default_factory=dict)
    """Process ids by component (`etcd`, `kube-apiserver`)."""
    client_ca_file: Path | None = None
    """The CA the server trusts for client certificates (--client-ca-file)."""
    client_ca_key: Path | None = None
    """Its private key, to issue client certificates."""

    def identity(self, name: str) -> TestIdentity:
        try:
            return self.identities[name]
        except KeyError:
            raise KeyError(f"no test identity {name!r}; known: {sorted(self.identities)}") from None

    def client(self, identity: TestIdentity | str | None = None, **options: Any) -> httpx.Client:
        """An httpx client for the API server as `identity` (default: the admin); close it after use."""
        token = self.admin_token if identity is None else self.resolve(identity).token
        options.setdefault("timeout", API_TIMEOUT)
        return httpx.Client(
            base_url=self.url,
            verify=self.ssl_context(),
            headers={"Authorization": f"Bearer {token}"},
            **options,
        )

    def ssl_context(self) -> ssl.SSLContext:
        """A TLS context that trusts this cluster's certificate and nothing else."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def kubeconfig_path(self, identity: TestIdentity | str) -> Path:
        """A kubeconfig file that talks to this cluster as `identity` (written on each call)."""
        resolved = self.resolve(identity)
        path = self.workdir / "kubeconfigs" / f"{resolved.name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            yaml.safe_dump(
                _kubeconfig(self.url, self.ca_file, resolved.name, {"token": resolved.token}), sort_keys=False
            )
        )
        path.chmod(0o600)
        return path

    def resolve(self, identity: TestIdentity | str) -> TestIdentity:
        return self.identity(identity) if isinstance(identity, str) else identity

    def client_certificate(self, user: str, *groups: str) -> ClientCertificate:
        """A new client certificate (CN=`user`, O=each group) the server accepts; valid for a day."""
        if self.client_ca_file is None or self.client_ca_key is None:
            raise ClusterError("this cluster was started without a client CA")
        return _issue_client_certificate(
            self.client_ca_file, self.client_ca_key, self.workdir / "client-certs", user, tuple(groups)
        )

    def certificate_kubeconfig_path(self, user: str, *groups: str) -> Path:
        """A kubeconfig file that talks to this cluster with a new client certificate for `user` and `groups`."""
        certificate = self.client_certificate(user, *groups)
        path = self.workdir / "kubeconfigs" / f"{_file_stem(user, groups)}.cert.yaml"
        path.parent.mkdir(exist_ok=True)
        credentials = {"client-certificate": str(certificate.cert_file), "client-key": str(certificate.key_file)}
        path.write_text(yaml.safe_dump(_kubeconfig(self.url, self.ca_file, user, credentials), sort_keys=False))
        path.chmod(0o600)
        return path


def _kubeconfig(url: str, ca_file: Path, user: str, credentials: JsonObject) -> JsonObject:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "magicstick-test", "cluster": {"server": url, "certificate-authority": str(ca_file)}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": user, "context": {"cluster": "magicstick-test", "user": user}}],
        "current-context": user,
        "preferences": {},
    }


# --- client certificates --------------------------------------------------------------------

_SUBJECT_VALUE = re.compile(r"^[A-Za-z0-9:._@-]+$")
_CLIENT_EXTENSIONS: Final = (
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
)


def _openssl(*arguments: str) -> None:
    subprocess.run(["openssl", *arguments], check=True, stdin=subprocess.DEVNULL, capture_output=True)


def _client_ca(workdir: Path) -> tuple[Path, Path]:
    """A self-signed CA for client certificates: (certificate, key)."""
    cert, key = workdir / "client-ca.crt", workdir / "client-ca.key"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-subj", "/CN=magicstick-test-client-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        "-keyout", str(key), "-out", str(cert),
    )  # fmt: skip
    return cert, key


def _file_stem(user: str, groups: Sequence[str]) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join((user, *groups)))


def _issue_client_certificate(
    ca_cert: Path, ca_key: Path, directory: Path, user: str, groups: tuple[str, ...]
) -> ClientCertificate:
    for value in (user, *groups):
        if not _SUBJECT_VALUE.match(value):
            raise ValueError(f"{value!r} cannot be a certificate subject value (letters, digits, ':._@-' only)")
    directory.mkdir(exist_ok=True)
    stem = f"{_file_stem(user, groups)}-{secrets.token_hex(4)}"
    key, request, cert = (directory / f"{stem}{suffix}" for suffix in (".key", ".csr", ".crt"))
    extensions = directory / f"{stem}.ext"
    extensions.write_text(_CLIENT_EXTENSIONS)
    subject = "/CN=" + user + "".join(f"/O={group}" for group in groups)
    _openssl(
        "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", str(key), "-out", str(request)
    )
    _openssl(
        "x509", "-req", "-in", str(request), "-CA", str(ca_cert), "-CAkey", str(ca_key),
        "-set_serial", str(secrets.randbits(63)), "-days", "1", "-extfile", str(extensions), "-out", str(cert),
    )  # fmt: skip
    key.chmod(0o600)
    return ClientCertificate(user=user, groups=groups, cert_file=cert, key_file=key)


# --- binaries -------------------------------------------------------------------------------


def kube_apiserver_binary() -> Path:
    """The kube-apiserver to run; raises `BinaryNotFound` with the command that builds it."""
    try:
        return toolchain.kube_apiserver()
    except toolchain.ToolNotFound as error:
        raise BinaryNotFound(str(error)) from None


def kube_scheduler_binary() -> Path:
    """The kube-scheduler to run; raises `BinaryNotFound` with the command that builds it."""
    try:
        return toolchain.kube_scheduler()
    except toolchain.ToolNotFound as error:
        raise BinaryNotFound(str(error)) from None


def kube_controller_manager_binary() -> Path:
    """The kube-controller-manager to run; raises `BinaryNotFound` with the command that builds it."""
    try:
        return toolchain.kube_controller_manager()
    except toolchain.ToolNotFound as error:
        raise BinaryNotFound(str(error)) from None


def etcd_binary() -> Path:
    """The etcd to run; raises `BinaryNotFound` with the command that builds it."""
    try:
        return toolchain.etcd()
    except toolchain.ToolNotFound as error:
        raise BinaryNotFound(str(error)) from None


# --- processes ------------------------------------------------------------------------------


def free_ports(count: int) -> list[int]:
    """Distinct loopback ports free at this moment (held together while chosen)."""
    with contextlib.ExitStack() as held:
        probes = [held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel kills it if the test process dies first."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclass
class ChildProcess:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after `STOP_TIMEOUT` seconds."""
        stop_process(self.popen, grace_seconds=STOP_TIMEOUT)


def launch(name: str, argv: Sequence[str], workdir: Path, *, env: Mapping[str, str] | None = None) -> ChildProcess:
    """Start `argv` with its output in `workdir/<name>.log`; the kernel ends it with the test process."""
    log = workdir / f"{name}.log"
    with log.open("wb") as sink:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env=None if env is None else dict(env),
            preexec_fn=_die_with_parent,
        )
    return ChildProcess(name=name, popen=popen, log=log)


def wait_ready(process: ChildProcess, probe: httpx.Client, path: str, deadline: float) -> None:
    last = "no answer yet"
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise StartupFailed(f"{process.name} exited with {process.popen.returncode}:\n{process.log_tail()}")
        try:
            response = probe.get(path)
        except httpx.TransportError as error:
            last = f"{type(error).__name__}: {error}"
        else:
            if response.status_code == 200:
                return
            last = f"{response.status_code}: {response.text[:300]}"
        _wait_for_exit(process, POLL_INTERVAL)
    raise StartupFailed(f"{process.name} not ready within the deadline ({last}):\n{process.log_tail()}")


def _service_account_key(workdir: Path) -> Path:
    key = workdir / "service-account.key"
    subprocess.run(
        ["openssl", "genrsa", "-out", str(key), "2048"],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    return key


def _etcd_argv(binary: Path, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client = f"http://127.0.0.1:{client_port}"
    peer = f"http://127.0.0.1:{peer_port}"
    return [
        str(binary),
        "--name=magicstick-test",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=magicstick-test={peer}",
        "--initial-cluster-state=new",
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


def _apiserver_argv(
    binary: Path,
    *,
    address: str,
    workdir: Path,
    etcd_url: str,
    port: int,
    token_file: Path,
    service_account_key: Path,
    client_ca_file: Path | None = None,
) -> list[str]:
    client_ca = [f"--client-ca-file={client_ca_file}"] if client_ca_file is not None else []
    return [
        str(binary),
        f"--etcd-servers={etcd_url}",
        f"--bind-address={address}",
        f"--advertise-address={address}",
        f"--secure-port={port}",
        f"--cert-dir={workdir / 'certs'}",
        f"--token-auth-file={token_file}",
        *client_ca,
        "--anonymous-auth=false",
        "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={service_account_key}",
        f"--service-account-signing-key-file={service_account_key}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        "--profiling=false",
        "--v=0",
    ]


def _controller_manager_argv(
    binary: Path, kubeconfig: Path, controllers: Sequence[str], root_ca_file: Path
) -> list[str]:
    # --root-ca-file: what the root CA publisher writes into each namespace's kube-root-ca.crt,
    # the ca.crt of every projected ServiceAccount token. Without it the publisher takes the CA
    # data of its own kubeconfig, which names a file here: Pods would get an empty ca.crt.
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--root-ca-file={root_ca_file}",
        f"--controllers={','.join(controllers)}",
        "--leader-elect=false",
        "--use-service-account-credentials=false",
        "--secure-port=0",
        "--v=0",
    ]


def _scheduler_argv(binary: Path, kubeconfig: Path) -> list[str]:
    return [str(binary), f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--secure-port=0", "--v=0"]


def _wait_collecting(cluster: ClusterInfo, manager: ChildProcess, deadline: float) -> None:
    """Until the garbage collector completes a foreground deletion (its informers have synced)."""
    probe = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "magicstick-gc-probe", "namespace": "default"},
    }
    path = "/api/v1/namespaces/default/configmaps"
    with cluster.client() as client:
        _checked(client.post(path, json=probe))
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}
        client.request("DELETE", f"{path}/magicstick-gc-probe", json=options).raise_for_status()
        while client.get(f"{path}/magicstick-gc-probe").status_code != 404:
            if manager.popen.poll() is not None:
                raise StartupFailed(f"{manager.name} exited with {manager.popen.returncode}:\n{manager.log_tail()}")
            if time.monotonic() >= deadline:
                raise StartupFailed(
                    f"the garbage collector did not complete a foreground deletion in time:\n{manager.log_tail()}"
                )
            _wait_for_exit(manager, POLL_INTERVAL)


@contextlib.contextmanager
def running_cluster(
    *,
    identities: Sequence[TestIdentity] | None = None,
    startup_timeout: float = STARTUP_TIMEOUT,
    controllers: Sequence[str] = (),
    scheduler: bool = False,
    address: str = "127.0.0.1",
) -> Iterator[ClusterInfo]:
    """Start etcd and kube-apiserver, yield where they answer, stop the API server then etcd.

    `identities` default to `default_identities()`; exactly one of them must be in the group
    system:masters: it is the admin. Everything lives in a temporary directory removed on exit.

    `controllers` (names of kube-controller-manager's controllers, such as `garbagecollector`
    and `namespace`) starts kube-controller-manager with only those, as the admin; the cluster
    is yielded once the garbage collector (when asked for) has completed a foreground deletion.
    Without it nothing collects garbage: the suite's default, where tests play every controller.

    `scheduler` starts kube-scheduler too (for a cluster with a real node: nothing else places
    Pods). `address` is where the API server listens and what it advertises as the `kubernetes`
    Service's endpoint: loopback by default; a real node's Pods need an address they can route to
    (its serving certificate then names that address, and the yielded URL uses it).
    """
    chosen = tuple(identities) if identities is not None else default_identities()
    admins = [identity for identity in chosen if "system:masters" in identity.groups]
    if len(admins) != 1:
        raise ValueError("exactly one identity must be in the group system:masters")
    apiserver_binary, etcd = kube_apiserver_binary(), etcd_binary()

    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="magicstick-cluster-")))
        started = time.monotonic()
        deadline = started + startup_timeout

        etcd_port, peer_port, port = free_ports(3)
        etcd_process = launch("etcd", _etcd_argv(etcd, workdir / "etcd", etcd_port, peer_port), workdir)
        stack.callback(etcd_process.stop)
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        with httpx.Client(base_url=etcd_url, timeout=2.0) as probe:
            wait_ready(etcd_process, probe, "/health", deadline)

        token_file = workdir / "tokens.csv"
        token_file.write_text(token_auth_file(chosen))
        token_file.chmod(0o600)
        client_ca_file, client_ca_key = _client_ca(workdir)
        apiserver = launch(
            "kube-apiserver",
            _apiserver_argv(
                apiserver_binary,
                address=address,
                workdir=workdir,
                etcd_url=etcd_url,
                port=port,
                token_file=token_file,
                service_account_key=_service_account_key(workdir),
                client_ca_file=client_ca_file,
            ),
            workdir,
        )
        stack.callback(apiserver.stop)  # callbacks run last-in first-out: the API server stops first

        # The serving certificate is complete once the port listens: read it only then.
        _wait_listening(apiserver, address, port, deadline)
        info = ClusterInfo(
            url=f"https://{address}:{port}",
            ca_file=workdir / "certs" / "apiserver.crt",
            admin_token=admins[0].token,
            identities={identity.name: identity for identity in chosen},
            workdir=workdir,
            startup_seconds=0.0,
            pids={"etcd": etcd_process.popen.pid, "kube-apiserver": apiserver.popen.pid},
            client_ca_file=client_ca_file,
            client_ca_key=client_ca_key,
        )
        with info.client(timeout=2.0) as probe:
            wait_ready(apiserver, probe, "/readyz", deadline)
        if controllers:
            manager = launch(
                "kube-controller-manager",
                _controller_manager_argv(
                    kube_controller_manager_binary(), info.kubeconfig_path(admins[0]), controllers, info.ca_file
                ),
                workdir,
            )
            stack.callback(manager.stop)  # stopped before the API server
            info = dataclasses.replace(info, pids={**info.pids, "kube-controller-manager": manager.popen.pid})
            if "garbagecollector" in controllers:
                _wait_collecting(info, manager, deadline)
        if scheduler:
            placer = launch(
                "kube-scheduler", _scheduler_argv(kube_scheduler_binary(), info.kubeconfig_path(admins[0])), workdir
            )
            stack.callback(placer.stop)
            info = dataclasses.replace(info, pids={**info.pids, "kube-scheduler": placer.popen.pid})
        yield dataclasses.replace(info, startup_seconds=time.monotonic() - started)


def _wait_listening(process: ChildProcess, address: str, port: int, deadline: float) -> None:
    while True:
        if process.popen.poll() is not None:
            raise StartupFailed(f"{process.name} exited with {process.popen.returncode}:\n{process.log_tail()}")
        with contextlib.suppress(OSError), socket.create_connection((address, port), timeout=1.0):
            return
        if time.monotonic() >= deadline:
            raise StartupFailed(f"{process.name} did not listen on {port} within the deadline:\n{process.log_tail()}")
        _wait_for_exit(process, POLL_INTERVAL)


def _wait_for_exit(process: ChildProcess, seconds: float) -> None:
    """Between two readiness probes, wait on the starting process itself: a crash ends the wait."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.popen.wait(timeout=seconds)


# --- API helpers ----------------------------------------------------------------------------


def _checked(response: httpx.Response) -> JsonObject:
    if response.is_error:
        raise ApiError.from_response(response)
    return dict(response.json())


def _poll(what: str, check: Callable[[], _T], timeout: float) -> _T:
    """Call `check()` until it returns a truthy value; `Timeout` after `timeout` seconds.

    It waits for the API server's own asynchronous work (a CRD becoming Established, discovery
    and the RBAC informer catching up), never to time a test. Each check is a request to that
    server, so the server's answer paces the loop; there is no pause of our own.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise Timeout(f"{what}: not reached within {timeout:g} s")


def create_namespace(cluster: ClusterInfo, name: str) -> str:
    """Create namespace `name` as the admin; returns the name."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    with cluster.client() as client:
        _checked(client.post("/api/v1/namespaces", json=namespace))
    return name


def upstream_crd_paths() -> tuple[Path, ...]:
    """The vendored upstream CRD files of the kinds the program uses (`third_party/crds/`)."""
    paths = tuple(VENDORED_CRDS / relative for relative in UPSTREAM_CRD_FILES)
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"vendored upstream CRDs missing: {', '.join(missing)}")
    return paths


@dataclass(frozen=True)
class InstalledCrd:
    """A CRD as the server accepted it."""

    name: str
    source: Path
    group: str
    plural: str
    served_versions: tuple[str, ...]
    cel_rules: int
    """x-kubernetes-validations rules in its schema, every one enforced by the server."""


def _crd_documents(paths: Iterable[Path]) -> Iterator[tuple[Path, JsonObject]]:
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.suffix in {".yaml", ".yml"}) if path.is_dir() else [path]
        for file in files:
            with file.open() as stream:
                for document in yaml.load_all(stream, Loader=_YAML_LOADER):
                    if (
                        isinstance(document, dict)
                        and document.get("apiVersion") == "apiextensions.k8s.io/v1"
                        and document.get("kind") == "CustomResourceDefinition"
                    ):
                        yield file, document


def _count_cel_rules(node: Any) -> int:
    if isinstance(node, dict):
        rules = node.get("x-kubernetes-validations")
        return (len(rules) if isinstance(rules, list) else 0) + sum(_count_cel_rules(value) for value in node.values())
    if isinstance(node, list):
        return sum(_count_cel_rules(item) for item in node)
    return 0


def install_crds(cluster: ClusterInfo, paths: Iterable[Path], *, timeout: float = API_TIMEOUT) -> list[InstalledCrd]:
    """Create (or replace) every apiextensions.k8s.io/v1 CRD found in `paths`, unmodified, then wait until served.

    `paths` are YAML files (multi-document allowed) or directories of them; documents that are
    not CRDs are ignored. A CRD is done when it is Established and discovery of each served
    version lists its plural. A refusal raises `ApiError`: no CRD is ever skipped or adapted.
    """
    installed = []
    with cluster.client() as client:
        for source, document in _crd_documents(paths):
            _checked(_create_or_replace(client, document))
            spec = document["spec"]
            installed.append(
                InstalledCrd(
                    name=document["metadata"]["name"],
                    source=source,
                    group=spec["group"],
                    plural=spec["names"]["plural"],
                    served_versions=tuple(v["name"] for v in spec["versions"] if v.get("served", True)),
                    cel_rules=_count_cel_rules(spec),
                )
            )
        for crd in installed:
            _poll(f"CRD {crd.name} Established", functools.partial(_established, client, crd.name), timeout)
            for version in crd.served_versions:
                _poll(
                    f"discovery of {crd.group}/{version} lists {crd.plural}",
                    functools.partial(_discovered, client, crd.group, version, crd.plural),
                    timeout,
                )
    return installed


def _create_or_replace(client: httpx.Client, crd: JsonObject) -> httpx.Response:
    response = client.post(_CRD_API, json=crd)
    if response.status_code != 409:
        return response
    name = crd["metadata"]["name"]
    current = _checked(client.get(f"{_CRD_API}/{name}"))
    replacement = {**crd, "metadata": {**crd["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
    return client.put(f"{_CRD_API}/{name}", json=replacement)


def _established(client: httpx.Client, name: str) -> bool:
    crd = _checked(client.get(f"{_CRD_API}/{name}"))
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _discovered(client: httpx.Client, group: str, version: str, plural: str) -> bool:
    response = client.get(f"/apis/{group}/{version}")
    if response.status_code == 404:
        return False
    return any(resource.get("name") == plural for resource in _checked(response).get("resources", []))


def wait_until_allowed(
    cluster: ClusterInfo,
    identity: TestIdentity | str,
    *,
    verb: str,
    resource: str,
    namespace: str | None = None,
    group: str = "",
    timeout: float = API_TIMEOUT,
) -> None:
    """Wait until the RBAC authorizer allows `identity` to `verb` `resource` (a SubjectAccessReview).

    The authorizer reads Roles and bindings from an informer cache, so a grant takes effect a
    moment after it is written; this is that moment, bounded.
    """
    user = cluster.resolve(identity)
    attributes: JsonObject = {"verb": verb, "resource": resource, "group": group}
    if namespace is not None:
        attributes["namespace"] = namespace
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user.name, "groups": list(user.groups), "resourceAttributes": attributes},
    }
    with cluster.client() as client:

        def allowed() -> bool:
            answer = _checked(client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review))
            return bool(answer.get("status", {}).get("allowed"))

        _poll(f"{user.name} may {verb} {resource} in {namespace or 'the cluster'}", allowed, timeout)


def resident_memory_bytes(cluster: ClusterInfo) -> dict[str, int]:
    """Resident set size of each cluster process, from /proc (Linux)."""
    sizes = {}
    for name, pid in cluster.pids.items():
        status = Path(f"/proc/{pid}/status").read_text()
        kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        sizes[name] = kib * 1024
    return sizes


__all__ = [
    "ADMIN_USER",
    "KUBE_VERSION",
    "READER_USER",
    "ApiError",
    "BinaryNotFound",
    "ClientCertificate",
    "ClusterError",
    "ClusterInfo",
    "InstalledCrd",
    "StartupFailed",
    "TestIdentity",
    "Timeout",
    "create_namespace",
    "default_identities",
    "install_crds",
    "new_identity",
    "resident_memory_bytes",
    "running_cluster",
    "token_auth_file",
    "upstream_crd_paths",
    "wait_until_allowed",
]
