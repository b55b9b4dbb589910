"""What the trigger watches mirrors what the program lists, and which changes count. Pure."""

from __future__ import annotations

import pytest

from planning.hardware import runtime_adoption
from planning.models.direct import RUNTIME_LABEL
from planning.settings import FLUX_NAMESPACE as PLANNING_FLUX_NAMESPACE
from providers import live_reader
from providers.kinds import CONFIG_MAP, CRD, DEPLOYMENT, NODE_FEATURE, REFERENCE_GRANT
from providers.kube import EventType
from services.reconcile_trigger.watches import (
    FLUX_NAMESPACE,
    KUBEAI_CONFIG_SELECTOR,
    KUBEAI_NAMESPACE,
    MODEL_POD_SELECTOR,
    RUNTIME_SELECTOR,
    ChangeClass,
    Sensitivity,
    classify,
    counts,
    fingerprint,
    spec_fingerprint,
    watch_targets,
)

SYSTEM, GATEWAY, TARGETS = "ai-system", "edge", ("ai", "team-b")


def as_read(kind, namespace, selector):
    return (kind.api_version, kind.kind, namespace, selector)


def not_watched(system: str, gateway: str, targets: tuple[str, ...]) -> set[tuple]:
    """The reader's LISTs the trigger leaves to the periodic resync (watches.py says why)."""
    unwatched = {
        as_read(CRD, None, None),
        as_read(NODE_FEATURE, None, None),
        as_read(DEPLOYMENT, gateway, live_reader.GUARD_SELECTOR),
    }
    for namespace in targets:
        unwatched |= {as_read(REFERENCE_GRANT, namespace, None), as_read(CONFIG_MAP, namespace, RUNTIME_SELECTOR)}
    return unwatched


def test_the_constants_copied_from_the_program_are_the_programs():
    assert FLUX_NAMESPACE == PLANNING_FLUX_NAMESPACE
    assert MODEL_POD_SELECTOR == live_reader.MODEL_POD_SELECTOR
    assert RUNTIME_SELECTOR == RUNTIME_LABEL == live_reader.RUNTIME_SELECTOR
    assert KUBEAI_NAMESPACE == runtime_adoption.KUBEAI_NAMESPACE
    assert KUBEAI_CONFIG_SELECTOR == live_reader.KUBEAI_CONFIG_SELECTOR


def test_every_watch_is_a_list_of_the_live_reader_and_every_list_is_watched_but_the_named_few():
    watched = {
        as_read(t.kind, t.namespace, t.label_selector)
        for t in watch_targets(system_namespace=SYSTEM, target_namespaces=TARGETS, gateway_namespace=GATEWAY)
    }
    listed = {as_read(r.kind, r.namespace, r.label_selector) for r in live_reader.reads(SYSTEM, TARGETS, GATEWAY)}

    assert watched <= listed
    assert listed - watched == not_watched(SYSTEM, GATEWAY, TARGETS)


def test_each_target_namespace_adds_four_watches_and_none_is_doubled():
    one = watch_targets(system_namespace=SYSTEM, target_namespaces=("ai",), gateway_namespace=SYSTEM)
    two = watch_targets(system_namespace=SYSTEM, target_namespaces=("ai", "team-b", "ai"), gateway_namespace=SYSTEM)

    assert len(two) == len(one) + 4
    assert len(set(two)) == len(two)


def test_only_runtime_resources_and_nodes_are_filtered_every_other_kind_counts_every_change():
    targets = watch_targets(system_namespace=SYSTEM, target_namespaces=TARGETS, gateway_namespace=GATEWAY)
    by_sensitivity = {s: sorted({t.kind.kind for t in targets if t.sensitivity is s}) for s in Sensitivity}

    assert by_sensitivity[Sensitivity.SPEC_AND_METADATA] == [
        "AppInstance",
        "Appliance",
        "ApplianceSetup",
        "ModelActivation",
        "ModuleActivation",
    ]
    assert by_sensitivity[Sensitivity.SPEC_METADATA_AND_PHASE] == ["HostOperation"]
    assert by_sensitivity[Sensitivity.NODE_INVENTORY] == ["Node"]


