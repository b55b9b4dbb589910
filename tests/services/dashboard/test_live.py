"""The live status stream, /api/v1/stream, of the running dashboard against the test API server:
what a page receives, the bounds on open streams, and ordinary requests while many are open.

The bounds are counted per dashboard process, so each test of a bound runs its own dashboard
(`fresh`), with nothing else open. Waiting is on the streams' own events or on the dashboard's
answers, never on a clock: a read that gets nothing for READ_SECONDS fails the test.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from benchmarks.dashboard import EventParser, ServerSentEvent, model_activation, status_of
from providers.kinds import MODEL_ACTIVATION
from providers.kube import Gone, KubeAccess, KubeConfigError, WatchEvent, open_async_reader
from providers.kube.access import EXEC_API_V1
from services.dashboard.hub import RETRY_AFTER_SECONDS, STREAMS_PER_USER, STREAMS_TOTAL
from tests.kube import as_yaml, exec_credential, exec_plugin, kubeconfig
from tests.services.access_guard.issuer import JwksServer
from tests.services.dashboard.world import (
    NAMESPACE,
    TOKEN_HEADER,
    Dashboard,
    World,
    service_account_kubeconfig,
    start_dashboard,
)

pytestmark = pytest.mark.usefixtures("world")

STREAM = "/api/v1/stream"
READ_SECONDS = 20.0
"""The longest a stream may stay silent while a test waits on it (pings come every 15 s)."""
WAIT_SECONDS = 30.0
"""The longest one wait on a stream's events, or on a slot given back, may take."""
PROGRAM = "live-test-program"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def fresh(world: World, tmp_path: Path) -> Iterator[Dashboard]:
    """A dashboard of its own, so that no other test's streams count against the bounds."""
    kubeconfig = service_account_kubeconfig(world.cluster, world.admin, tmp_path / "fresh.kubeconfig")
    jwks = JwksServer(world.dashboard.keys)
    jwks.start()
    dashboard = start_dashboard(kubeconfig=kubeconfig, jwks=jwks, keys=world.dashboard.keys, log=tmp_path / "fresh.log")
    try:
        yield dashboard
    finally:
        dashboard.stop()
        jwks.stop()


def streaming_client(dashboard: Dashboard) -> httpx.Client:
    """A client that may hold every stream the dashboard accepts, and then some."""
    limits = httpx.Limits(max_connections=STREAMS_TOTAL + 32, max_keepalive_connections=32)
    return httpx.Client(base_url=dashboard.url, limits=limits, timeout=httpx.Timeout(15, read=READ_SECONDS))


def viewer_token(dashboard: Dashboard, subject: str) -> str:
    return dashboard.keys.token(sub=subject, roles=["viewer"])


class Stream:
    """One open GET /api/v1/stream: its answer, and its events read as the test asks for them."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.iter_lines()
        self._parser = EventParser()

    @property
    def status_code(self) -> int:
        return self.response.status_code

    def next_event(self, deadline: float) -> ServerSentEvent:
        for line in self._lines:
            event = self._parser.feed(line)
            if event is not None:
                return event
            assert time.monotonic() < deadline, "no event before the deadline (only pings came)"
        raise AssertionError("the stream ended")

    def until(self, matches: Callable[[ServerSentEvent], bool], what: str) -> ServerSentEvent:
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            event = self.next_event(deadline)
            if matches(event):
                return event
            assert time.monotonic() < deadline, f"not within {WAIT_SECONDS:g} s: {what}"

    def ready(self) -> None:
        self.until(lambda event: event.event == "ready", "ready")

    def status_of(self, key: str, *, resource_version: str | None = None) -> dict[str, Any]:
        def matches(event: ServerSentEvent) -> bool:
            if event.event != "status":
                return False
            data = json.loads(event.data)
            return bool(
                data["key"] == key and (resource_version is None or data["resourceVersion"] == resource_version)
            )

        return dict(json.loads(self.until(matches, f"the status of {key} at {resource_version or 'any version'}").data))

    def close(self) -> None:
        self.response.close()


def open_stream(client: httpx.Client, token: str, stack: ExitStack) -> Stream:
    """A stream as `token`'s user; closed when `stack` closes (or sooner, by `close`)."""
    request = client.build_request("GET", STREAM, headers={TOKEN_HEADER: token})
    stream = Stream(client.send(request, stream=True))
    stack.callback(stream.close)
    return stream


def refused(stream: Stream) -> tuple[int, dict[str, Any], str | None]:
    """A refused stream's status, Problem body and Retry-After."""
    stream.response.read()
    return stream.status_code, stream.response.json(), stream.response.headers.get("retry-after")


