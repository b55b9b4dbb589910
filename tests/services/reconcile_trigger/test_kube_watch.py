"""The Kubernetes client's list-with-version and watch (providers/kube), which the trigger uses.

Against the real server: a list's resourceVersion resumes a watch that sees the next change,
and `abort` ends a watch blocked on a quiet connection at once. Against a faked server
(httpx.MockTransport answering as the API server does): an ERROR event's Status becomes its
typed error (410 Gone from a too old resourceVersion), a refused watch raises before any event,
and a line that is no event is a protocol error.
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from providers.kinds import CONFIG_MAP
from providers.kube import (
    ConnectionFailure,
    EventType,
    Forbidden,
    Gone,
    KubeAccess,
    KubeClient,
    KubeConnectionError,
    RetryPolicy,
    ServerError,
    open_client,
)
from tests.services.reconcile_trigger.world import LOADER, config_map

ABORT_BOUND = 5.0
PATH = "/api/v1/namespaces/ns/configmaps"


def test_a_watch_from_a_lists_resource_version_sees_the_next_change(admin_access: KubeAccess, admin: KubeClient, namespace: str):
    admin.apply(CONFIG_MAP, config_map(namespace, "before", {"a": "1"}), field_manager=LOADER)
    collection = admin.list_collection(CONFIG_MAP, namespace=namespace)
    assert [item["metadata"]["name"] for item in collection.items] == ["before"]

    created = admin.apply(CONFIG_MAP, config_map(namespace, "after", {"a": "1"}), field_manager=LOADER)
    with open_client(admin_access) as client, client.watch(CONFIG_MAP, namespace=namespace, resource_version=collection.resource_version, timeout_seconds=30) as stream:
        event = next(iter(stream))

    assert (event.type, event.object["metadata"]["name"], event.resource_version) == (EventType.ADDED, "after", created["metadata"]["resourceVersion"])


def test_abort_ends_a_watch_waiting_on_a_quiet_connection_at_once(admin_access: KubeAccess, admin: KubeClient, namespace: str):
    version = admin.list_collection(CONFIG_MAP, namespace=namespace).resource_version
    events: list[object] = []
    with open_client(admin_access) as client, client.watch(CONFIG_MAP, namespace=namespace, resource_version=version, timeout_seconds=60) as stream:
        reader = threading.Thread(target=lambda: events.extend(stream), daemon=True)
        reader.start()
        started = time.monotonic()
        stream.abort()
        reader.join(ABORT_BOUND)

    assert not reader.is_alive()
    assert time.monotonic() - started < ABORT_BOUND
    assert events == []


def faked(lines: list[str], *, status: int = 200) -> KubeClient:
    """A client whose server answers every request with `status` and `lines` (one per line)."""

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.params["watch"] == "true" and request.url.params["allowWatchBookmarks"] == "true"
        return httpx.Response(status, content="".join(f"{line}\n" for line in lines).encode(), request=request)

    http = httpx.Client(base_url="https://kube.example.com", transport=httpx.MockTransport(answer))
    return KubeClient(http, retry=RetryPolicy(attempts=1))


def status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason, "message": message}


def event(kind: str, obj: dict) -> str:
    return json.dumps({"type": kind, "object": obj})


def test_events_come_in_order_and_an_error_event_of_410_raises_gone():
    cm = {"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"}}
    lines = [
        event("ADDED", cm),
        event("BOOKMARK", {"kind": "ConfigMap", "metadata": {"resourceVersion": "9"}}),
        event("ERROR", status(410, "Expired", "too old resource version: 1 (5)")),
    ]
    seen = []
    with faked(lines).watch(CONFIG_MAP, namespace="ns", resource_version="1") as stream, pytest.raises(Gone) as gone:
        seen.extend((e.type, e.resource_version) for e in stream)

    assert seen == [(EventType.ADDED, "7"), (EventType.BOOKMARK, "9")]
    assert (gone.value.code, gone.value.reason, gone.value.path) == (410, "Expired", PATH)
    assert "too old resource version" in gone.value.message


def test_an_error_event_of_another_code_raises_its_typed_error():
    with faked([event("ERROR", status(500, "InternalError", "etcd is unhappy"))]).watch(CONFIG_MAP, namespace="ns", resource_version="5") as stream:
        with pytest.raises(ServerError):
            list(stream)


@pytest.mark.parametrize(("code", "error"), [(410, Gone), (403, Forbidden)])
def test_a_refused_watch_raises_its_typed_error_before_any_event(code, error):
    with pytest.raises(error):
        with faked([json.dumps(status(code, "Refused", "no"))], status=code).watch(CONFIG_MAP, namespace="ns", resource_version="5"):
            pytest.fail("no stream for a refused watch")


def test_a_line_that_is_no_watch_event_is_a_protocol_error():
    with faked(["<html>proxy error</html>"]).watch(CONFIG_MAP, namespace="ns", resource_version="5") as stream:
        with pytest.raises(KubeConnectionError) as broken:
            list(stream)

    assert broken.value.failure is ConnectionFailure.PROTOCOL_ERROR