def host_operation(phase: str, **status: object) -> dict:
    return {
        "apiVersion": "appliance.magicstick.dev/v1alpha1",
        "kind": "HostOperation",
        "metadata": {"name": "clear-1", "namespace": SYSTEM, "generation": 1, "resourceVersion": "7"},
        "spec": {"action": "clear-model-cache"},
        "status": {"phase": phase, **status},
    }


def test_a_host_operation_reaching_its_end_counts_as_spec_so_deferred_models_run_at_once():
    sensitivity = Sensitivity.SPEC_METADATA_AND_PHASE
    running, done = host_operation("Running"), host_operation("Succeeded")
    done["metadata"]["resourceVersion"] = "8"

    assert counts(EventType.MODIFIED, fingerprint(sensitivity, running), fingerprint(sensitivity, done))
    assert (
        classify(EventType.MODIFIED, spec_fingerprint(running, sensitivity), spec_fingerprint(done, sensitivity))
        is ChangeClass.SPEC
    )


def test_a_host_operations_progress_written_alone_does_not_count():
    sensitivity = Sensitivity.SPEC_METADATA_AND_PHASE
    before = host_operation("Running", message="freed 10 MiB")
    after = host_operation("Running", message="freed 20 MiB")
    after["metadata"]["resourceVersion"] = "8"

    assert not counts(EventType.MODIFIED, fingerprint(sensitivity, before), fingerprint(sensitivity, after))


def runtime_object(**metadata: object) -> dict:
    base = {
        "name": "qwen",
        "namespace": SYSTEM,
        "generation": 1,
        "resourceVersion": "10",
        "labels": {"a": "1"},
        "annotations": {"b": "2"},
    }
    return {
        "kind": "ModelActivation",
        "metadata": {**base, **metadata},
        "spec": {"enabled": True},
        "status": {"phase": "Pending"},
    }


@pytest.mark.parametrize(
    ("change", "counted"),
    [
        (
            {
                "status": {"phase": "Ready"},
                "metadata": {"resourceVersion": "11", "managedFields": [{"manager": "magicstick-status"}]},
            },
            False,
        ),
        ({"metadata": {"generation": 2}}, True),
        ({"metadata": {"labels": {"a": "2"}}}, True),
        ({"metadata": {"annotations": {"b": "3"}}}, True),
        ({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}, True),
    ],
    ids=["status write", "spec edit", "label", "annotation", "deletion"],
)
def test_a_runtime_resource_counts_a_change_of_spec_or_metadata_and_not_a_status_write(change, counted):
    before = runtime_object()
    after = {
        **before,
        "status": change.get("status", before["status"]),
        "metadata": {**before["metadata"], **change.get("metadata", {})},
    }
    previous = fingerprint(Sensitivity.SPEC_AND_METADATA, before)

    assert counts(EventType.MODIFIED, previous, fingerprint(Sensitivity.SPEC_AND_METADATA, after)) is counted


