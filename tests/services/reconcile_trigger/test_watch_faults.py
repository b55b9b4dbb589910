"""The trigger behind the fault proxy (tests/faults/proxy.py): a 410 Gone, broken connections.

The proxy forwards a watch only once the server has ended it, so the watches here last one
second (`timeoutSeconds`) and their events arrive in batches; what is counted is requests and
lists, never time. Each test asks for the proxy before the trigger, so the trigger stops first.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from providers.kinds import MODEL_ACTIVATION
from providers.kube import KubeAccess, KubeClient, RetryPolicy
from services.reconcile_trigger.stack import StackRef
from services.reconcile_trigger.trigger import ReconcileTrigger
from services.reconcile_trigger.watcher import KindWatcher
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.faults.proxy import Answer, Fault, FaultProxy, Reset, self_signed_certificate, write_kubeconfig
from tests.services.reconcile_trigger.conftest import StartTrigger
from tests.services.reconcile_trigger.world import FAST, LOADER, eventually, model_activation, request_annotation, settled, version_of

THROUGH_THE_PROXY = replace(FAST, watch=replace(FAST.watch, timeout_seconds=1))


@pytest.fixture(scope="module")
def proxy_certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path_factory.mktemp("fault-proxy"))


@pytest.fixture
def proxy(trigger_cluster: ClusterInfo, proxy_certificate: tuple[Path, Path]) -> Iterator[FaultProxy]:
    cert_file, key_file = proxy_certificate
    with FaultProxy(upstream=trigger_cluster.url, upstream_tls=trigger_cluster.ssl_context(), cert_file=cert_file, key_file=key_file) as running:
        yield running
        # Checked before the proxy closes: a watch it is still forwarding then fails on purpose.
        assert running.errors == [], "the proxy itself failed"


@pytest.fixture
def proxied_access(trigger_cluster: ClusterInfo, proxy: FaultProxy, proxy_certificate: tuple[Path, Path], tmp_path: Path) -> KubeAccess:
    kubeconfig = write_kubeconfig(
        tmp_path / "proxy.yaml", server=proxy.url, ca_file=proxy_certificate[0], user=ADMIN_USER, token=trigger_cluster.admin_token
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
    proxy: FaultProxy, proxied_access: KubeAccess, start_trigger: StartTrigger, admin: KubeClient, namespace: str, stack: StackRef
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

    edited = admin.apply(MODEL_ACTIVATION, model_activation(namespace, "qwen", preset="qwen2515bcpu"), field_manager=LOADER)
    settled(trigger, MODEL_ACTIVATION, namespace, version_of(edited))

    assert len(trigger.requests) == before + 2
    assert request_annotation(admin, stack) == trigger.requests[-1].value


def test_broken_connections_are_retried_with_backoff_and_the_watch_resumes_without_a_relist(
    proxy: FaultProxy, proxied_access: KubeAccess, start_trigger: StartTrigger, admin: KubeClient, namespace: str, stack: StackRef
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
    eventually(trigger, lambda: watcher.lists == 2 and trigger.idle(), what="a list once the server answers again, and its request")

    asked = [e for e in proxy.exchanges[planned_at:] if e.path == activations_path(namespace)]
    assert list(watcher.backoffs)[:5] == [0.05, 0.1, 0.2, 0.4, 0.5]
    assert len(asked) <= watcher.failures + 4, "one attempt per backoff, a list and a few watches after"
    assert len(trigger.requests) == before + 1
