"""magic-cluster/host/install.sh against the real test API server.

The script runs as an administrator would run it on a node, with `--root TMP --skip-package
--no-systemctl`: the admin's kubeconfig in KUBECONFIG, kubectl 1.33 first on PATH as
`kubectl`, HOME in the temporary directory (kubectl's discovery cache lands there). The
ServiceAccount magicstick-host-agent in ai-system comes from
magic-cluster/platform/host-agent/serviceaccount.yaml when that file exists, else it is
created directly; the Node `halo` is created for this module unless it exists, and removed
afterwards only if this module created it.

What the script wrote is judged by its readers: the API server authenticates the kubeconfig
through the project's own Kubernetes client (the one the agent uses: lightkube's kubeconfig
layer, which reads `tokenFile`), by a SelfSubjectReview; the agent's own reader
(services.host_agent.first_run.read_marker) reads the marker.

kubectl: $MAGICSTICK_KUBECTL when set, else `kubectl.1.33` on PATH or beside the real
`kubectl` (the Cloud SDK's versioned kubectls), else `kubectl`; it must be 1.33 or newer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
import uuid
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
import yaml

from providers.kube import KubeAccess, open_client
from services.host_agent.first_run import read_marker
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo

REPO_ROOT: Final = Path(__file__).resolve().parents[3]
HOST_DIR: Final = REPO_ROOT / "magic-cluster" / "host"
INSTALL_SCRIPT: Final = HOST_DIR / "install.sh"
SERVICE_ACCOUNT_MANIFEST: Final = REPO_ROOT / "magic-cluster" / "platform" / "host-agent" / "serviceaccount.yaml"
UNITS: Final = ("magicstick-host-agent.service", "magicstick-host-evidence.service", "magicstick-host-evidence.timer")
NODE: Final = "halo"
NAMESPACE: Final = "ai-system"
SERVICE_ACCOUNT: Final = "magicstick-host-agent"
FIELD_MANAGER: Final = "magicstick-install-script-tests"
KUBECTL_MINOR: Final = 33
SCRIPT_TIMEOUT_SECONDS: Final = 120
"""A bound on one run of the script (a safety net, not a pace: it takes about a second)."""
NODE_NAME_EXTRA: Final = "authentication.kubernetes.io/node-name"


def find_kubectl() -> Path:
    explicit = os.environ.get("MAGICSTICK_KUBECTL")
    candidates = [explicit] if explicit else [shutil.which(f"kubectl.1.{KUBECTL_MINOR}")]
    if not explicit:
        plain = shutil.which("kubectl")
        if plain is not None:
            candidates += [str(Path(plain).resolve().with_name(f"kubectl.1.{KUBECTL_MINOR}")), plain]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK) and Path(candidate).is_file():
            return Path(candidate)
    raise AssertionError(f"kubectl 1.{KUBECTL_MINOR} is needed (set $MAGICSTICK_KUBECTL to it); tried {candidates}")


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass(frozen=True)
class Installer:
    """Runs install.sh as the admin, kubectl 1.33 first on PATH."""

    bin_dir: Path
    home: Path
    kubeconfig: Path

    def run(self, *arguments: str, kubeconfig: Path | None = None) -> Run:
        environment = {
            "PATH": f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(self.home),
            "KUBECONFIG": str(kubeconfig or self.kubeconfig),
            "LANG": "C.UTF-8",
            # pip installs the tests' local wheels only: no index, no version check.
            "PIP_NO_INDEX": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        done = subprocess.run(
            [str(INSTALL_SCRIPT), *arguments],
            env=environment,
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
            timeout=SCRIPT_TIMEOUT_SECONDS,
        )
        return Run(done.returncode, done.stdout, done.stderr)

    def install(self, root: Path, *extra: str, node: str = NODE, kubeconfig: Path | None = None) -> Run:
        return self.run(
            "--root", str(root), "--node-name", node, "--skip-package", "--no-systemctl", *extra, kubeconfig=kubeconfig
        )


def _ok(response: httpx.Response) -> dict[str, Any]:
    assert response.is_success, (
        f"{response.request.method} {response.request.url}: {response.status_code} {response.text}"
    )
    return dict(response.json())


def _apply(client: httpx.Client, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
    response = client.patch(
        path,
        params={"fieldManager": FIELD_MANAGER, "force": "true"},
        content=json.dumps(body),
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    return _ok(response)


def _service_account() -> dict[str, Any]:
    if SERVICE_ACCOUNT_MANIFEST.is_file():
        documents = [d for d in yaml.safe_load_all(SERVICE_ACCOUNT_MANIFEST.read_text()) if isinstance(d, dict)]
        for document in documents:
            if document.get("kind") == "ServiceAccount" and document["metadata"]["name"] == SERVICE_ACCOUNT:
                return {**document, "metadata": {**document["metadata"], "namespace": NAMESPACE}}
        raise AssertionError(f"{SERVICE_ACCOUNT_MANIFEST} has no ServiceAccount {SERVICE_ACCOUNT}")
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}}


@pytest.fixture(scope="module")
def host_agent_account(cluster: ClusterInfo) -> None:
    """Namespace ai-system and the agent's ServiceAccount, applied (other suites share them)."""
    with cluster.client() as client:
        _apply(
            client,
            f"/api/v1/namespaces/{NAMESPACE}",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        _apply(client, f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}", _service_account())


@pytest.fixture(scope="module")
def node(cluster: ClusterInfo) -> Iterator[dict[str, Any]]:
    """Node halo: created unless it exists, deleted afterwards only when created here."""
    with cluster.client() as client:
        created = client.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
        assert created.status_code in (201, 409), created.text
        yield _ok(client.get(f"/api/v1/nodes/{NODE}"))
        if created.status_code == 201:
            client.delete(f"/api/v1/nodes/{NODE}")


@pytest.fixture(scope="module")
def installer(
    cluster: ClusterInfo, host_agent_account: None, node: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Installer:
    base = tmp_path_factory.mktemp("installer")
    bin_dir, home = base / "bin", base / "home"
    bin_dir.mkdir()
    home.mkdir()
    kubectl = find_kubectl()
    version = json.loads(
        subprocess.run(
            [str(kubectl), "version", "--client", "-o", "json"], capture_output=True, text=True, check=True
        ).stdout
    )
    minor = int("".join(c for c in version["clientVersion"]["minor"] if c.isdigit()))
    assert minor >= KUBECTL_MINOR, f"{kubectl} is kubectl 1.{minor}; 1.{KUBECTL_MINOR} or newer is needed"
    (bin_dir / "kubectl").symlink_to(kubectl)
    return Installer(bin_dir=bin_dir, home=home, kubeconfig=cluster.kubeconfig_path(ADMIN_USER))


@pytest.fixture(scope="module")
def first_install(installer: Installer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    """One `--first-install` into a new root, shared by the tests that only read what it wrote."""
    root = tmp_path_factory.mktemp("root")
    run = installer.install(root, "--first-install")
    assert run.returncode == 0, run.output
    return root, run


def stub_wheel(directory: Path, *, console_script: bool) -> Path:
    """A minimal wheel without dependencies; with `console_script`, its magicstick-host-agent prints `stub`."""
    name, version = "magicstick_host_agent_stub", "0.0.1"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": "def main():\n    print('stub')\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: magicstick-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if console_script:
        files[f"{info}/entry_points.txt"] = f"[console_scripts]\nmagicstick-host-agent = {name}:main\n"
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def without_cluster(cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """install.sh with a kubectl that is never reached (the options are checked before it runs)."""
    return subprocess.run(
        [str(INSTALL_SCRIPT), "--kubectl", "/bin/false", *arguments],
        capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL, cwd=cwd, timeout=SCRIPT_TIMEOUT_SECONDS,
    )  # fmt: skip


def config(root: Path, name: str) -> Path:
    return root / "etc" / "magicstick" / "host-agent" / name


def marker(root: Path) -> Path:
    return root / "var" / "lib" / "magicstick" / "installer-marker"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def self_subject_review(kubeconfig: Path) -> dict[str, Any]:
    """Who the API server says the kubeconfig is, asked through the agent's own client."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    with open_client(KubeAccess(kubeconfig=str(kubeconfig))) as client:
        answer = client.request(
            "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=review, content_type="application/json"
        )
    return dict(answer["status"]["userInfo"])


def test_the_token_file_is_readable_by_its_owner_only(first_install: tuple[Path, Run]):
    root, _ = first_install
    assert mode(config(root, "token")) == 0o600


def test_the_kubeconfig_is_readable_by_its_owner_only(first_install: tuple[Path, Run]):
    root, _ = first_install
    assert mode(config(root, "kubeconfig")) == 0o600


def test_the_agents_directory_is_open_to_its_owner_only(first_install: tuple[Path, Run]):
    root, _ = first_install
    assert mode(config(root, "token").parent) == 0o700


def test_the_kubeconfig_authenticates_as_the_agents_service_account(first_install: tuple[Path, Run]):
    root, _ = first_install
    user = self_subject_review(config(root, "kubeconfig"))
    assert user["username"] == f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"


def test_the_kubeconfigs_token_is_bound_to_the_node(first_install: tuple[Path, Run], node: dict[str, Any]):
    root, _ = first_install
    extra = self_subject_review(config(root, "kubeconfig")).get("extra", {})
    assert extra.get(NODE_NAME_EXTRA) == [NODE]
    assert extra.get("authentication.kubernetes.io/node-uid") == [node["metadata"]["uid"]]


def test_the_kubeconfig_reads_the_token_from_the_file_written_below_the_root(first_install: tuple[Path, Run]):
    root, _ = first_install
    document = yaml.safe_load(config(root, "kubeconfig").read_text())
    assert document["users"] == [{"name": SERVICE_ACCOUNT, "user": {"tokenFile": str(config(root, "token"))}}]


def test_a_certificate_authority_file_of_the_admins_context_is_embedded_as_data(
    first_install: tuple[Path, Run], cluster: ClusterInfo
):
    root, _ = first_install
    document = yaml.safe_load(config(root, "kubeconfig").read_text())
    embedded = document["clusters"][0]["cluster"]
    assert embedded == {
        "server": cluster.url,
        "certificate-authority-data": base64.b64encode(cluster.ca_file.read_bytes()).decode(),
    }


def test_certificate_authority_data_of_the_admins_context_is_kept_as_it_is(
    installer: Installer, cluster: ClusterInfo, tmp_path: Path
):
    admin = yaml.safe_load(installer.kubeconfig.read_text())
    data = base64.b64encode(cluster.ca_file.read_bytes()).decode()
    admin["clusters"][0]["cluster"] = {"server": cluster.url, "certificate-authority-data": data}
    with_data = tmp_path / "admin-with-data.yaml"
    with_data.write_text(yaml.safe_dump(admin))
    root = tmp_path / "root"
    root.mkdir()
    run = installer.install(root, kubeconfig=with_data)
    assert run.returncode == 0, run.output
    written = yaml.safe_load(config(root, "kubeconfig").read_text())
    assert written["clusters"][0]["cluster"]["certificate-authority-data"] == data


def test_the_first_install_writes_a_marker_with_setup_version_v1_and_a_uuid(first_install: tuple[Path, Run]):
    root, _ = first_install
    content = json.loads(marker(root).read_text())
    assert set(content) == {"setupVersion", "installationId"}
    assert (content["setupVersion"], str(uuid.UUID(content["installationId"]))) == ("v1", content["installationId"])


def test_the_agent_reads_the_marker_the_script_wrote(first_install: tuple[Path, Run]):
    root, _ = first_install
    read = read_marker(marker(root).parent)
    assert read is not None and read.installation_id == json.loads(marker(root).read_text())["installationId"]


def test_the_marker_is_readable_by_its_owner_only(first_install: tuple[Path, Run]):
    root, _ = first_install
    assert mode(marker(root)) == 0o600


def test_the_three_units_are_copied_unchanged(first_install: tuple[Path, Run]):
    root, _ = first_install
    copied = {name: (root / "etc" / "systemd" / "system" / name).read_text() for name in UNITS}
    assert copied == {name: (HOST_DIR / "systemd" / name).read_text() for name in UNITS}


def test_the_token_never_appears_in_the_output(first_install: tuple[Path, Run]):
    root, run = first_install
    token = config(root, "token").read_text().strip()
    assert token and token not in run.output


def test_the_output_says_what_was_done_and_that_systemctl_was_not_called(first_install: tuple[Path, Run]):
    _, run = first_install
    assert "Node halo has UID" in run.stdout and "did not call systemctl (--no-systemctl)" in run.stdout
    assert run.stderr == ""


def test_a_second_run_keeps_the_installation_id(installer: Installer, tmp_path: Path):
    assert installer.install(tmp_path, "--first-install").returncode == 0
    before = json.loads(marker(tmp_path).read_text())
    second = installer.install(tmp_path, "--first-install")
    assert second.returncode == 0, second.output
    assert json.loads(marker(tmp_path).read_text()) == before


def test_a_second_run_renews_the_token(installer: Installer, tmp_path: Path):
    assert installer.install(tmp_path).returncode == 0
    before = config(tmp_path, "token").read_text()
    assert installer.install(tmp_path).returncode == 0
    assert config(tmp_path, "token").read_text() != before
    assert self_subject_review(config(tmp_path, "kubeconfig"))["username"].endswith(f":{SERVICE_ACCOUNT}")


def test_without_first_install_no_marker_is_written(installer: Installer, tmp_path: Path):
    run = installer.install(tmp_path)
    assert run.returncode == 0, run.output
    assert not marker(tmp_path).exists()


def test_a_marker_the_agent_already_consumed_is_not_written_again(installer: Installer, tmp_path: Path):
    consumed = marker(tmp_path).with_name("installer-marker.consumed")
    consumed.parent.mkdir(parents=True)
    consumed.write_text('{"setupVersion": "v1", "installationId": "11111111-2222-4333-8444-555555555555"}\n')
    run = installer.install(tmp_path, "--first-install")
    assert run.returncode == 0, run.output
    assert not marker(tmp_path).exists()


def test_the_package_is_installed_into_its_own_virtual_environment(installer: Installer, tmp_path: Path):
    wheel = stub_wheel(tmp_path, console_script=True)
    root = tmp_path / "root"
    root.mkdir()
    run = installer.run("--root", str(root), "--node-name", NODE, "--no-systemctl", "--package", str(wheel))
    assert run.returncode == 0, run.output
    agent = root / "opt" / "magicstick" / "host-agent" / "bin" / "magicstick-host-agent"
    assert subprocess.run([str(agent)], capture_output=True, text=True, check=True).stdout == "stub\n"


def test_a_package_without_the_agents_command_is_refused_naming_the_option(installer: Installer, tmp_path: Path):
    wheel = stub_wheel(tmp_path, console_script=False)
    root = tmp_path / "root"
    root.mkdir()
    run = installer.run("--root", str(root), "--node-name", NODE, "--no-systemctl", "--package", str(wheel))
    assert run.returncode == 1
    assert run.stderr.startswith(f"install.sh: --package: '{wheel}' has no magicstick-host-agent command")


def test_a_node_that_does_not_exist_fails_with_a_message_naming_it(installer: Installer, tmp_path: Path):
    run = installer.install(tmp_path, "--first-install", node="no-such-node")
    assert run.returncode == 1
    assert "Node 'no-such-node' does not exist" in run.stderr


def test_a_node_that_does_not_exist_leaves_the_root_untouched(installer: Installer, tmp_path: Path):
    installer.install(tmp_path, "--first-install", node="no-such-node")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("--frobnicate",), "install.sh: unknown option '--frobnicate'"),
        (("--root", "relative/dir"), "install.sh: --root: 'relative/dir' is not an absolute path"),
        (
            ("--node-name", "Not_A_Node"),
            "install.sh: --node-name: 'Not_A_Node' is not a Node name (lower-case letters, digits, '-' and '.')",
        ),
        (
            ("--token-duration", "a year"),
            "install.sh: --token-duration: 'a year' is not a duration such as 8760h, 720h or 90m",
        ),
        (
            ("--kubectl", "/nonexistent/kubectl"),
            "install.sh: --kubectl: '/nonexistent/kubectl' is not a command here (install kubectl first: see magic-cluster/host/README.md)",
        ),
        (("--package",), "install.sh: --package needs a value"),
    ],
)
def test_bad_input_is_refused_in_one_line_naming_the_option(arguments: tuple[str, ...], message: str, tmp_path: Path):
    done = without_cluster(tmp_path, "--no-systemctl", *arguments)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"{message} (see --help)\n")


def test_a_root_other_than_slash_is_refused_unless_systemctl_is_left_alone(tmp_path: Path):
    done = without_cluster(tmp_path, "--root", str(tmp_path))
    assert (done.returncode, done.stderr) == (
        2,
        f"install.sh: --root {tmp_path} needs --no-systemctl: systemctl would act on this running host, not on {tmp_path} (see --help)\n",
    )
