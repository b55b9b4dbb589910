"""The live reader reads the PKO Stack the program runs under: one GET by name, identity and status only."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from planning.snapshot import Snapshot
from providers.kinds import STACK
from providers.kube import KubeAccess, KubeClient, NotFound, ResourceKind, open_client
from providers.live_reader import NamedRead, SnapshotReadError, read_operator_stack, read_snapshot
from tests.cluster.apiserver import READER_USER, ClusterInfo

NS = "ai-system"
LOADER = "magicstick-tests"
CONTROLLER = "pulumi-kubernetes-operator/stack-status"
STATUS = {
    "observedGeneration": 1,
    "lastUpdate": {
        "generation": 1,
        "name": "magicstick-1a2b3c4d",
        "type": "up",
        "state": "succeeded",
        "lastAttemptedCommit": "0123456789abcdef0123456789abcdef01234567",
        "lastSuccessfulCommit": "0123456789abcdef0123456789abcdef01234567",
        "lastResyncTime": "2026-01-01T00:00:00Z",
        "permalink": "https://app.pulumi.example.com/organization/magicstick/appliance/updates/7",
    },
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "ProcessingCompleted",
            "message": "the stack has been processed and is up to date",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ],
}


def stack_object(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "pulumi.com/v1",
        "kind": "Stack",
        "metadata": {
            "name": name,
            "namespace": NS,
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": '{"spec":{"config":{"magicstick:domain":"x"}}}'
            },
        },
        "spec": {
            "stack": "organization/magicstick/appliance",
            "projectRepo": "https://git.example.com/CHANGEME/x.git",
            "branch": "main",
        },
    }


@pytest.fixture
def operator_stack(clean_shared_namespaces, admin: KubeClient) -> Iterator[str]:
    """Stack ai-system/magicstick with the status PKO writes after a succeeded update; deleted afterwards."""
    admin.apply(STACK, stack_object("magicstick"), field_manager=LOADER)
    status = {
        "apiVersion": "pulumi.com/v1",
        "kind": "Stack",
        "metadata": {"name": "magicstick", "namespace": NS},
        "status": STATUS,
    }
    admin.apply(STACK, status, field_manager=CONTROLLER, subresource="status")
    yield "magicstick"
    with contextlib.suppress(NotFound):
        admin.delete(STACK, "magicstick", NS)


def test_the_snapshot_holds_the_stack_with_its_status_and_without_its_spec_or_annotations(operator_stack, admin_access):
    snapshot = read_snapshot(admin_access, system_namespace=NS)

    found = snapshot.generic("Stack", NS, operator_stack)
    assert found is not None and found.api_version == "pulumi.com/v1"
    assert found.status["lastUpdate"]["lastAttemptedCommit"] == STATUS["lastUpdate"]["lastAttemptedCommit"]
    assert not found.spec and not found.meta.annotations
    assert found.meta.generation == 1


def test_the_live_read_gives_the_operator_status_a_snapshot_file_of_the_same_stack_gives(
    operator_stack, admin_access, admin
):
    from_file = Snapshot.from_objects([{**admin.get(STACK, operator_stack, NS), "spec": {}}])

    live = read_snapshot(admin_access, system_namespace=NS).generic("Stack", NS, operator_stack)

    assert live.status == from_file.generic("Stack", NS, operator_stack).status


def test_a_stack_of_another_name_is_not_read(operator_stack, admin_access):
    snapshot = read_snapshot(admin_access, system_namespace=NS, stack_name="another-stack")

    assert [o for o in snapshot.generated if o.kind == "Stack"] == []


def test_without_the_stack_nothing_is_read_and_the_run_goes_on(clean_shared_namespaces, admin_access):
    snapshot = read_snapshot(admin_access, system_namespace=NS)

    assert [o for o in snapshot.generated if o.kind == "Stack"] == []


def test_a_stack_api_the_server_does_not_serve_reads_as_no_stack(clean_shared_namespaces, admin: KubeClient):
    unserved = ResourceKind(group="pulumi.example.com", version="v1", kind="Stack", plural="stacks", namespaced=True)

    assert read_operator_stack(admin, NamedRead(unserved, NS, "magicstick"), {}) == []


def test_a_refused_get_of_the_stack_stops_the_run_naming_it(operator_stack, cluster: ClusterInfo):
    """The reader identity may list the system namespace's kinds in tests, but not get Stacks."""
    access = KubeAccess(kubeconfig=str(cluster.kubeconfig_path(READER_USER)))
    with open_client(access) as client, pytest.raises(SnapshotReadError) as raised:
        read_operator_stack(client, NamedRead(STACK, NS, operator_stack), {})

    assert str(raised.value).startswith(f"reading Stack (pulumi.com/v1) magicstick in namespace {NS} failed: 403")
