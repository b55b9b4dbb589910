"""The live status hub without a cluster: the bounds on open streams, one feed per identity
fanned out to its streams, the current state first, and each watched kind's LIST-then-watch
loop (live.follow) against a scripted reader. Nothing here sleeps: the async tests wait on the
reader running out of script, or on the stream's own events."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from providers.kinds import MODEL_ACTIVATION
from providers.kube import Collection, EventType, Forbidden, Gone, KubeConnectionError, ResourceKind, WatchEvent
from providers.kube.errors import ConnectionFailure
from services.dashboard.app import create_app
from services.dashboard.hub import Feed, Message, StreamBounds, StreamHub, StreamsRefused, Subscription, message
from services.dashboard.identity import Identity
from services.dashboard.live import LiveResponse, follow, status_stream
from services.dashboard.requesting import DashboardState

KINDS = ("ModelActivation", "AppInstance")
DEADLINE_SECONDS = 5.0
VIEWERS = ("magicstick:viewers",)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def identity(subject: str, groups: tuple[str, ...] = VIEWERS) -> Identity:
    return Identity(
        subject=subject, role="viewer", groups=(), kubernetes_user=f"oidc:{subject}", kubernetes_groups=groups
    )


@dataclass
class RecordedWatching:
    stopped: bool = False
    retries: int = 0

    def stop(self) -> None:
        self.stopped = True

    def retry_forbidden(self) -> None:
        self.retries += 1


@dataclass
class RecordedSource:
    started: list[tuple[Identity, Feed, RecordedWatching]] = field(default_factory=list)
    closed: bool = False

    def start(self, who: Identity, feed: Feed) -> RecordedWatching:
        watching = RecordedWatching()
        self.started.append((who, feed, watching))
        return watching

    async def close(self) -> None:
        self.closed = True

    def feed_of(self, subject: str) -> Feed:
        return next(feed for who, feed, _ in self.started if who.subject == subject)


def hub_of(bounds: StreamBounds = StreamBounds()) -> tuple[StreamHub, RecordedSource]:
    source = RecordedSource()
    return StreamHub(source, kinds=KINDS, bounds=bounds), source


def summary(kind: str, name: str, phase: str = "Ready", version: str = "1") -> dict[str, Any]:
    return {"kind": kind, "name": name, "key": f"{kind}/{name}", "resourceVersion": version, "phase": phase}


def received(subscription: Subscription) -> list[tuple[str, dict[str, Any]]]:
    """What is queued for the stream's client now, taken off the queue."""
    taken = []
    while subscription.pending:
        sent = subscription._pending.popleft()
        taken.append((sent.event, json.loads(sent.data)))
    return taken


# The bounds --------------------------------------------------------------------------------------


def test_a_user_opens_streams_up_to_the_per_user_bound_and_the_next_is_refused_429_with_retry_after() -> None:
    hub, _ = hub_of(StreamBounds(per_user=3, total=10, retry_after_seconds=7))
    for _ in range(3):
        hub.subscribe(identity("alice"))
    with pytest.raises(StreamsRefused) as refused:
        hub.subscribe(identity("alice"))
    assert refused.value.refusal.status == 429
    assert refused.value.refusal.headers == {"Retry-After": "7"}
    assert refused.value.refusal.body()["error"] == "TooManyStreams"
    assert "oidc:alice has 3 live status streams open" in refused.value.refusal.body()["message"]
    assert hub.streams_of("oidc:alice") == 3


def test_another_user_still_opens_a_stream_when_one_is_at_the_per_user_bound() -> None:
    hub, _ = hub_of(StreamBounds(per_user=2, total=10))
    hub.subscribe(identity("alice"))
    hub.subscribe(identity("alice"))
    hub.subscribe(identity("bob"))
    assert (hub.streams_of("oidc:bob"), hub.open_streams) == (1, 3)


