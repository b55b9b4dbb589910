"""The Kubernetes client's list-with-version and watch (providers/kube), which the trigger uses.

Against the real server: a list's resourceVersion resumes a watch that sees the next change,
`abort` ends a watch blocked on a quiet connection at once, the socket carries TCP keepalive,
and what kube-apiserver does with bookmarks: none on a watch of a kind nothing touched since its
resourceVersion (the server's end at timeoutSeconds is then the only sign of life), and one
shortly before that end once the kind changed elsewhere. Against a faked server
(httpx.MockTransport answering as the API server does): an ERROR event's Status becomes its
typed error (410 Gone from a too old resourceVersion, 504 ResourceVersionTooLarge from one the
server has not reached), a refused watch raises before any event, and a line that is no event
is a protocol error.
"""

from __future__ import annotations

import hashlib
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
    ResourceVersionTooLarge,
    RetryPolicy,
    ServerError,
    TcpKeepalive,
    open_client,
)
from tests.faults.proxy import too_large_resource_version
from tests.live.world import ensure_namespace
from tests.services.reconcile_trigger.world import LOADER, config_map

ABORT_BOUND = 5.0
PATH = "/api/v1/namespaces/ns/configmaps"


def test_a_watch_from_a_lists_resource_version_sees_the_next_change(
    admin_access: KubeAccess, admin: KubeClient, namespace: str
):
    admin.apply(CONFIG_MAP, config_map(namespace, "before", {"a": "1"}), field_manager=LOADER)
    collection = admin.list_collection(CONFIG_MAP, namespace=namespace)
    assert [item["metadata"]["name"] for item in collection.items] == ["before"]

    created = admin.apply(CONFIG_MAP, config_map(namespace, "after", {"a": "1"}), field_manager=LOADER)
    with (
        open_client(admin_access) as client,
        client.watch(
            CONFIG_MAP, namespace=namespace, resource_version=collection.resource_version, timeout_seconds=30
        ) as stream,
    ):
        event = next(iter(stream))

    assert (event.type, event.object["metadata"]["name"], event.resource_version) == (
        EventType.ADDED,
        "after",
        created["metadata"]["resourceVersion"],
    )


def test_abort_ends_a_watch_waiting_on_a_quiet_connection_at_once(
    admin_access: KubeAccess, admin: KubeClient, namespace: str
):
    version = admin.list_collection(CONFIG_MAP, namespace=namespace).resource_version
    events: list[object] = []
    with (
        open_client(admin_access) as client,
        client.watch(CONFIG_MAP, namespace=namespace, resource_version=version, timeout_seconds=60) as stream,
    ):
        reader = threading.Thread(target=lambda: events.extend(stream), daemon=True)
        reader.start()
        started = time.monotonic()
        stream.abort()
        reader.join(ABORT_BOUND)

    assert not reader.is_alive()
    assert time.monotonic() - started < ABORT_BOUND
    assert events == []


def test_a_watch_of_a_kind_nothing_touched_gets_no_bookmark_and_is_ended_by_the_server_at_its_timeout(
    admin_access: KubeAccess, admin: KubeClient, namespace: str
):
    version = admin.list_collection(CONFIG_MAP, namespace=namespace).resource_version
    with (
        open_client(admin_access) as client,
        client.watch(CONFIG_MAP, namespace=namespace, resource_version=version, timeout_seconds=2) as stream,
    ):
        started = time.monotonic()
        events = list(stream)
        lasted = time.monotonic() - started

    assert events == []
    assert 1.5 <= lasted < 4.0, "ended by the server at its timeoutSeconds, not by the client"


def test_a_watch_gets_a_bookmark_with_a_later_resource_version_before_its_timeout_once_its_kind_changed_elsewhere(
    admin_access: KubeAccess, admin: KubeClient, namespace: str
):
    elsewhere = f"elsewhere-{hashlib.sha256(namespace.encode()).hexdigest()[:10]}"
    ensure_namespace(admin, elsewhere)
    version = admin.list_collection(CONFIG_MAP, namespace=namespace).resource_version
    with (
        open_client(admin_access) as client,
        client.watch(CONFIG_MAP, namespace=namespace, resource_version=version, timeout_seconds=4) as stream,
    ):
        changed = admin.apply(CONFIG_MAP, config_map(elsewhere, "elsewhere", {"a": "1"}), field_manager=LOADER)
        events = list(stream)

    assert events, "a bookmark before the end"
    assert {e.type for e in events} == {EventType.BOOKMARK}
    assert int(events[0].resource_version or 0) >= int(changed["metadata"]["resourceVersion"])


