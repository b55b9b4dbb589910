"""The trigger against the real API server: which changes request a run, and how many requests.

Each test's namespace is the trigger's system, gateway and target namespace, and holds the
Stack; Flux's objects and shared ConfigMaps are in flux-system, Nodes are cluster-wide. A
test waits until the watch concerned has handled the change (by resourceVersion) and the
trigger has nothing left to request, then counts the requests: no test waits for time to pass.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace

import pytest

from providers.kinds import CONFIG_MAP, KUSTOMIZATION, MODEL_ACTIVATION, MUTATING_ADMISSION_POLICY, NODE, POD
from providers.kube import KubeClient, NotFound
from services.reconcile_trigger.stack import StackRef
from services.reconcile_trigger.trigger import ReconcileTrigger
from services.reconcile_trigger.watches import FLUX_NAMESPACE, MODEL_POD_SELECTOR, WatchTarget
from tests.services.reconcile_trigger.conftest import StartTrigger
from tests.services.reconcile_trigger.world import (
    FAST,
    FLUX,
    KUBELET,
    LOADER,
    PROGRAM_STATUS,
    config_map,
    eventually,
    flux_ready,
    kustomization,
    model_activation,
    model_pod,
    node,
    node_heartbeat,
    pod_ready,
    request_annotation,
    settled,
    version_of,
    write_status,
)


def unique(request: pytest.FixtureRequest, prefix: str) -> str:
    return f"{prefix}-{hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:10]}"


@pytest.fixture
def node_name(request: pytest.FixtureRequest, admin: KubeClient) -> Iterator[str]:
    name = unique(request, "node")
    yield name
    try:
        admin.delete(NODE, name)
    except NotFound:
        pass


@pytest.fixture
def flux_name(request: pytest.FixtureRequest, admin: KubeClient) -> Iterator[str]:
    """A name for this test's objects in flux-system (shared by every test): removed afterwards."""
    name = unique(request, "trigger")
    yield name
    for kind in (KUSTOMIZATION, CONFIG_MAP):
        try:
            admin.delete(kind, name, FLUX_NAMESPACE)
        except NotFound:
            pass


def one_more_request(trigger: ReconcileTrigger, admin: KubeClient, before: int, stack: StackRef) -> None:
    assert len(trigger.requests) == before + 1, [r.batch.descriptions for r in trigger.requests[before:]]
    assert request_annotation(admin, stack) == trigger.requests[-1].value


class TestEachWatchedChangeRequestsExactlyOneRun:
    def test_a_model_activation_spec_edit(
        self, start_trigger: StartTrigger, admin: KubeClient, namespace: str, stack: StackRef
    ):
        admin.apply(MODEL_ACTIVATION, model_activation(namespace, "qwen"), field_manager=LOADER)
        trigger = start_trigger()
        before = len(trigger.requests)

        edited = admin.apply(
            MODEL_ACTIVATION, model_activation(namespace, "qwen", preset="qwen2515bcpu"), field_manager=LOADER
        )
        settled(trigger, MODEL_ACTIVATION, namespace, version_of(edited))

        one_more_request(trigger, admin, before, stack)
        assert "ModelActivation" in trigger.requests[-1].batch.descriptions[0]

    def test_an_nfd_label_on_a_node(
        self, start_trigger: StartTrigger, admin: KubeClient, stack: StackRef, node_name: str
    ):
        admin.apply(NODE, node(node_name, {"kubernetes.io/os": "linux"}), field_manager=LOADER)
        trigger = start_trigger()
        before = len(trigger.requests)

        labelled = admin.apply(
            NODE,
            node(node_name, {"kubernetes.io/os": "linux", "feature.node.kubernetes.io/pci-10de.present": "true"}),
            field_manager=LOADER,
        )
        settled(trigger, NODE, None, version_of(labelled))

        one_more_request(trigger, admin, before, stack)

    def test_a_kustomization_becoming_ready_as_flux_reports_it(
        self, start_trigger: StartTrigger, admin: KubeClient, stack: StackRef, flux_name: str
    ):
        created = admin.apply(KUSTOMIZATION, kustomization(flux_name), field_manager=LOADER)
        trigger = start_trigger()
        before = len(trigger.requests)

        ready = write_status(
            admin, KUSTOMIZATION, created, flux_ready(created["metadata"]["generation"]), field_manager=FLUX
        )
        settled(trigger, KUSTOMIZATION, FLUX_NAMESPACE, ready)

        one_more_request(trigger, admin, before, stack)

    def test_a_model_pod_becoming_ready(
        self, start_trigger: StartTrigger, admin: KubeClient, namespace: str, stack: StackRef
    ):
        created = admin.apply(POD, model_pod(namespace, "qwen-0", "qwen"), field_manager=LOADER)
        trigger = start_trigger()
        before = len(trigger.requests)

        ready = write_status(admin, POD, created, pod_ready(), field_manager=KUBELET)
        settled(trigger, POD, namespace, ready, MODEL_POD_SELECTOR)

        one_more_request(trigger, admin, before, stack)

    def test_a_config_map_in_flux_system(
        self, start_trigger: StartTrigger, admin: KubeClient, stack: StackRef, flux_name: str
    ):
        trigger = start_trigger()
        before = len(trigger.requests)

        created = admin.apply(
            CONFIG_MAP, config_map(FLUX_NAMESPACE, flux_name, {"profiles.json": "{}"}), field_manager=LOADER
        )
        settled(trigger, CONFIG_MAP, FLUX_NAMESPACE, version_of(created))

        one_more_request(trigger, admin, before, stack)