def test_past_the_total_bound_every_user_is_refused_503_with_retry_after() -> None:
    hub, _ = hub_of(StreamBounds(per_user=2, total=3, retry_after_seconds=5))
    for subject in ("alice", "alice", "bob"):
        hub.subscribe(identity(subject))
    with pytest.raises(StreamsRefused) as refused:
        hub.subscribe(identity("carol"))
    assert (refused.value.refusal.status, refused.value.refusal.reason) == (503, "StreamsAtCapacity")
    assert refused.value.refusal.headers == {"Retry-After": "5"}


def test_a_user_at_their_own_bound_is_told_429_even_when_the_total_is_reached_too() -> None:
    hub, _ = hub_of(StreamBounds(per_user=2, total=2))
    hub.subscribe(identity("alice"))
    hub.subscribe(identity("alice"))
    with pytest.raises(StreamsRefused) as refused:
        hub.subscribe(identity("alice"))
    assert refused.value.refusal.status == 429


def test_a_closed_stream_gives_its_slot_back_once_however_often_it_is_closed() -> None:
    hub, _ = hub_of(StreamBounds(per_user=1, total=5))
    first = hub.subscribe(identity("alice"))
    with pytest.raises(StreamsRefused):
        hub.subscribe(identity("alice"))
    first.close()
    first.close()
    assert (hub.open_streams, hub.streams_of("oidc:alice")) == (0, 0)
    hub.subscribe(identity("alice"))
    assert hub.open_streams == 1


def test_the_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError):
        StreamBounds(per_user=0)


# One feed per identity -----------------------------------------------------------------------------


def test_the_streams_of_one_identity_share_one_feed_and_other_identities_get_their_own() -> None:
    hub, source = hub_of()
    hub.subscribe(identity("alice"))
    hub.subscribe(identity("alice"))
    hub.subscribe(identity("bob"))
    hub.subscribe(identity("alice", ("magicstick:operators", "magicstick:viewers")))
    assert [who.kubernetes_groups for who, _, _ in source.started] == [
        VIEWERS,
        VIEWERS,
        ("magicstick:operators", "magicstick:viewers"),
    ]
    assert [who.subject for who, _, _ in source.started] == ["alice", "bob", "alice"]
    assert hub.feeds == 3
    assert hub.streams_of("oidc:alice") == 3, (
        "the per-user bound counts every stream of the Kubernetes user, whatever the groups"
    )


def test_the_last_stream_of_an_identity_to_close_stops_its_watches_and_the_next_starts_them_again() -> None:
    hub, source = hub_of()
    first, second = hub.subscribe(identity("alice")), hub.subscribe(identity("alice"))
    first.close()
    assert not source.started[0][2].stopped
    second.close()
    assert source.started[0][2].stopped
    assert hub.feeds == 0
    hub.subscribe(identity("alice"))
    assert len(source.started) == 2


def test_a_stream_that_joins_running_watches_asks_them_to_try_forbidden_kinds_again() -> None:
    hub, source = hub_of()
    hub.subscribe(identity("alice"))
    hub.subscribe(identity("alice"))
    assert source.started[0][2].retries == 1


async def closing(hub: StreamHub) -> None:
    await hub.close()


def test_closing_the_hub_ends_every_stream_and_closes_the_source() -> None:
    hub, source = hub_of()
    stream = hub.subscribe(identity("alice"))
    asyncio.run(closing(hub))
    assert stream.ended == "the dashboard stops"
    assert source.closed


# The current state first, then the changes -----------------------------------------------------------


