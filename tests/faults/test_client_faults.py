"""The Kubernetes client's retry policy, seen from the wire: what is retried, how often, how long it waits."""

from __future__ import annotations

import pytest

from providers.kinds import CONFIG_MAP
from providers.kube import (
    Conflict,
    Forbidden,
    Invalid,
    KubeAccess,
    KubeClient,
    KubeError,
    NotFound,
    RetryPolicy,
    ServerError,
    open_client,
)
from tests.faults.conftest import ATTEMPTS, Faulty
from tests.faults.proxy import Answer, Fault, Reset

POLICY = RetryPolicy(attempts=4, first_delay_seconds=0.2, max_delay_seconds=5.0)


def config_maps(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def test_retry_after_is_honoured_up_to_the_policys_longest_wait_and_other_answers_back_off(
    faulty: Faulty, namespace: str
):
    access = KubeAccess(
        kubeconfig=faulty.access.kubeconfig, timeout_seconds=faulty.access.timeout_seconds, retry=POLICY
    )
    faulty.proxy.plan(
        Fault("GET", config_maps(namespace), Answer(429, retry_after="3"), on=(1,)),
        Fault("GET", config_maps(namespace), Answer(429, retry_after="120"), on=(2,)),
        Fault("GET", config_maps(namespace), Answer(503), on=(3,)),
    )
    waits: list[float] = []
    with open_client(access, sleep=waits.append) as client:
        assert client.list(CONFIG_MAP, namespace=namespace) == []
    assert waits == [3.0, 5.0, 0.8]
    assert faulty.proxy.count("GET", config_maps(namespace)) == 4


def test_a_page_that_fails_is_asked_again_with_the_same_token_and_the_list_is_whole(
    faulty: Faulty, admin: KubeClient, namespace: str
):
    names = [f"page-{index}" for index in range(3)]
    for name in names:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}
        admin.apply(CONFIG_MAP, body, field_manager="test")
    faulty.proxy.plan(
        Fault("GET", config_maps(namespace), Reset(), on=(2,)),
        Fault("GET", config_maps(namespace), Answer(503), on=(4,)),
    )

    listed = faulty.client.list(CONFIG_MAP, namespace=namespace, page_size=1)

    assert [item["metadata"]["name"] for item in listed] == names
    asked = [e.query for e in faulty.proxy.exchanges if e.path == config_maps(namespace)]
    assert len(asked) == len(names) + 2
    assert "continue=" in asked[1] and asked[1] == asked[2], "the reset page is asked again with its token"
    assert "continue=" in asked[3] and asked[3] == asked[4], "the 503 page is asked again with its token"


NOT_RETRIED = {409: Conflict, 404: NotFound, 403: Forbidden, 422: Invalid}


@pytest.mark.parametrize(("code", "error"), NOT_RETRIED.items(), ids=[str(code) for code in NOT_RETRIED])
def test_an_answer_that_no_wait_changes_is_not_retried_and_keeps_the_servers_status(
    faulty: Faulty, namespace: str, code: int, error: type[KubeError]
):
    faulty.proxy.plan(Fault("GET", config_maps(namespace), Answer(code), on=None))
    with pytest.raises(error) as failure:
        faulty.client.list(CONFIG_MAP, namespace=namespace)
    assert failure.value.code == code
    assert failure.value.message == f"fault injected by the test proxy into GET {config_maps(namespace)}"
    assert faulty.proxy.count("GET", config_maps(namespace)) == 1
    assert faulty.sleeps == []


def test_every_retried_answer_is_tried_exactly_as_often_as_the_policy_says(faulty: Faulty, namespace: str):
    faulty.proxy.plan(Fault("GET", config_maps(namespace), Answer(500), on=None))
    with pytest.raises(ServerError, match="500 InternalError"):
        faulty.client.list(CONFIG_MAP, namespace=namespace)
    assert faulty.proxy.count("GET", config_maps(namespace)) == ATTEMPTS
    assert faulty.sleeps == [0.0] * (ATTEMPTS - 1)