def test_a_watchs_socket_carries_the_tcp_keepalive_asked_for(
    admin_access: KubeAccess, admin: KubeClient, namespace: str
):
    version = admin.list_collection(CONFIG_MAP, namespace=namespace).resource_version
    keepalive = TcpKeepalive(idle_seconds=7, interval_seconds=3, probes=4)
    with (
        open_client(admin_access) as client,
        client.watch(
            CONFIG_MAP, namespace=namespace, resource_version=version, timeout_seconds=5, keepalive=keepalive
        ) as stream,
    ):
        in_effect = stream.keepalive()
        stream.abort()

    assert in_effect == keepalive


def faked(lines: list[str], *, status: int = 200) -> KubeClient:
    """A client whose server answers every request with `status` and `lines` (one per line)."""

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.params["watch"] == "true" and request.url.params["allowWatchBookmarks"] == "true"
        return httpx.Response(status, content="".join(f"{line}\n" for line in lines).encode(), request=request)

    http = httpx.Client(base_url="https://kube.example.com", transport=httpx.MockTransport(answer))
    return KubeClient(http, retry=RetryPolicy(attempts=1))


def status(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


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
    with faked([event("ERROR", status(500, "InternalError", "etcd is unhappy"))]).watch(
        CONFIG_MAP, namespace="ns", resource_version="5"
    ) as stream:
        with pytest.raises(ServerError):
            list(stream)


@pytest.mark.parametrize(("code", "error"), [(410, Gone), (403, Forbidden)])
def test_a_refused_watch_raises_its_typed_error_before_any_event(code, error):
    with pytest.raises(error):
        with faked([json.dumps(status(code, "Refused", "no"))], status=code).watch(
            CONFIG_MAP, namespace="ns", resource_version="5"
        ):
            pytest.fail("no stream for a refused watch")


def test_a_line_that_is_no_watch_event_is_a_protocol_error():
    with faked(["<html>proxy error</html>"]).watch(CONFIG_MAP, namespace="ns", resource_version="5") as stream:
        with pytest.raises(KubeConnectionError) as broken:
            list(stream)

    assert broken.value.failure is ConnectionFailure.PROTOCOL_ERROR


TOO_LARGE = too_large_resource_version(requested=1205, current=207)


def test_a_504_resource_version_too_large_refusing_a_watch_raises_its_typed_error_keeping_the_status():
    with pytest.raises(ResourceVersionTooLarge) as refused:
        with faked([json.dumps(TOO_LARGE)], status=504).watch(CONFIG_MAP, namespace="ns", resource_version="1205"):
            pytest.fail("no stream for a refused watch")

    assert (refused.value.code, refused.value.reason, refused.value.causes) == (
        504,
        "Timeout",
        ("ResourceVersionTooLarge",),
    )
    assert refused.value.status == TOO_LARGE


def test_an_error_event_of_504_resource_version_too_large_raises_its_typed_error_keeping_the_status():
    with faked([event("ERROR", TOO_LARGE)]).watch(CONFIG_MAP, namespace="ns", resource_version="1205") as stream:
        with pytest.raises(ResourceVersionTooLarge) as refused:
            list(stream)

    assert refused.value.status == TOO_LARGE
    assert "Too large resource version: 1205, current: 207" in refused.value.message


def test_a_504_without_that_cause_is_an_ordinary_server_error():
    timeout = status(504, "Timeout", "Timeout: request did not complete within the allotted timeout")

    with faked([event("ERROR", timeout)]).watch(CONFIG_MAP, namespace="ns", resource_version="5") as stream:
        with pytest.raises(ServerError) as refused:
            list(stream)

    assert not isinstance(refused.value, ResourceVersionTooLarge)
