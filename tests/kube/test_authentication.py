"""Who the server sees: bearer tokens, client certificates, exec credential plugins, the in-cluster service account."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from providers.kinds import CONFIG_MAP
from providers.kube import Forbidden, KubeAccess, KubeConfigError, RetryPolicy, Unauthorized, open_client
from tests.cluster.apiserver import READER_USER, ClusterInfo
from tests.kube import as_yaml, exec_credential, exec_plugin, kubeconfig

ONCE = RetryPolicy(attempts=1)
EXEC_V1BETA1 = "client.authentication.k8s.io/v1beta1"
EXEC_V1 = "client.authentication.k8s.io/v1"


def refusal(access: KubeAccess, namespace: str) -> Forbidden:
    """The server's 403 for listing ConfigMaps in `namespace`, which names the user it authenticated."""
    with pytest.raises(Forbidden) as raised, open_client(access) as client:
        client.list(CONFIG_MAP, namespace=namespace)
    return raised.value


def exec_document(cluster: ClusterInfo, plugin: Path, *, api_version: str) -> dict:
    return kubeconfig(
        name="exec",
        server=cluster.url,
        ca_file=cluster.ca_file,
        user={"exec": {"apiVersion": api_version, "command": str(plugin)}},
    )


class TestBearerToken:
    def test_the_server_sees_the_user_the_token_belongs_to(self, cluster, namespace):
        denied = refusal(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(READER_USER))), namespace)
        assert f'User "{READER_USER}"' in denied.message

    def test_an_unknown_token_raises_unauthorized(self, cluster, namespace):
        document = kubeconfig(
            name="stranger", server=cluster.url, ca_file=cluster.ca_file, user={"token": "not-a-token"}
        )
        with (
            pytest.raises(Unauthorized) as raised,
            open_client(KubeAccess(kubeconfig=as_yaml(document), retry=ONCE)) as client,
        ):
            client.list(CONFIG_MAP, namespace=namespace)
        assert (raised.value.code, raised.value.reason) == (401, "Unauthorized")


class TestClientCertificate:
    def test_the_server_sees_the_common_name_of_the_certificate_as_the_user(self, cluster, namespace):
        access = KubeAccess(kubeconfig=str(cluster.certificate_kubeconfig_path("certified-observer")))
        assert 'User "certified-observer"' in refusal(access, namespace).message

    def test_the_organisations_of_the_certificate_are_the_users_groups(self, cluster, namespace):
        access = KubeAccess(kubeconfig=str(cluster.certificate_kubeconfig_path("certified-admin", "system:masters")))
        with open_client(access) as client:
            assert client.list(CONFIG_MAP, namespace=namespace) == []

    def test_a_certificate_and_key_inline_in_kubeconfig_contents_work(self, cluster, namespace):
        certificate = cluster.client_certificate("inline-observer")
        user = {
            "client-certificate-data": base64.b64encode(certificate.cert_file.read_bytes()).decode(),
            "client-key-data": base64.b64encode(certificate.key_file.read_bytes()).decode(),
        }
        document = kubeconfig(name="inline", server=cluster.url, ca_file=cluster.ca_file, user=user)
        assert 'User "inline-observer"' in refusal(KubeAccess(kubeconfig=as_yaml(document)), namespace).message

    def test_a_missing_key_file_raises_kube_config_error(self, cluster, tmp_path):
        certificate = cluster.client_certificate("keyless")
        user = {"client-certificate": str(certificate.cert_file), "client-key": str(tmp_path / "gone.key")}
        document = kubeconfig(name="keyless", server=cluster.url, ca_file=cluster.ca_file, user=user)
        with pytest.raises(KubeConfigError, match="gone.key"), open_client(KubeAccess(kubeconfig=as_yaml(document))):
            pass