def test_a_stream_that_joins_gets_every_object_seen_then_each_change() -> None:
    hub, source = hub_of()
    first = hub.subscribe(identity("alice"))
    feed = source.feed_of("alice")
    feed.listed("ModelActivation", [summary("ModelActivation", "a"), summary("ModelActivation", "b")])
    feed.listed("AppInstance", [summary("AppInstance", "x")])
    feed.changed("ModelActivation", summary("ModelActivation", "a", "Starting", "2"), deleted=False)
    joined = hub.subscribe(identity("alice"))
    assert [(event, data["key"], data["phase"]) for event, data in received(joined)] == [
        ("status", "ModelActivation/a", "Starting"),
        ("status", "ModelActivation/b", "Ready"),
        ("status", "AppInstance/x", "Ready"),
    ]
    feed.changed("ModelActivation", summary("ModelActivation", "b", version="3"), deleted=True)
    assert received(joined) == [("status", {**summary("ModelActivation", "b", version="3"), "deleted": True})]
    assert [data["key"] for _, data in received(first)] == [
        "ModelActivation/a",
        "ModelActivation/b",
        "AppInstance/x",
        "ModelActivation/a",
        "ModelActivation/b",
    ]
    assert [data["key"] for _, data in received(hub.subscribe(identity("alice")))] == [
        "ModelActivation/a",
        "AppInstance/x",
    ]


def test_the_streams_of_another_identity_get_nothing_of_this_ones_watches() -> None:
    hub, source = hub_of()
    bob = hub.subscribe(identity("bob"))
    hub.subscribe(identity("alice"))
    source.feed_of("alice").listed("ModelActivation", [summary("ModelActivation", "a")])
    assert received(bob) == []


def test_each_event_is_encoded_once_for_every_stream_it_goes_to() -> None:
    hub, source = hub_of()
    streams = [hub.subscribe(identity("alice")) for _ in range(3)]
    source.feed_of("alice").changed("ModelActivation", summary("ModelActivation", "a"), deleted=False)
    sent = [stream._pending[0] for stream in streams]
    assert sent[0] is sent[1] is sent[2]


def test_a_stream_that_joins_while_a_kind_fails_is_told_it_is_unavailable_after_what_is_known() -> None:
    hub, source = hub_of()
    hub.subscribe(identity("alice"))
    feed = source.feed_of("alice")
    feed.listed("ModelActivation", [summary("ModelActivation", "a")])
    feed.failed("ModelActivation", "cannot reach https://api: connection refused")
    assert received(hub.subscribe(identity("alice"))) == [
        ("status", summary("ModelActivation", "a")),
        ("unavailable", {"kind": "ModelActivation", "message": "cannot reach https://api: connection refused"}),
    ]


def test_a_list_after_a_failure_sends_every_summary_the_deletion_of_what_went_and_resumed() -> None:
    hub, source = hub_of()
    stream = hub.subscribe(identity("alice"))
    feed = source.feed_of("alice")
    feed.listed("ModelActivation", [summary("ModelActivation", "a"), summary("ModelActivation", "gone")])
    feed.failed("ModelActivation", "timed out")
    received(stream)
    feed.listed("ModelActivation", [summary("ModelActivation", "a", version="5")])
    assert received(stream) == [
        ("status", summary("ModelActivation", "a", version="5")),
        ("status", {**summary("ModelActivation", "gone"), "deleted": True}),
        ("resumed", {"kind": "ModelActivation"}),
    ]
    assert [event for event, _ in received(hub.subscribe(identity("alice")))] == ["status"], "no longer unavailable"


def test_a_forbidden_kind_is_forgotten() -> None:
    hub, source = hub_of()
    hub.subscribe(identity("alice"))
    feed = source.feed_of("alice")
    feed.listed("ModelActivation", [summary("ModelActivation", "a")])
    feed.forbidden("ModelActivation")
    assert received(hub.subscribe(identity("alice"))) == []


