"""Fixtures: the test API server with the program's CRDs and PKO's Stack CRD, and triggers.

- `trigger_cluster` (session): the shared test cluster with the appliance namespaces, the
  program's own CRDs and the vendored PKO Stack CRD, each installed only when absent.
- `admin`: a KubeClient as the cluster admin; `admin_access` its KubeAccess.
- `stack`: the Stack `magicstick` in this test's namespace, which is also the system, gateway
  and target namespace of the triggers started here.
- `start_trigger`: starts a ReconcileTrigger on that world (FAST timing; `extra` watches added
  to the program's), waits until every watch listed and the start's own request is done; every
  trigger is stopped at the end, and none may have failed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from providers.kube import KubeAccess, KubeClient, open_client
from services.reconcile_trigger.stack import StackRef
from services.reconcile_trigger.trigger import ReconcileTrigger, Timing
from services.reconcile_trigger.watches import WatchTarget, watch_targets
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.deploy.program_identity import ensure_namespaces, ensure_own_crds
from tests.live.world import ensure_namespace
from tests.services.reconcile_trigger.world import FAST, create_stack, ensure_stack_crd, eventually

StartTrigger = Callable[..., ReconcileTrigger]


@pytest.fixture(scope="session")
def trigger_cluster(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> ClusterInfo:
    with open_client(KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)))) as client:
        ensure_namespaces(client)
        ensure_own_crds(cluster, client, tmp_path_factory.mktemp("own-crds"))
        ensure_stack_crd(cluster, client)
    return cluster


@pytest.fixture
def admin_access(trigger_cluster: ClusterInfo) -> KubeAccess:
    """The kubeconfig's contents, not its path: the helper rewrites that file on every call, and
    the trigger's threads read their access whenever they (re)connect."""
    return KubeAccess(kubeconfig=trigger_cluster.kubeconfig_path(ADMIN_USER).read_text())


@pytest.fixture
def admin(admin_access: KubeAccess) -> Iterator[KubeClient]:
    with open_client(admin_access) as client:
        yield client


@pytest.fixture
def stack(admin: KubeClient, namespace: str) -> StackRef:
    ensure_namespace(admin, namespace)
    return create_stack(admin, namespace)


def targets_in(namespace: str) -> tuple[WatchTarget, ...]:
    """The watches of a trigger whose system, gateway and only target namespace is `namespace`."""
    return watch_targets(system_namespace=namespace, target_namespaces=(namespace,), gateway_namespace=namespace)


@pytest.fixture
def start_trigger(admin_access: KubeAccess, namespace: str, stack: StackRef) -> Iterator[StartTrigger]:
    started: list[ReconcileTrigger] = []

    def start(
        *,
        access: KubeAccess = admin_access,
        timing: Timing = FAST,
        of: StackRef = stack,
        ready: bool = True,
        extra: tuple[WatchTarget, ...] = (),
    ) -> ReconcileTrigger:
        trigger = ReconcileTrigger(access=access, stack=of, targets=(*targets_in(namespace), *extra), timing=timing)
        started.append(trigger.start())
        if ready:
            eventually(trigger, trigger.synced, what="every watch listed its collection")
            eventually(trigger, lambda: trigger.requests, what="the request made at start")
            eventually(trigger, trigger.idle, what="nothing left to request after the start")
        return trigger

    yield start
    for trigger in started:
        trigger.stop()
    assert not [trigger for trigger in started if trigger.failed.is_set()], "a thread of a trigger failed"