class TestWhatCannotAlterThePlanRequestsNothing:
    def test_the_programs_own_status_write_on_a_runtime_resource(
        self, start_trigger: StartTrigger, admin: KubeClient, namespace: str
    ):
        created = admin.apply(MODEL_ACTIVATION, model_activation(namespace, "qwen"), field_manager=LOADER)
        trigger = start_trigger()
        before = len(trigger.requests)

        status = {"phase": "Pending", "observedGeneration": 1, "message": "Waiting for the KubeAI module."}
        written = write_status(admin, MODEL_ACTIVATION, created, status, field_manager=PROGRAM_STATUS)
        settled(trigger, MODEL_ACTIVATION, namespace, written)

        assert len(trigger.requests) == before

    def test_a_node_heartbeat(self, start_trigger: StartTrigger, admin: KubeClient, node_name: str):
        created = admin.apply(
            NODE, node(node_name, {"feature.node.kubernetes.io/cpu-model.vendor_id": "AMD"}), field_manager=LOADER
        )
        write_status(admin, NODE, created, node_heartbeat("2026-01-01T00:00:00Z"), field_manager=KUBELET)
        trigger = start_trigger()
        before = len(trigger.requests)

        beat = write_status(admin, NODE, created, node_heartbeat("2026-01-01T00:00:10Z"), field_manager=KUBELET)
        settled(trigger, NODE, None, beat)

        assert len(trigger.requests) == before


class TestDebouncing:
    def test_a_burst_of_a_hundred_changes_within_the_quiet_period_requests_one_run(
        self, start_trigger: StartTrigger, admin: KubeClient, namespace: str, stack: StackRef
    ):
        # A quiet period well above the time one write takes, whatever the machine's load.
        trigger = start_trigger(timing=replace(FAST, quiet_seconds=1.0, max_delay_seconds=60.0))
        before = len(trigger.requests)

        last = ""
        for index in range(100):
            last = version_of(
                admin.apply(
                    CONFIG_MAP, config_map(namespace, f"burst-{index:03d}", {"n": str(index)}), field_manager=LOADER
                )
            )
        settled(trigger, CONFIG_MAP, namespace, last)

        one_more_request(trigger, admin, before, stack)
        assert trigger.requests[-1].batch.count == 100


def test_a_kind_the_server_does_not_serve_counts_as_listed_and_is_asked_again_later(start_trigger: StartTrigger):
    """The program's watches are all served here (ResourceSlices are not before Kubernetes 1.34),
    so the unserved kind is one the test server leaves off: a beta API, MutatingAdmissionPolicy."""
    trigger = start_trigger(extra=(WatchTarget(MUTATING_ADMISSION_POLICY),))
    eventually(trigger, trigger.synced, what="every watch listed its collection")
    (unserved,) = [w for w in trigger.watchers if w.target.kind is MUTATING_ADMISSION_POLICY]
    assert unserved.listed.is_set() and unserved.lists == 0 and unserved.unserved
    assert all(w.lists > 0 for w in trigger.watchers if w is not unserved)
    eventually(trigger, lambda: unserved.failures >= 2, what="the unserved kind is asked again")


def test_a_quiet_watch_outlives_its_read_deadline_since_the_server_ends_each_watch_before_it(
    start_trigger: StartTrigger, namespace: str
):
    """Scaled down: watches of one second, a read deadline of two. Nothing touches the namespace's
    ModelActivations, so no event and (the server's cache having nothing newer) no bookmark comes."""
    timing = replace(FAST, watch=replace(FAST.watch, timeout_seconds=1, read_deadline_seconds=2.0))
    trigger = start_trigger(timing=timing)
    (quiet,) = [w for w in trigger.watchers if w.target.kind == MODEL_ACTIVATION]

    eventually(
        trigger, lambda: quiet.watches_ended >= 4, what="four watches ended by the server, twice the read deadline"
    )

    assert (quiet.failures, quiet.lists, quiet.events) == (0, 1, 0)
    assert trigger.health().ok, trigger.health().body()