def test_a_stream_that_falls_behind_is_ended_and_leaves_the_feed_but_keeps_its_slot_until_closed() -> None:
    hub, source = hub_of(StreamBounds(queue_limit=2))
    slow, other = hub.subscribe(identity("alice")), hub.subscribe(identity("alice"))
    feed = source.feed_of("alice")
    for name in ("a", "b", "c"):
        feed.changed("ModelActivation", summary("ModelActivation", name), deleted=False)
        received(other)
    assert slow.ended == "the client fell 2 events behind"
    assert slow.pending == 0
    assert feed.subscriptions == (other,)
    assert hub.open_streams == 2
    slow.close()
    assert hub.open_streams == 1
    assert not source.started[0][2].stopped


def test_the_current_state_a_stream_joins_with_is_queued_beyond_the_queue_limit() -> None:
    hub, source = hub_of(StreamBounds(queue_limit=2))
    hub.subscribe(identity("alice"))
    feed = source.feed_of("alice")
    feed.listed("ModelActivation", [summary("ModelActivation", name) for name in "abcde"])
    joined = hub.subscribe(identity("alice"))
    assert (joined.ended, joined.pending) == (None, 5)
    for name in "fg":
        feed.changed("ModelActivation", summary("ModelActivation", name), deleted=False)
    assert (joined.ended, joined.pending) == (None, 7)
    feed.changed("ModelActivation", summary("ModelActivation", "h"), deleted=False)
    assert joined.ended == "the client fell 7 events behind"


# The stream itself ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_stream_says_ready_then_sends_what_its_feed_sends_as_it_comes() -> None:
    hub, source = hub_of()
    stream = hub.subscribe(identity("alice"))
    events = status_stream(stream)
    assert await anext(events) == {"event": "ready", "data": "{}"}
    waiting = asyncio.create_task(anext(events))
    source.feed_of("alice").changed("ModelActivation", summary("ModelActivation", "a"), deleted=False)
    expected = message("status", {**summary("ModelActivation", "a"), "deleted": False})
    assert await asyncio.wait_for(waiting, DEADLINE_SECONDS) == {"event": "status", "data": expected.data}


@pytest.mark.anyio
async def test_a_stream_ends_when_its_subscription_ends() -> None:
    hub, _ = hub_of()
    stream = hub.subscribe(identity("alice"))
    stream.end("the dashboard stops")
    assert [event async for event in status_stream(stream)] == [{"event": "ready", "data": "{}"}]


def http_scope(method: str) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": "/api/v1/stream",
        "headers": [],
        "asgi": {"version": "3.0", "spec_version": "2.4"},
    }


