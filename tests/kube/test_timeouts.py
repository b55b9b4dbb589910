"""KubeAccess.timeout_seconds bounds every request: a server that never answers fails fast."""

from __future__ import annotations

import time

import pytest

from providers.kinds import CONFIG_MAP
from providers.kube import ConnectionFailure, KubeAccess, KubeConnectionError, RetryPolicy, open_client
from tests.kube import as_yaml, kubeconfig, silent_port


def test_a_server_that_accepts_the_connection_but_never_answers_fails_within_the_timeout():
    with silent_port() as port:
        document = kubeconfig(name="silent", server=f"https://127.0.0.1:{port}", user={"token": "t"})
        access = KubeAccess(kubeconfig=as_yaml(document), timeout_seconds=0.3, retry=RetryPolicy(attempts=1))
        started = time.monotonic()
        with pytest.raises(KubeConnectionError) as raised, open_client(access) as client:
            client.list(CONFIG_MAP, namespace="default")
        elapsed = time.monotonic() - started
    assert raised.value.failure is ConnectionFailure.TIMEOUT
    assert raised.value.cause == "timed out after 0.3 s (connecting)"
    assert 0.3 <= elapsed < 3.0