def accepted_once_a_slot_is_free(client: httpx.Client, token: str, stack: ExitStack) -> Stream:
    """A stream opened again and again until the dashboard accepts it: a closed stream's slot is
    given back when the dashboard sees its connection close. Each refusal is an answer, and it
    paces the loop."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        with ExitStack() as attempt:
            stream = open_stream(client, token, attempt)
            if stream.status_code == 200:
                attempt.pop_all()
                stack.callback(stream.close)
                return stream
            assert stream.status_code in (429, 503), refused(stream)
        assert time.monotonic() < deadline, f"no slot given back within {WAIT_SECONDS:g} s"


def created_model(world: World, phase: str = "Ready") -> dict[str, Any]:
    """A ModelActivation with a status of its current generation, as the program writes it."""
    created = world.admin.create(MODEL_ACTIVATION, model_activation(unique("live")), field_manager="live-test")
    return world.admin.apply(MODEL_ACTIVATION, status_of(created, phase), field_manager=PROGRAM, subresource="status")


def status_written(world: World, model: dict[str, Any], phase: str) -> str:
    """The resourceVersion of a new status of `model` in `phase`."""
    written = world.admin.apply(MODEL_ACTIVATION, status_of(model, phase), field_manager=PROGRAM, subresource="status")
    return str(written["metadata"]["resourceVersion"])


def key_of(model: dict[str, Any]) -> str:
    return f"ModelActivation/{model['metadata']['name']}"


# What a page receives ---------------------------------------------------------------------------------


def test_a_stream_sends_every_objects_status_then_each_change(world: World) -> None:
    model = created_model(world)
    with streaming_client(world.dashboard) as client, ExitStack() as stack:
        stream = open_stream(client, world.dashboard.token("viewer"), stack)
        assert stream.status_code == 200
        stream.ready()
        assert stream.status_of(key_of(model))["phase"] == "Ready"
        version = status_written(world, model, "Starting")
        changed = stream.status_of(key_of(model), resource_version=version)
    assert (changed["phase"], changed["deleted"]) == ("Starting", False)


def test_a_second_stream_of_a_user_first_gets_every_object_its_first_stream_has_seen(world: World) -> None:
    subject = unique("joiner")
    with streaming_client(world.dashboard) as client, ExitStack() as stack:
        first = open_stream(client, viewer_token(world.dashboard, subject), stack)
        first.ready()
        model = created_model(world)
        first.status_of(key_of(model), resource_version=model["metadata"]["resourceVersion"])
        second = open_stream(client, viewer_token(world.dashboard, subject), stack)
        second.ready()
        assert second.status_of(key_of(model))["phase"] == "Ready"
        version = status_written(world, model, "Starting")
        for stream in (first, second):
            assert stream.status_of(key_of(model), resource_version=version)["phase"] == "Starting"


def test_with_a_hundred_streams_open_from_several_users_the_overview_answers_and_changes_reach_every_stream(
    world: World,
) -> None:
    model = created_model(world)
    users = [unique("crowd") for _ in range(10)]
    with streaming_client(world.dashboard) as client, ExitStack() as stack:
        streams = [
            open_stream(client, viewer_token(world.dashboard, users[index % len(users)]), stack) for index in range(100)
        ]
        assert {stream.status_code for stream in streams} == {200}
        for stream in streams:
            stream.ready()
        with world.dashboard.client("operator") as plain:
            overview = plain.get("/api/v1/overview")
        assert overview.status_code == 200, overview.text
        version = status_written(world, model, "Starting")
        for stream in streams:
            assert stream.status_of(key_of(model), resource_version=version)["phase"] == "Starting"


# The bounds -----------------------------------------------------------------------------------------


def test_past_the_per_user_bound_a_stream_is_refused_429_with_retry_after_until_one_closes(fresh: Dashboard) -> None:
    with streaming_client(fresh) as client, ExitStack() as stack:
        tabs = [open_stream(client, viewer_token(fresh, "many-tabs"), stack) for _ in range(STREAMS_PER_USER)]
        assert {tab.status_code for tab in tabs} == {200}
        status, body, retry_after = refused(open_stream(client, viewer_token(fresh, "many-tabs"), stack))
        assert (status, body["error"], retry_after) == (429, "TooManyStreams", str(RETRY_AFTER_SECONDS))
        assert set(body) == {"error", "message"}
        assert open_stream(client, viewer_token(fresh, "one-tab"), stack).status_code == 200
        tabs[0].close()
        accepted_once_a_slot_is_free(client, viewer_token(fresh, "many-tabs"), stack).ready()


def test_past_the_total_bound_a_stream_is_refused_503_with_retry_after_until_one_closes(fresh: Dashboard) -> None:
    users = [f"user-{index:02d}" for index in range(STREAMS_TOTAL // STREAMS_PER_USER)]
    with streaming_client(fresh) as client, ExitStack() as stack:
        streams = [
            open_stream(client, viewer_token(fresh, user), stack) for user in users for _ in range(STREAMS_PER_USER)
        ]
        assert len(streams) == STREAMS_TOTAL
        assert {stream.status_code for stream in streams} == {200}
        status, body, retry_after = refused(open_stream(client, viewer_token(fresh, "latecomer"), stack))
        assert (status, body["error"], retry_after) == (503, "StreamsAtCapacity", str(RETRY_AFTER_SECONDS))
        with fresh.client("viewer") as plain:
            assert plain.get("/api/v1/overview").status_code == 200
        streams[0].close()
        accepted_once_a_slot_is_free(client, viewer_token(fresh, "latecomer"), stack).ready()


# The watches' own client ----------------------------------------------------------------------------


def test_the_async_reader_lists_page_by_page_watches_from_the_list_and_says_gone_for_an_expired_version(
    world: World, tmp_path: Path
) -> None:
    """providers.kube.AsyncReader as the dashboard uses it: its ServiceAccount, impersonating a viewer."""
    models = [created_model(world) for _ in range(3)]
    kubeconfig = service_account_kubeconfig(world.cluster, world.admin, tmp_path / "reader.kubeconfig")

    async def read() -> tuple[set[str], WatchEvent, Gone]:
        reader = open_async_reader(KubeAccess(kubeconfig=str(kubeconfig)), max_connections=4)
        viewer = reader.impersonating("oidc:victor", ["magicstick:viewers"])
        try:
            listed = await viewer.list_collection(MODEL_ACTIVATION, namespace=NAMESPACE, page_size=2)
            async with viewer.watch(
                MODEL_ACTIVATION, resource_version=listed.resource_version, namespace=NAMESPACE, timeout_seconds=30
            ) as stream:
                version = await asyncio.to_thread(status_written, world, models[0], "Starting")
                changed = None
                async for event in stream:
                    if event.resource_version == version:
                        changed = event
                        break
            assert changed is not None, "the watch ended without the change"
            with pytest.raises(Gone) as expired:
                async with viewer.watch(
                    MODEL_ACTIVATION, resource_version="1", namespace=NAMESPACE, timeout_seconds=30
                ) as stream:
                    async for _ in stream:
                        pass
            return {item["metadata"]["name"] for item in listed.items}, changed, expired.value
        finally:
            await reader.aclose()

    names, changed, expired = asyncio.run(asyncio.wait_for(read(), WAIT_SECONDS))
    assert {model["metadata"]["name"] for model in models} <= names
    assert (changed.type.value, changed.object["status"]["phase"]) == ("MODIFIED", "Starting")
    assert expired.code == 410


def exec_access(world: World, tmp_path: Path, *, stdout: str, stderr: str = "", exit_code: int = 0) -> KubeAccess:
    """The cluster, with credentials an exec credential plugin prints."""
    plugin = exec_plugin(tmp_path, stdout=stdout, stderr=stderr, exit_code=exit_code)
    user = {"exec": {"apiVersion": EXEC_API_V1, "command": str(plugin)}}
    return KubeAccess(
        kubeconfig=as_yaml(kubeconfig(name="exec", server=world.cluster.url, ca_file=world.cluster.ca_file, user=user))
    )


async def listed_names(access: KubeAccess) -> set[str]:
    reader = open_async_reader(access, max_connections=2)
    try:
        listed = await reader.impersonating("oidc:victor", ["magicstick:viewers"]).list_collection(
            MODEL_ACTIVATION, namespace=NAMESPACE
        )
        return {item["metadata"]["name"] for item in listed.items}
    finally:
        await reader.aclose()


def test_the_async_reader_sends_the_token_an_exec_credential_plugin_prints(world: World, tmp_path: Path) -> None:
    model = created_model(world)
    config = yaml.safe_load(
        service_account_kubeconfig(world.cluster, world.admin, tmp_path / "sa.kubeconfig").read_text()
    )
    token = config["users"][0]["user"]["token"]
    access = exec_access(world, tmp_path, stdout=exec_credential(token, api_version=EXEC_API_V1))
    assert model["metadata"]["name"] in asyncio.run(asyncio.wait_for(listed_names(access), WAIT_SECONDS))


def test_the_async_reader_raises_kube_config_error_when_the_exec_credential_plugin_fails(
    world: World, tmp_path: Path
) -> None:
    access = exec_access(world, tmp_path, stdout="", stderr="please log in first", exit_code=3)
    with pytest.raises(KubeConfigError, match="please log in first"):
        asyncio.run(asyncio.wait_for(listed_names(access), WAIT_SECONDS))