async def respond(response: LiveResponse, method: str, incoming: list[dict[str, Any]]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    waiting = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await waiting.wait()
        return {"type": "http.disconnect"}

    async def send(outgoing: Any) -> None:
        sent.append(outgoing)

    await asyncio.wait_for(response(http_scope(method), receive, send), DEADLINE_SECONDS)
    return sent


@pytest.mark.anyio
async def test_a_stream_whose_client_goes_gives_its_slot_back() -> None:
    hub, _ = hub_of()
    response = LiveResponse(hub.subscribe(identity("alice")))
    sent = await respond(response, "GET", [{"type": "http.disconnect"}])
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert hub.open_streams == 0


@pytest.mark.anyio
async def test_a_head_request_that_never_streams_gives_its_slot_back() -> None:
    hub, _ = hub_of()
    response = LiveResponse(hub.subscribe(identity("alice")))
    await respond(response, "HEAD", [])
    assert hub.open_streams == 0


# Each kind's LIST then watch (live.follow) ------------------------------------------------------------


def model(name: str, version: str, phase: str = "Ready") -> dict[str, Any]:
    return {
        "apiVersion": MODEL_ACTIVATION.api_version,
        "kind": "ModelActivation",
        "metadata": {"name": name, "namespace": "ai-system", "resourceVersion": version, "generation": 1},
        "status": {"phase": phase, "observedGeneration": 1},
    }


def event(kind: EventType, obj: dict[str, Any]) -> WatchEvent:
    return WatchEvent(type=kind, object=obj)


def bookmark(version: str) -> WatchEvent:
    return event(EventType.BOOKMARK, {"kind": "ModelActivation", "metadata": {"resourceVersion": version}})


def unreachable() -> KubeConnectionError:
    return KubeConnectionError(
        method="GET", path="/apis", url="https://api", failure=ConnectionFailure.REFUSED, cause="connection refused"
    )


def refused(error_type: type[Gone] | type[Forbidden], code: int) -> Gone | Forbidden:
    return error_type(method="GET", path="/apis", code=code, reason=error_type.__name__, message="")


@dataclass
class ScriptedReader:
    """A reader that answers each LIST and each watch from a script, in order, and once the
    script is spent waits until cancelled (after setting `spent`)."""

    lists: list[Collection | Exception]
    watches: list[list[WatchEvent | Exception] | Exception]
    watched_from: list[str] = field(default_factory=list)
    spent: asyncio.Event = field(default_factory=asyncio.Event)

    async def _next(self, script: list[Any]) -> Any:
        if not script:
            self.spent.set()
            await asyncio.Event().wait()
        return script.pop(0)

    async def list_collection(self, kind: ResourceKind, *, namespace: str) -> Collection:
        answer = await self._next(self.lists)
        if isinstance(answer, Exception):
            raise answer
        return answer

    @asynccontextmanager
    async def watch(
        self, kind: ResourceKind, *, resource_version: str, namespace: str, timeout_seconds: int
    ) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        self.watched_from.append(resource_version)
        answer = await self._next(self.watches)
        if isinstance(answer, Exception):
            raise answer

        async def events() -> AsyncIterator[WatchEvent]:
            for each in answer:
                if isinstance(each, Exception):
                    raise each
                yield each

        yield events()


@dataclass
class Following:
    stream: Subscription
    reader: ScriptedReader
    pauses: list[float]

    def events(self) -> list[tuple[str, Any]]:
        return [
            (event, (data.get("key"), data.get("phase"), data.get("deleted")) if event == "status" else data)
            for event, data in received(self.stream)
        ]


@asynccontextmanager
async def following(reader: ScriptedReader) -> AsyncIterator[Following]:
    hub, source = hub_of()
    stream = hub.subscribe(identity("alice"))
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)

    task = asyncio.create_task(
        follow(reader, MODEL_ACTIVATION, source.feed_of("alice"), namespace="ai-system", retry_seconds=0.5, pause=pause)
    )  # type: ignore[arg-type]
    try:
        yield Following(stream, reader, pauses)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def settled(found: Following) -> None:
    await asyncio.wait_for(found.reader.spent.wait(), DEADLINE_SECONDS)


@pytest.mark.anyio
async def test_a_kind_is_listed_then_watched_from_the_lists_resource_version_and_resumed_from_the_last_event() -> None:
    reader = ScriptedReader(
        lists=[Collection(items=[model("a", "10")], resource_version="11")],
        watches=[
            [event(EventType.MODIFIED, model("a", "12", "Starting")), bookmark("13")],
            [event(EventType.DELETED, model("a", "14"))],
        ],
    )
    async with following(reader) as found:
        await settled(found)
        assert reader.watched_from == ["11", "13", "14"]
        assert found.events() == [
            ("status", ("ModelActivation/a", "Ready", None)),
            ("status", ("ModelActivation/a", "Starting", False)),
            ("status", ("ModelActivation/a", "Ready", True)),
        ]


@pytest.mark.anyio
async def test_an_expired_watch_lists_again_and_sends_every_summary_again() -> None:
    reader = ScriptedReader(
        lists=[
            Collection(items=[model("a", "10")], resource_version="11"),
            Collection(items=[model("b", "20")], resource_version="21"),
        ],
        watches=[[refused(Gone, 410)]],
    )
    async with following(reader) as found:
        await settled(found)
        assert reader.watched_from == ["11", "21"]
        assert found.events() == [
            ("status", ("ModelActivation/a", "Ready", None)),
            ("status", ("ModelActivation/b", "Ready", None)),
            ("status", ("ModelActivation/a", "Ready", True)),
        ]
        assert found.pauses == []


