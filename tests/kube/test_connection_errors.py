"""A request that gets no answer raises KubeConnectionError naming the server's URL and the cause.

No test here needs the test kube-apiserver: the servers are loopback sockets that refuse,
present an untrusted certificate, never answer or hang up, and an unresolvable host name.
"""

from __future__ import annotations

import re
import ssl

import httpx
import pytest

from providers.kinds import CONFIG_MAP
from providers.kube import ConnectionFailure, KubeAccess, KubeConnectionError, KubeError, RetryPolicy, open_client
from providers.kube.errors import connection_error
from providers.live_reader import SnapshotReadError, read_snapshot
from tests.kube import (
    as_yaml,
    hang_up_after_the_request,
    kubeconfig,
    one_connection_server,
    refusing_port,
    self_signed_certificate,
    silent_port,
    tls_handshake,
)

ONCE = RetryPolicy(attempts=1)
PATH = "/api/v1/namespaces/default/configmaps"


def access_to(server: str, *, retry: RetryPolicy = ONCE, timeout_seconds: float = 10.0) -> KubeAccess:
    """Access to `server` with a token and the system's trusted CAs."""
    document = kubeconfig(name="target", server=server, user={"token": "t"})
    return KubeAccess(kubeconfig=as_yaml(document), retry=retry, timeout_seconds=timeout_seconds)


def failure_listing_config_maps(access: KubeAccess) -> KubeConnectionError:
    with pytest.raises(KubeConnectionError) as raised, open_client(access) as client:
        client.list(CONFIG_MAP, namespace="default")
    return raised.value


class TestTheMessageNamesTheServerAndTheCause:
    def test_a_closed_port_reads_cannot_reach_the_url_connection_refused(self):
        with refusing_port() as port:
            error = failure_listing_config_maps(access_to(f"https://127.0.0.1:{port}"))
        assert str(error) == f"GET {PATH}: cannot reach https://127.0.0.1:{port}: connection refused"
        assert (error.url, error.failure, error.cause) == (
            f"https://127.0.0.1:{port}",
            ConnectionFailure.REFUSED,
            "connection refused",
        )

    def test_an_unknown_host_name_reads_host_name_not_resolved(self):
        error = failure_listing_config_maps(access_to("https://magicstick-test.invalid:6443"))
        assert error.message.startswith("cannot reach https://magicstick-test.invalid:6443: host name not resolved: ")
        assert error.failure is ConnectionFailure.NAME_NOT_RESOLVED

    def test_an_untrusted_server_certificate_reads_tls_certificate_verify_failed_with_the_reason(self, tmp_path):
        with one_connection_server(tls_handshake(self_signed_certificate(tmp_path, "127.0.0.1"))) as port:
            error = failure_listing_config_maps(access_to(f"https://127.0.0.1:{port}"))
        expected = rf"cannot reach https://127\.0\.0\.1:{port}: TLS certificate verify failed: self.signed certificate"
        assert re.fullmatch(expected, error.message)
        assert error.failure is ConnectionFailure.CERTIFICATE_REJECTED

    def test_an_untrusted_server_certificate_is_tried_once_whatever_the_policy_allows(self, tmp_path):
        waits: list[float] = []
        with one_connection_server(tls_handshake(self_signed_certificate(tmp_path, "127.0.0.1"))) as port:
            with open_client(
                access_to(f"https://127.0.0.1:{port}", retry=RetryPolicy(attempts=4)), sleep=waits.append
            ) as client:
                with pytest.raises(KubeConnectionError):
                    client.list(CONFIG_MAP, namespace="default")
                assert (client.requests, waits) == (1, [])

    def test_a_server_that_never_answers_reads_timed_out_after_the_configured_seconds(self):
        with silent_port() as port:
            error = failure_listing_config_maps(access_to(f"https://127.0.0.1:{port}", timeout_seconds=0.3))
        assert error.message == f"cannot reach https://127.0.0.1:{port}: timed out after 0.3 s (connecting)"
        assert error.failure is ConnectionFailure.TIMEOUT

    def test_a_server_that_hangs_up_without_answering_reads_http_protocol_error(self):
        with one_connection_server(hang_up_after_the_request) as port:
            error = failure_listing_config_maps(access_to(f"http://127.0.0.1:{port}"))
        assert error.message == (
            f"cannot reach http://127.0.0.1:{port}: HTTP protocol error: Server disconnected without sending a response."
        )
        assert error.failure is ConnectionFailure.PROTOCOL_ERROR


class TestTheErrorType:
    def test_a_connection_error_is_a_kube_error_with_code_0_and_the_failure_as_reason(self):
        with refusing_port() as port:
            error = failure_listing_config_maps(access_to(f"https://127.0.0.1:{port}"))
        assert isinstance(error, KubeError)
        assert (error.code, error.reason, error.method, error.path) == (0, "ConnectionRefused", "GET", PATH)

    def test_a_connection_error_is_chained_to_the_transport_error(self):
        with refusing_port() as port:
            error = failure_listing_config_maps(access_to(f"https://127.0.0.1:{port}"))
        assert isinstance(error.__cause__, httpx.ConnectError)


def _raised_from(error: httpx.TransportError, cause: BaseException) -> httpx.TransportError:
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    ("error", "failure", "cause"),
    [
        (httpx.WriteTimeout("timed out"), ConnectionFailure.TIMEOUT, "timed out after 10 s (sending the request)"),
        (httpx.ReadTimeout("timed out"), ConnectionFailure.TIMEOUT, "timed out after 10 s (waiting for the answer)"),
        (
            httpx.PoolTimeout("timed out"),
            ConnectionFailure.TIMEOUT,
            "timed out after 10 s (waiting for a free connection)",
        ),
        (
            _raised_from(httpx.ReadError("reset"), ConnectionResetError(104, "Connection reset by peer")),
            ConnectionFailure.NETWORK,
            "connection reset by peer",
        ),
        (
            _raised_from(httpx.ConnectError("eof"), ssl.SSLEOFError(8, "EOF occurred in violation of protocol")),
            ConnectionFailure.TLS_FAILED,
            "TLS handshake failed: EOF occurred in violation of protocol",
        ),
        (
            httpx.UnsupportedProtocol("Request URL has an unsupported protocol 'ftp://'."),
            ConnectionFailure.NETWORK,
            "UnsupportedProtocol: Request URL has an unsupported protocol 'ftp://'.",
        ),
    ],  # fmt: skip
)
def test_every_transport_failure_becomes_a_sentence_about_the_server(error, failure, cause):
    unreachable = connection_error(
        error, method="GET", path=PATH, url="https://10.0.0.1:6443", timeout=httpx.Timeout(10.0)
    )
    assert (unreachable.failure, unreachable.cause) == (failure, cause)
    assert unreachable.message == f"cannot reach https://10.0.0.1:6443: {cause}"


def test_a_snapshot_read_of_an_unreachable_server_names_the_kind_the_url_and_the_cause():
    with refusing_port() as port:
        with pytest.raises(SnapshotReadError) as raised:
            read_snapshot(access_to(f"https://127.0.0.1:{port}"), system_namespace="ai-system")
    assert str(raised.value) == (
        "reading CustomResourceDefinition (apiextensions.k8s.io/v1) failed: "
        f"cannot reach https://127.0.0.1:{port}: connection refused"
    )
    assert isinstance(raised.value.__cause__, KubeConnectionError)
