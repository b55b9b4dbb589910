"""The Statuses the fault proxy plays are the ones the real API server sends, field for field.

The server is asked for each in earnest: a LIST at a resourceVersion beyond its own (it waits
three seconds for its cache to catch up, then answers 504 ResourceVersionTooLarge), and reads
as an identity RBAC grants nothing (403).
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests.cluster.apiserver import READER_USER, ClusterInfo
from tests.faults.proxy import forbidden, too_large_resource_version

CURRENT = re.compile(r"current: ([0-9]+)$")


def test_the_too_large_resource_version_status_is_the_servers(admin_client: httpx.Client, namespace: str):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    current = int(admin_client.get(path).json()["metadata"]["resourceVersion"])
    requested = current + 1000

    answer = admin_client.get(path, params={"resourceVersion": str(requested), "resourceVersionMatch": "NotOlderThan"})

    assert answer.status_code == 504
    assert answer.headers["retry-after"] == "1"
    cache = CURRENT.search(answer.json()["message"])
    assert cache is not None, answer.text
    assert answer.json() == too_large_resource_version(requested=requested, current=int(cache.group(1)))


@pytest.mark.parametrize(
    ("verb", "plural", "group", "params"),
    [
        ("list", "modelactivations", "appliance.magicstick.dev", {}),
        ("watch", "configmaps", "", {"watch": "true"}),
    ],
    ids=["list of a custom resource", "watch of a core kind"],
)
def test_the_forbidden_status_is_the_servers(
    cluster: ClusterInfo, namespace: str, verb: str, plural: str, group: str, params: dict
):
    version = f"apis/{group}/v1alpha1" if group else "api/v1"
    with cluster.client(READER_USER) as reader:
        answer = reader.get(f"/{version}/namespaces/{namespace}/{plural}", params=params)

    assert answer.status_code == 403
    assert answer.json() == forbidden(user=READER_USER, verb=verb, plural=plural, group=group, namespace=namespace)
