"""The trigger behind the fault proxy (tests/faults/proxy.py): a 410 Gone, a 504
ResourceVersionTooLarge, broken connections, a watch that hangs, a kind the server refuses, a
runtime cleanup the server keeps failing.

The proxy forwards a watch only once the server has ended it, so the watches here last one
second (`timeoutSeconds`) and their events arrive in batches; what is counted is requests and
lists, and time only where a bound is the behaviour (a hung watch is caught at its read
deadline). Each test asks for the proxy before the trigger, so the trigger stops first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest

from api.model_runtimes import RUNTIME_CLEANUP_FINALIZER
from planning.settings import FIELD_MANAGER
from providers.kinds import CONFIG_MAP, DEPLOYMENT, MODEL_ACTIVATION, SERVICE
from providers.kube import KubeAccess, KubeClient, RetryPolicy
from services.flags import ListenAddress
from services.reconcile_trigger.events import EVENT
from services.reconcile_trigger.probes import ProbePath, ProbeServer
from services.reconcile_trigger.stack import STACK, Backoff, StackRef
from services.reconcile_trigger.trigger import ReconcileTrigger
from services.reconcile_trigger.watcher import KindWatcher
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.faults.proxy import (
    Answer,
    Fault,
    FaultProxy,
    Reset,
    Stall,
    WatchError,
    forbidden,
    self_signed_certificate,
    too_large_resource_version,
    write_kubeconfig,
)
from tests.providers.direct_runtime_objects import runtime_objects
from tests.services.reconcile_trigger.conftest import StartTrigger
from tests.services.reconcile_trigger.world import (
    DEADLINE,
    FAST,
    LOADER,
    eventually,
    model_activation,
    realtime_activation,
    request_annotation,
    settled,
    version_of,
)
from tests.support.watching import watch_until, watch_until_gone

THROUGH_THE_PROXY = replace(FAST, watch=replace(FAST.watch, timeout_seconds=1, read_deadline_seconds=3.0))
"""Watches of one second; a silence of three (the proxy holds a watch's answer for its whole
second) means the connection hung."""


@pytest.fixture(scope="module")
def proxy_certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path_factory.mktemp("fault-proxy"))


@pytest.fixture
def proxy(trigger_cluster: ClusterInfo, proxy_certificate: tuple[Path, Path]) -> Iterator[FaultProxy]:
    cert_file, key_file = proxy_certificate
    with FaultProxy(
        upstream=trigger_cluster.url, upstream_tls=trigger_cluster.ssl_context(), cert_file=cert_file, key_file=key_file
    ) as running:
        yield running
        # Checked before the proxy closes: a watch it is still forwarding then fails on purpose.
        assert running.errors == [], "the proxy itself failed"


@pytest.fixture
def proxied_access(
    trigger_cluster: ClusterInfo, proxy: FaultProxy, proxy_certificate: tuple[Path, Path], tmp_path: Path
) -> KubeAccess:
    kubeconfig = write_kubeconfig(
        tmp_path / "proxy.yaml",
        server=proxy.url,
        ca_file=proxy_certificate[0],
        user=ADMIN_USER,
        token=trigger_cluster.admin_token,
    )
    return KubeAccess(kubeconfig=str(kubeconfig), retry=RetryPolicy(attempts=1))


def activations_path(namespace: str) -> str:
    return MODEL_ACTIVATION.collection_path(namespace)


def activation_watch(trigger: ReconcileTrigger, namespace: str) -> KindWatcher:
    (watcher,) = [w for w in trigger.watchers if w.target.kind == MODEL_ACTIVATION and w.target.namespace == namespace]
    return watcher


def relist_descriptions(trigger: ReconcileTrigger, watcher: KindWatcher) -> list[str]:
    return [d for r in trigger.requests for d in r.batch.descriptions if d.startswith(f"{watcher.target}: listed")]


def test_a_410_gone_relists_requests_a_run_and_the_watch_still_triggers_afterwards(
    proxy: FaultProxy,
    proxied_access: KubeAccess,
    start_trigger: StartTrigger,
    admin: KubeClient,
    namespace: str,
    stack: StackRef,
):
    admin.apply(MODEL_ACTIVATION, model_activation(namespace, "qwen"), field_manager=LOADER)
    trigger = start_trigger(access=proxied_access, timing=THROUGH_THE_PROXY)
    watcher = activation_watch(trigger, namespace)
    before = len(trigger.requests)

    proxy.plan(Fault("GET", activations_path(namespace), Answer(410), on=(1,)))
    eventually(trigger, lambda: watcher.lists == 2, what="the watch lists again after the 410")
    eventually(trigger, trigger.idle, what="the relist's request is made")

    gone = [e for e in proxy.exchanges if e.path == activations_path(namespace) and e.received == 410]
    assert len(gone) == 1 and "watch=true" in gone[0].query
    assert len(trigger.requests) == before + 1
    assert relist_descriptions(trigger, watcher)[-1] in trigger.requests[-1].batch.descriptions

    edited = admin.apply(
        MODEL_ACTIVATION, model_activation(namespace, "qwen", preset="qwen2515bcpu"), field_manager=LOADER
    )
    settled(trigger, MODEL_ACTIVATION, namespace, version_of(edited))

    assert len(trigger.requests) == before + 2
    assert request_annotation(admin, stack) == trigger.requests[-1].value


def test_broken_connections_are_retried_with_backoff_and_the_watch_resumes_without_a_relist(
    proxy: FaultProxy,
    proxied_access: KubeAccess,
    start_trigger: StartTrigger,
    admin: KubeClient,
    namespace: str,
    stack: StackRef,
):
    trigger = start_trigger(access=proxied_access, timing=THROUGH_THE_PROXY)
    watcher = activation_watch(trigger, namespace)
    before = len(trigger.requests)

    proxy.plan(Fault("GET", activations_path(namespace), Reset(), on=(1, 2, 3)))
    eventually(trigger, lambda: watcher.failures == 3, what="three broken watches")
    created = admin.apply(MODEL_ACTIVATION, model_activation(namespace, "qwen"), field_manager=LOADER)
    settled(trigger, MODEL_ACTIVATION, namespace, version_of(created))

    assert watcher.lists == 1
    assert list(watcher.backoffs) == [0.05, 0.1, 0.2]
    assert len(trigger.requests) == before + 1
    assert "ModelActivation" in trigger.requests[-1].batch.descriptions[0]


def test_a_410_of_the_first_watch_after_a_list_is_a_failure_with_backoff_not_a_tight_relist_loop(
    proxy: FaultProxy, proxied_access: KubeAccess, start_trigger: StartTrigger, namespace: str
):
    trigger = start_trigger(access=proxied_access, timing=THROUGH_THE_PROXY)
    watcher = activation_watch(trigger, namespace)

    # The next watch gets a 410 (list again at once), then the first watch after that list too.
    proxy.plan(Fault("GET", activations_path(namespace), Answer(410), on=(1, 3)))
    eventually(trigger, lambda: watcher.lists == 3, what="two lists after the two 410s")

    assert watcher.failures == 1
    assert list(watcher.backoffs) == [0.05]


def test_a_server_that_keeps_answering_410_is_asked_again_with_a_growing_backoff(
    proxy: FaultProxy, proxied_access: KubeAccess, start_trigger: StartTrigger, namespace: str
):
    trigger = start_trigger(access=proxied_access, timing=THROUGH_THE_PROXY)
    watcher = activation_watch(trigger, namespace)
    before = len(trigger.requests)

    planned_at = len(proxy.exchanges)
    proxy.plan(Fault("GET", activations_path(namespace), Answer(410), on=None))
    eventually(trigger, lambda: watcher.failures >= 5, what="five failed attempts")
    proxy.plan()
    eventually(
        trigger,
        lambda: watcher.lists == 2 and trigger.idle(),
        what="a list once the server answers again, and its request",
    )

    asked = [e for e in proxy.exchanges[planned_at:] if e.path == activations_path(namespace)]
    assert list(watcher.backoffs)[:5] == [0.05, 0.1, 0.2, 0.4, 0.5]
    assert len(asked) <= watcher.failures + 4, "one attempt per backoff, a list and a few watches after"
    assert len(trigger.requests) == before + 1


@pytest.mark.parametrize("form", ["answer", "error event"])
def test_a_504_resource_version_too_large_relists_requests_a_run_and_the_watch_still_triggers_afterwards(
    form: str,
    proxy: FaultProxy,
    proxied_access: KubeAccess,
    start_trigger: StartTrigger,
    admin: KubeClient,
    namespace: str,
    stack: StackRef,
):
    admin.apply(MODEL_ACTIVATION, model_activation(namespace, "qwen"), field_manager=LOADER)
    trigger = start_trigger(access=proxied_access, timing=THROUGH_THE_PROXY)
    watcher = activation_watch(trigger, namespace)
    before = len(trigger.requests)

    current = int(watcher.resource_version or 0)
    status = too_large_resource_version(requested=current + 1000, current=current)
    action = Answer(504, retry_after="1", status=status) if form == "answer" else WatchError(status)
    proxy.plan(Fault("GET", activations_path(namespace), action, on=(1,)))
    eventually(trigger, lambda: watcher.lists == 2, what="the watch lists again after the 504")
    eventually(trigger, trigger.idle, what="the relist's request is made")

    (refused,) = [e for e in proxy.exchanges if e.action == action]
    assert "watch=true" in refused.query
    assert len(trigger.requests) == before + 1
    assert relist_descriptions(trigger, watcher)[-1] in trigger.requests[-1].batch.descriptions

    edited = admin.apply(
        MODEL_ACTIVATION, model_activation(namespace, "qwen", preset="qwen2515bcpu"), field_manager=LOADER
    )
    settled(trigger, MODEL_ACTIVATION, namespace, version_of(edited))

    assert len(trigger.requests) == before + 2
    assert request_annotation(admin, stack) == trigger.requests[-1].value


def resource_version_asked(query: str) -> str:
    return parse_qs(query)["resourceVersion"][0]


def test_a_watch_that_hangs_silently_is_aborted_at_its_read_deadline_and_resumed_from_its_resource_version(
    proxy: FaultProxy, proxied_access: KubeAccess, start_trigger: StartTrigger, admin: KubeClient, namespace: str
):
    trigger = start_trigger(access=proxied_access, timing=THROUGH_THE_PROXY)
    watcher = activation_watch(trigger, namespace)
    failures = watcher.failures

    proxy.plan(Fault("GET", activations_path(namespace), Stall(), on=(1,)))
    eventually(trigger, lambda: watcher.failures == failures + 1, what="the hung watch is given up")
    created = admin.apply(MODEL_ACTIVATION, model_activation(namespace, "qwen"), field_manager=LOADER)
    settled(trigger, MODEL_ACTIVATION, namespace, version_of(created))

    (hung,) = [e for e in proxy.exchanges if isinstance(e.action, Stall)]
    resumed = next(e for e in proxy.exchanges if e.path == hung.path and e.at > hung.at)
    deadline = THROUGH_THE_PROXY.watch.read_deadline_seconds
    assert hung.received == 200, "the watch was open: the server's status line and headers went through"
    assert deadline <= resumed.at - hung.at < deadline + 2.0, (
        "caught at the read deadline, then resumed after the first backoff"
    )
    assert "watch=true" in resumed.query and resource_version_asked(resumed.query) == resource_version_asked(hung.query)
    assert watcher.lists == 1, "resumed, not listed again"
    assert "ModelActivation" in trigger.requests[-1].batch.descriptions[0]


def refused_list(namespace: str) -> Fault:
    status = forbidden(
        user=ADMIN_USER, verb="list", plural=MODEL_ACTIVATION.plural, group=MODEL_ACTIVATION.group, namespace=namespace
    )
    return Fault("GET", activations_path(namespace), Answer(403, status=status), on=None)


def forbidden_events(admin: KubeClient, stack: StackRef) -> list[dict]:
    events = admin.list(EVENT, namespace=stack.namespace)
    return [
        e
        for e in events
        if e.get("reason") == "WatchForbidden" and (e.get("regarding") or {}).get("name") == stack.name
    ]


@pytest.fixture
def probe_server() -> Iterator[list[ProbeServer]]:
    started: list[ProbeServer] = []
    yield started
    for server in started:
        server.stop()


def serve_probes(trigger: ReconcileTrigger, started: list[ProbeServer]) -> str:
    server = ProbeServer(
        listen=ListenAddress("127.0.0.1", 0),
        reports={ProbePath.HEALTHZ: trigger.health, ProbePath.READYZ: trigger.readiness},
    )
    started.append(server.start())
    return f"http://127.0.0.1:{server.address.port}"


def test_a_kind_whose_list_is_forbidden_fails_readyz_naming_it_and_puts_one_event_on_the_stack(
    proxy: FaultProxy,
    proxied_access: KubeAccess,
    start_trigger: StartTrigger,
    admin: KubeClient,
    namespace: str,
    stack: StackRef,
    probe_server: list[ProbeServer],
):
    proxy.plan(refused_list(namespace))
    trigger = start_trigger(access=proxied_access, timing=THROUGH_THE_PROXY, ready=False)
    watcher = activation_watch(trigger, namespace)
    base = serve_probes(trigger, probe_server)

    eventually(trigger, lambda: trigger.events, what="an Event on the Stack")
    eventually(
        trigger,
        lambda: watcher.failures >= THROUGH_THE_PROXY.watch.forbidden_after + 3,
        what="more refusals after the Event",
    )
    ready = httpx.get(f"{base}{ProbePath.READYZ}")
    healthy = httpx.get(f"{base}{ProbePath.HEALTHZ}")

    assert ready.status_code == 503
    assert f"forbidden to list modelactivations.appliance.magicstick.dev in namespace {namespace}" in ready.text
    assert healthy.status_code == 200, (
        "a refusal is an answer: the watch is alive, and a restart would not grant the right"
    )
    (event,) = forbidden_events(admin, stack)
    assert (event["type"], event["action"], event["regarding"]["kind"]) == ("Warning", "Watch", "Stack")
    assert event["regarding"]["uid"] == admin.get(STACK, stack.name, stack.namespace)["metadata"]["uid"]
    assert (
        f"ModelActivation in {namespace}" in event["note"]
        and "list modelactivations.appliance.magicstick.dev" in event["note"]
    )
    assert len(trigger.events) == 1


def test_a_forbidden_kind_that_may_be_listed_again_is_ready_again(
    proxy: FaultProxy, proxied_access: KubeAccess, start_trigger: StartTrigger, namespace: str
):
    proxy.plan(refused_list(namespace))
    trigger = start_trigger(access=proxied_access, timing=THROUGH_THE_PROXY, ready=False)
    watcher = activation_watch(trigger, namespace)
    eventually(trigger, lambda: watcher.forbidden is not None, what="the watch counts as forbidden")
    assert not trigger.readiness().ok

    proxy.plan()
    eventually(trigger, lambda: watcher.forbidden is None and watcher.lists == 1, what="the watch lists once allowed")
    eventually(trigger, trigger.synced, what="every other watch listed too")

    assert trigger.readiness().ok, trigger.readiness().body()


def test_a_runtime_cleanup_the_server_keeps_failing_releases_the_finalizer_after_its_attempts(
    proxy: FaultProxy, proxied_access: KubeAccess, start_trigger: StartTrigger, admin: KubeClient, namespace: str
):
    """The program's next run deletes what is left: the deletion never waits on the trigger for ever."""
    kinds = {"ConfigMap": CONFIG_MAP, "Service": SERVICE, "Deployment": DEPLOYMENT}
    for body in runtime_objects(namespace, "omni"):
        admin.apply(kinds[body["kind"]], body, field_manager=FIELD_MANAGER)
    timing = replace(THROUGH_THE_PROXY, cleanup_backoff=Backoff(0.05, 0.2), cleanup_release_after=3)
    start_trigger(access=proxied_access, timing=timing)
    deployment = DEPLOYMENT.object_path("omni", namespace)
    proxy.plan(Fault("DELETE", re.escape(deployment), Answer(503), on=None))
    admin.apply(
        MODEL_ACTIVATION, realtime_activation(namespace, "omni", target_namespace=namespace), field_manager=LOADER
    )
    watch_until(
        admin,
        MODEL_ACTIVATION,
        namespace,
        "omni",
        lambda obj: RUNTIME_CLEANUP_FINALIZER in (obj["metadata"].get("finalizers") or ()),
        DEADLINE,
    )

    admin.delete(MODEL_ACTIVATION, "omni", namespace)
    watch_until_gone(admin, MODEL_ACTIVATION, namespace, "omni", DEADLINE)

    assert proxy.count("DELETE", re.escape(deployment)) == 3
    assert admin.get_or_none(DEPLOYMENT, "omni", namespace) is not None