@pytest.mark.anyio
async def test_a_failure_is_sent_as_unavailable_and_after_a_pause_a_list_resumes_the_stream() -> None:
    reader = ScriptedReader(
        lists=[unreachable(), Collection(items=[model("a", "10")], resource_version="11")], watches=[]
    )
    async with following(reader) as found:
        await settled(found)
        assert found.events() == [
            ("unavailable", {"kind": "ModelActivation", "message": "cannot reach https://api: connection refused"}),
            ("status", ("ModelActivation/a", "Ready", None)),
            ("resumed", {"kind": "ModelActivation"}),
        ]
        assert found.pauses == [0.5]


@pytest.mark.anyio
async def test_a_watch_that_breaks_is_unavailable_until_a_new_list_and_watch_work() -> None:
    reader = ScriptedReader(
        lists=[Collection(items=[], resource_version="11"), Collection(items=[], resource_version="15")],
        watches=[[event(EventType.ADDED, model("a", "12")), unreachable()]],
    )
    async with following(reader) as found:
        await settled(found)
        assert reader.watched_from == ["11", "15"]
        assert [each for each, _ in found.events()] == ["status", "unavailable", "status", "resumed"]


@pytest.mark.anyio
async def test_a_kind_the_user_may_not_list_is_not_watched() -> None:
    reader = ScriptedReader(lists=[refused(Forbidden, 403)], watches=[])
    hub, source = hub_of()
    stream = hub.subscribe(identity("alice"))
    await asyncio.wait_for(
        follow(reader, MODEL_ACTIVATION, source.feed_of("alice"), namespace="ai-system"), DEADLINE_SECONDS
    )  # type: ignore[arg-type]
    assert reader.watched_from == []
    assert received(stream) == []


def test_a_message_is_compact_json() -> None:
    assert message("status", {"a": 1, "b": [1, 2]}) == Message("status", '{"a":1,"b":[1,2]}')


# The route ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SignedIn:
    """The sign-in, already verified: every request is `who`'s (the cluster tests verify tokens)."""

    who: Identity

    async def identity(self, connection: object) -> Identity:
        return self.who


def application(hub: StreamHub, who: Identity) -> Any:
    state = DashboardState(sign_in=SignedIn(who), kube=None, live=hub, catalogs=None, namespace="ai-system")  # type: ignore[arg-type]
    return create_app(state)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("bounds", "status", "error"),
    [
        (StreamBounds(per_user=1, total=5), 429, "TooManyStreams"),
        (StreamBounds(per_user=5, total=1), 503, "StreamsAtCapacity"),
    ],
)
async def test_the_route_refuses_a_stream_past_a_bound_in_the_apis_problem_shape_with_retry_after(
    bounds: StreamBounds, status: int, error: str
) -> None:
    hub, _ = hub_of(bounds)
    hub.subscribe(identity("alice"))
    transport = httpx.ASGITransport(app=application(hub, identity("alice")))
    async with httpx.AsyncClient(transport=transport, base_url="http://dashboard") as client:
        answer = await asyncio.wait_for(client.get("/api/v1/stream"), DEADLINE_SECONDS)
    assert answer.status_code == status
    assert answer.headers["retry-after"] == str(bounds.retry_after_seconds)
    assert answer.json()["error"] == error and set(answer.json()) == {"error", "message"}
    assert hub.open_streams == 1


def test_the_stream_route_documents_its_refusals_with_a_problem_body_and_retry_after() -> None:
    document = create_app(None).openapi()  # type: ignore[arg-type]  # the document needs no state
    responses = document["paths"]["/api/v1/stream"]["get"]["responses"]
    for status in ("429", "503"):
        assert responses[status]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
        assert "Retry-After" in responses[status]["headers"]