class TestExecCredentialPlugin:
    @pytest.mark.parametrize("api_version", [EXEC_V1BETA1, EXEC_V1])
    def test_the_token_the_plugin_prints_is_sent(self, cluster, namespace, tmp_path, api_version):
        token = cluster.identity(READER_USER).token
        plugin = exec_plugin(tmp_path, stdout=exec_credential(token, api_version=api_version))
        access = KubeAccess(kubeconfig=as_yaml(exec_document(cluster, plugin, api_version=api_version)))
        assert f'User "{READER_USER}"' in refusal(access, namespace).message

    def test_a_plugin_that_fails_raises_kube_config_error_with_its_message(self, cluster, namespace, tmp_path):
        plugin = exec_plugin(tmp_path, stdout="", stderr="please log in first", exit_code=3)
        access = KubeAccess(kubeconfig=as_yaml(exec_document(cluster, plugin, api_version=EXEC_V1BETA1)))
        with pytest.raises(KubeConfigError, match="please log in first"), open_client(access) as client:
            client.list(CONFIG_MAP, namespace=namespace)

    def test_a_plugin_that_prints_no_token_raises_kube_config_error(self, cluster, namespace, tmp_path):
        plugin = exec_plugin(tmp_path, stdout='{"kind": "ExecCredential", "status": {}}')
        access = KubeAccess(kubeconfig=as_yaml(exec_document(cluster, plugin, api_version=EXEC_V1BETA1)))
        with pytest.raises(KubeConfigError, match="status.token"), open_client(access) as client:
            client.list(CONFIG_MAP, namespace=namespace)

    def test_a_plugin_that_does_not_exist_raises_kube_config_error(self, cluster, namespace, tmp_path):
        access = KubeAccess(kubeconfig=as_yaml(exec_document(cluster, tmp_path / "absent", api_version=EXEC_V1BETA1)))
        with pytest.raises(KubeConfigError, match="cannot run"), open_client(access) as client:
            client.list(CONFIG_MAP, namespace=namespace)


class TestInClusterServiceAccount:
    @pytest.fixture
    def service_account(self, admin_client, namespace) -> str:
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "observer"}}
        admin_client.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", json=body).raise_for_status()
        return "observer"

    @pytest.fixture
    def mounted(self, cluster, admin_client, namespace, service_account, tmp_path, monkeypatch) -> Path:
        """A service account directory as the kubelet mounts it, with a token from the TokenRequest API,
        and an environment with neither KUBECONFIG nor ~/.kube/config."""
        directory = tmp_path / "serviceaccount"
        directory.mkdir()
        (directory / "token").write_text(token_request(admin_client, namespace, service_account))
        shutil.copyfile(cluster.ca_file, directory / "ca.crt")
        (directory / "namespace").write_text(namespace)
        monkeypatch.delenv("KUBECONFIG", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", cluster.url.rsplit(":", 1)[1])
        return directory

    def test_the_server_sees_the_service_account(self, mounted, namespace, service_account):
        denied = refusal(KubeAccess(service_account_dir=str(mounted)), namespace)
        assert f'User "system:serviceaccount:{namespace}:{service_account}"' in denied.message

    def test_a_replaced_token_is_read_again_when_the_server_refuses_the_old_one(
        self, mounted, admin_client, namespace, service_account
    ):
        valid = (mounted / "token").read_text()
        (mounted / "token").write_text("revoked-token")
        with open_client(KubeAccess(service_account_dir=str(mounted), retry=ONCE)) as client:
            with pytest.raises(Unauthorized):
                client.list(CONFIG_MAP, namespace=namespace)
            (mounted / "token").write_text(valid)
            with pytest.raises(Forbidden, match=f"system:serviceaccount:{namespace}:{service_account}"):
                client.list(CONFIG_MAP, namespace=namespace)

    def test_a_kubeconfig_named_by_KUBECONFIG_comes_before_the_service_account(
        self, cluster, mounted, namespace, monkeypatch
    ):
        monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig_path(READER_USER)))
        denied = refusal(KubeAccess(service_account_dir=str(mounted)), namespace)
        assert f'User "{READER_USER}"' in denied.message

    def test_the_default_kubeconfig_comes_before_the_service_account(self, cluster, mounted, namespace, tmp_path):
        (tmp_path / "home" / ".kube").mkdir(parents=True)
        shutil.copyfile(cluster.kubeconfig_path(READER_USER), tmp_path / "home" / ".kube" / "config")
        denied = refusal(KubeAccess(service_account_dir=str(mounted)), namespace)
        assert f'User "{READER_USER}"' in denied.message

    def test_without_the_service_host_variable_it_raises_kube_config_error(self, mounted, monkeypatch):
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
        with (
            pytest.raises(KubeConfigError, match="KUBERNETES_SERVICE_HOST"),
            open_client(KubeAccess(service_account_dir=str(mounted))),
        ):
            pass

    def test_without_any_configuration_kube_config_error_says_where_it_looked(self, tmp_path, monkeypatch):
        monkeypatch.delenv("KUBECONFIG", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path))
        absent = tmp_path / "no-service-account"
        with pytest.raises(KubeConfigError) as raised, open_client(KubeAccess(service_account_dir=str(absent))):
            pass
        assert "~/.kube/config" in str(raised.value)
        assert str(absent) in str(raised.value)


def token_request(admin_client, namespace: str, service_account: str) -> str:
    """A bound ServiceAccount token from the TokenRequest API."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    response = admin_client.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token", json=body)
    response.raise_for_status()
    return response.json()["status"]["token"]