def node_object(
    *,
    labels: dict | None = None,
    annotations: dict | None = None,
    heartbeat: str = "t0",
    allocatable: dict | None = None,
) -> dict:
    return {
        "kind": "Node",
        "metadata": {
            "name": "box",
            "resourceVersion": heartbeat,
            "labels": labels or {"kubernetes.io/os": "linux"},
            "annotations": annotations or {},
        },
        "status": {
            "allocatable": allocatable or {"cpu": "8"},
            "capacity": {"cpu": "8", "memory": "32Gi"},
            "nodeInfo": {"architecture": "amd64"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": heartbeat}],
            "images": [{"names": [f"image-{heartbeat}"]}],
        },
    }


@pytest.mark.parametrize(
    ("after", "counted"),
    [
        (node_object(heartbeat="t1"), False),
        (node_object(annotations={"node.alpha.kubernetes.io/ttl": "0"}), False),
        (
            node_object(labels={"kubernetes.io/os": "linux", "feature.node.kubernetes.io/pci-10de.present": "true"}),
            True,
        ),
        (node_object(labels={"kubernetes.io/os": "windows"}), True),
        (node_object(annotations={"appliance.magicstick.dev/physical-memory-mi": "65536"}), True),
        (node_object(allocatable={"cpu": "8", "nvidia.com/gpu": "1"}), True),
    ],
    ids=["heartbeat", "foreign annotation", "nfd label", "other label", "host evidence annotation", "allocatable"],
)
def test_a_node_counts_labels_host_annotations_and_inventory_and_not_a_heartbeat(after, counted):
    previous = fingerprint(Sensitivity.NODE_INVENTORY, node_object())

    assert counts(EventType.MODIFIED, previous, fingerprint(Sensitivity.NODE_INVENTORY, after)) is counted


@pytest.mark.parametrize(
    ("event", "previous", "current", "counted"),
    [
        (EventType.ADDED, None, "a", True),
        (EventType.DELETED, "a", "a", True),
        (EventType.MODIFIED, "a", "a", False),
        (EventType.MODIFIED, "a", "b", True),
        (EventType.MODIFIED, None, "a", True),
        (EventType.BOOKMARK, None, "a", False),
    ],
)
def test_which_events_count(event, previous, current, counted):
    assert counts(event, previous, current) is counted


def test_every_modification_of_an_every_change_kind_counts():
    before = {"metadata": {"resourceVersion": "1"}, "status": {"ready": False}}
    after = {"metadata": {"resourceVersion": "2"}, "status": {"ready": True}}

    assert counts(
        EventType.MODIFIED, fingerprint(Sensitivity.EVERY_CHANGE, before), fingerprint(Sensitivity.EVERY_CHANGE, after)
    )


def pod_object(**changes: object) -> dict:
    base = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "qwen-0",
            "namespace": "ai",
            "generation": 1,
            "resourceVersion": "10",
            "labels": {"model": "qwen"},
        },
        "spec": {"containers": [{"name": "server", "image": "registry.example.com/model:CHANGEME"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "server", "restartCount": 3}]},
    }
    return {**base, **changes}


@pytest.mark.parametrize(
    ("after", "change"),
    [
        (
            pod_object(status={"phase": "Running", "containerStatuses": [{"name": "server", "restartCount": 4}]}),
            ChangeClass.CHURN,
        ),
        (
            pod_object(
                metadata={
                    **pod_object()["metadata"],
                    "resourceVersion": "11",
                    "managedFields": [{"manager": "kubelet"}],
                }
            ),
            ChangeClass.CHURN,
        ),
        (pod_object(metadata={**pod_object()["metadata"], "generation": 2}), ChangeClass.SPEC),
        (
            pod_object(metadata={**pod_object()["metadata"], "labels": {"model": "qwen", "extra": "1"}}),
            ChangeClass.SPEC,
        ),
        (
            pod_object(metadata={**pod_object()["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}),
            ChangeClass.SPEC,
        ),
        (
            pod_object(spec={"containers": [{"name": "server", "image": "registry.example.com/model:CHANGEME-2"}]}),
            ChangeClass.SPEC,
        ),
    ],
    ids=["restart count", "status write's metadata", "generation", "label", "deletion", "spec"],
)
def test_a_modification_of_the_status_alone_is_churn_and_of_anything_else_spec(after, change):
    assert classify(EventType.MODIFIED, spec_fingerprint(pod_object()), spec_fingerprint(after)) is change


def test_a_config_maps_data_change_is_spec():
    before = {
        "kind": "ConfigMap",
        "metadata": {"name": "profiles", "resourceVersion": "1"},
        "data": {"profiles.json": "{}"},
    }
    after = {**before, "metadata": {"name": "profiles", "resourceVersion": "2"}, "data": {"profiles.json": '{"a": 1}'}}

    assert classify(EventType.MODIFIED, spec_fingerprint(before), spec_fingerprint(after)) is ChangeClass.SPEC


@pytest.mark.parametrize(
    ("event", "previous"), [(EventType.ADDED, None), (EventType.DELETED, "same"), (EventType.MODIFIED, None)]
)
def test_a_creation_a_deletion_and_a_modification_of_an_unseen_object_are_spec(event, previous):
    current = spec_fingerprint(pod_object())

    assert classify(event, current if previous == "same" else previous, current) is ChangeClass.SPEC
