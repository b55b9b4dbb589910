"""The retry loop: 429, 5xx and unreachable servers are retried under the RetryPolicy, nothing else is.

The real server cannot be made to answer 429 or 503 on demand, so those answers come from an
httpx.MockTransport handed to KubeClient: these tests exercise the loop, not the API. The
unreachable server is real: a loopback port that refuses connections (test_connection_errors.py
has the other ways a server can be unreachable).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from providers.kinds import CONFIG_MAP
from providers.kube import (
    Conflict,
    ConnectionFailure,
    Invalid,
    KubeAccess,
    KubeClient,
    KubeConnectionError,
    NotFound,
    RetryPolicy,
    ServerError,
    TooManyRequests,
    open_client,
)
from tests.kube import as_yaml, kubeconfig, refusing_port

POLICY = RetryPolicy(attempts=4, first_delay_seconds=0.5, max_delay_seconds=3.0)
OK = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}}


def status(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def scripted(*answers: httpx.Response) -> Callable[[httpx.Request], httpx.Response]:
    """A transport handler that gives `answers` in order, one per request."""
    remaining: Iterator[httpx.Response] = iter(answers)
    return lambda request: next(remaining)


def client_over(
    handler: Callable[[httpx.Request], httpx.Response], waits: list[float], retry: RetryPolicy = POLICY
) -> KubeClient:
    http = httpx.Client(transport=httpx.MockTransport(handler), base_url="https://kube.example.local")
    return KubeClient(http, retry=retry, sleep=waits.append)


def unavailable(retry_after: str | None = None) -> httpx.Response:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return httpx.Response(503, json=status(503, "ServiceUnavailable", "etcd is restarting"), headers=headers)


def throttled(retry_after: str) -> httpx.Response:
    return httpx.Response(429, json=status(429, "TooManyRequests", "slow down"), headers={"Retry-After": retry_after})


class TestUnreachableServer:
    def test_it_is_tried_exactly_attempts_times_with_the_backoff_between(self):
        waits: list[float] = []
        with refusing_port() as port:
            document = kubeconfig(name="gone", server=f"https://127.0.0.1:{port}", user={"token": "t"})
            with open_client(KubeAccess(kubeconfig=as_yaml(document), retry=POLICY), sleep=waits.append) as client:
                with pytest.raises(KubeConnectionError) as raised:
                    client.list(CONFIG_MAP, namespace="default")
                assert client.requests == 4
        assert waits == [0.5, 1.0, 2.0]
        assert (raised.value.code, raised.value.failure) == (0, ConnectionFailure.REFUSED)
        assert raised.value.message == f"cannot reach https://127.0.0.1:{port}: connection refused"


class TestRetriedAnswers:
    def test_a_503_is_retried_until_the_server_answers(self):
        waits: list[float] = []
        client = client_over(scripted(unavailable(), unavailable(), httpx.Response(200, json=OK)), waits)
        assert client.request("GET", "/api/v1/namespaces/default/configmaps/x") == OK
        assert (client.requests, waits) == (3, [0.5, 1.0])

    def test_a_429_waits_as_long_as_retry_after_asks_when_that_is_longer_than_the_backoff(self):
        waits: list[float] = []
        client = client_over(scripted(throttled("2"), httpx.Response(200, json=OK)), waits)
        client.request("GET", "/api/v1/namespaces/default/configmaps/x")
        assert waits == [2.0]

    def test_a_retry_after_beyond_max_delay_waits_max_delay(self):
        waits: list[float] = []
        client = client_over(scripted(throttled("120"), unavailable("3600"), httpx.Response(200, json=OK)), waits)
        client.request("GET", "/api/v1/namespaces/default/configmaps/x")
        assert waits == [3.0, 3.0]

    def test_a_retry_after_shorter_than_the_backoff_waits_the_backoff(self):
        waits: list[float] = []
        client = client_over(scripted(throttled("0"), httpx.Response(200, json=OK)), waits)
        client.request("GET", "/api/v1/namespaces/default/configmaps/x")
        assert waits == [0.5]

    def test_a_retry_after_that_is_not_a_number_waits_the_backoff(self):
        waits: list[float] = []
        client = client_over(scripted(throttled("Wed, 21 Oct 2015 07:28:00 GMT"), httpx.Response(200, json=OK)), waits)
        client.request("GET", "/api/v1/namespaces/default/configmaps/x")
        assert waits == [0.5]

    def test_a_server_error_that_persists_raises_server_error_with_the_servers_status(self):
        waits: list[float] = []
        client = client_over(lambda request: unavailable(), waits)
        with pytest.raises(ServerError) as raised:
            client.request("GET", "/api/v1/namespaces/default/configmaps/x")
        assert (raised.value.code, raised.value.reason, raised.value.message) == (
            503,
            "ServiceUnavailable",
            "etcd is restarting",
        )
        assert (client.requests, waits) == (4, [0.5, 1.0, 2.0])

    def test_throttling_that_persists_raises_too_many_requests(self):
        client = client_over(lambda request: throttled("1"), [])
        with pytest.raises(TooManyRequests):
            client.request("GET", "/api/v1/namespaces/default/configmaps/x")
        assert client.requests == 4


class TestAnswersNeverRetried:
    @pytest.mark.parametrize(
        ("code", "reason", "error"),
        [(404, "NotFound", NotFound), (409, "Conflict", Conflict), (422, "Invalid", Invalid)],
    )
    def test_a_client_error_is_raised_at_once(self, code, reason, error):
        waits: list[float] = []
        client = client_over(lambda request: httpx.Response(code, json=status(code, reason, "no")), waits)
        with pytest.raises(error):
            client.request(
                "PATCH", "/api/v1/namespaces/default/configmaps/x", body={}, content_type="application/apply-patch+yaml"
            )
        assert (client.requests, waits) == (1, [])


class TestPolicy:
    def test_the_backoff_doubles_from_the_first_delay_up_to_the_maximum(self):
        assert [POLICY.delay(attempt) for attempt in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]

    def test_a_policy_without_attempts_is_refused(self):
        with pytest.raises(ValueError, match="at least 1"):
            RetryPolicy(attempts=0)
