"""A clear-model-cache that ends, against the real API server: the deferred models run at once.

While a clear-model-cache HostOperation runs, the plan defers new model runtimes. The host agent
writes the operation's end (`status.phase`); the trigger must request a run then, as a spec
change (never held back as churn), and not wait for the Stack's resync. The agent's progress
(`status.message`) alone requests nothing.
"""

from __future__ import annotations

from providers.kinds import HOST_OPERATION
from providers.kube import KubeClient
from services.reconcile_trigger.trigger import ReconcileTrigger, Request
from tests.services.reconcile_trigger.conftest import StartTrigger
from tests.services.reconcile_trigger.world import LOADER, eventually, settled, version_of, write_status

HOST_AGENT = "magicstick-host-agent"


def host_operation(namespace: str) -> dict:
    return {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "HostOperation",
        "metadata": {"name": "clear-cache-1", "namespace": namespace},
        "spec": {
            "action": "clear-model-cache",
            "planId": "plan-1",
            "nodeName": "node-1",
            "nodeUID": "uid-node-1",
            "bootID": "boot-1",
            "requestID": "request-1",
            "acknowledgeDisruption": True,
        },
    }


def _described(trigger: ReconcileTrigger, text: str) -> Request | None:
    return next((r for r in trigger.requests if text in r.batch.descriptions), None)


def test_a_clear_model_cache_that_ends_is_requested_at_once_as_a_spec_change(
    start_trigger: StartTrigger, admin: KubeClient, namespace: str
):
    operation = admin.apply(HOST_OPERATION, host_operation(namespace), field_manager=LOADER)
    write_status(admin, HOST_OPERATION, operation, {"phase": "Running"}, field_manager=HOST_AGENT)
    trigger = start_trigger()

    version = write_status(admin, HOST_OPERATION, operation, {"phase": "Succeeded"}, field_manager=HOST_AGENT)

    described = f"HostOperation {namespace}/clear-cache-1 modified (resourceVersion {version}, spec)"
    request = eventually(trigger, lambda: _described(trigger, described), what="the request for the clear's end")
    assert not request.batch.churn_only


def test_the_host_agents_progress_alone_requests_nothing(
    start_trigger: StartTrigger, admin: KubeClient, namespace: str
):
    operation = admin.apply(HOST_OPERATION, host_operation(namespace), field_manager=LOADER)
    write_status(
        admin, HOST_OPERATION, operation, {"phase": "Running", "message": "freed 10 MiB"}, field_manager=HOST_AGENT
    )
    trigger = start_trigger()
    before = len(trigger.requests)

    version = write_status(
        admin, HOST_OPERATION, operation, {"phase": "Running", "message": "freed 20 MiB"}, field_manager=HOST_AGENT
    )

    settled(trigger, HOST_OPERATION, namespace, version)
    assert len(trigger.requests) == before
    assert version_of(admin.get(HOST_OPERATION, "clear-cache-1", namespace)) == version
