"""TLS verification is always on: the server's certificate must chain to the configured CA."""

from __future__ import annotations

import pytest

from providers.kinds import CONFIG_MAP
from providers.kube import KubeAccess, KubeConfigError, KubeConnectionError, RetryPolicy, open_client
from tests.kube import as_yaml, kubeconfig, self_signed_certificate

VERIFY_FAILED = r"cannot reach https://\S+: TLS certificate verify failed: "


def access_trusting(cluster, ca_file, **options) -> KubeAccess:
    document = kubeconfig(name="tls", server=cluster.url, ca_file=ca_file, user={"token": cluster.admin_token})
    return KubeAccess(kubeconfig=as_yaml(document), **options)


def without_ca(cluster) -> KubeAccess:
    return KubeAccess(
        kubeconfig=as_yaml(kubeconfig(name="tls", server=cluster.url, user={"token": cluster.admin_token}))
    )


class TestVerification:
    def test_a_ca_that_did_not_sign_the_server_certificate_raises_kube_connection_error(self, cluster, tmp_path):
        access = access_trusting(cluster, self_signed_certificate(tmp_path))
        with pytest.raises(KubeConnectionError, match=VERIFY_FAILED) as raised, open_client(access) as client:
            client.list(CONFIG_MAP, namespace="default")
        assert raised.value.message.startswith(f"cannot reach {cluster.url}: TLS certificate verify failed: ")

    def test_a_rejected_certificate_is_not_retried(self, cluster, tmp_path):
        waits: list[float] = []
        access = access_trusting(cluster, self_signed_certificate(tmp_path), retry=RetryPolicy(attempts=4))
        with open_client(access, sleep=waits.append) as client:
            with pytest.raises(KubeConnectionError):
                client.list(CONFIG_MAP, namespace="default")
            assert (client.requests, waits) == (1, [])

    def test_without_a_ca_the_self_signed_server_is_not_trusted(self, cluster):
        with pytest.raises(KubeConnectionError, match=VERIFY_FAILED), open_client(without_ca(cluster)) as client:
            client.list(CONFIG_MAP, namespace="default")

    def test_the_configured_ca_is_trusted(self, cluster, namespace):
        with open_client(access_trusting(cluster, cluster.ca_file)) as client:
            assert client.list(CONFIG_MAP, namespace=namespace) == []


class TestUnusableCertificateAuthority:
    def test_a_missing_ca_file_raises_kube_config_error_naming_it(self, cluster, tmp_path):
        with (
            pytest.raises(KubeConfigError, match="absent-ca.crt"),
            open_client(access_trusting(cluster, tmp_path / "absent-ca.crt")),
        ):
            pass

    def test_a_ca_file_that_holds_no_certificate_raises_kube_config_error(self, cluster, tmp_path):
        garbage = tmp_path / "garbage.crt"
        garbage.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
        with pytest.raises(KubeConfigError, match="certificate"), open_client(access_trusting(cluster, garbage)):
            pass
