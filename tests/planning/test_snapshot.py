"""Reading the observed world into a typed, immutable snapshot."""

from __future__ import annotations

import dataclasses

import pytest

from planning.snapshot import Snapshot, SnapshotError
from tests.planning.builders import activation, appliance, crd, kustomization_for


def test_a_list_object_is_flattened_into_its_items():
    snapshot = Snapshot.from_objects(
        [{"apiVersion": "v1", "kind": "List", "items": [appliance(), activation("basis")]}]
    )
    assert [o.kind for o in snapshot.runtime_objects] == ["Appliance", "ModuleActivation"]


def test_an_object_without_a_name_is_rejected_with_its_position_and_kind():
    with pytest.raises(SnapshotError, match=r"object 1 \(Node\): metadata.name is missing"):
        Snapshot.from_objects([appliance(), {"apiVersion": "v1", "kind": "Node", "metadata": {}}])


def test_the_same_object_twice_is_rejected_naming_both_positions():
    with pytest.raises(
        SnapshotError, match=r"object 2 \(ModuleActivation/ai-system/basis\): appears twice \(first as object 1\)"
    ):
        Snapshot.from_objects([appliance(), activation("basis"), activation("basis")])


def test_one_name_in_two_api_groups_or_namespaces_is_two_objects():
    other_namespace = activation("basis")
    other_namespace["metadata"]["namespace"] = "elsewhere"
    other_group = {
        "apiVersion": "example.com/v1",
        "kind": "ModuleActivation",
        "metadata": {"name": "basis", "namespace": "ai-system"},
    }
    assert len(Snapshot.from_objects([activation("basis"), other_namespace, other_group]).runtime_objects) == 2


def test_an_object_without_an_api_version_is_rejected():
    with pytest.raises(SnapshotError, match="apiVersion is missing"):
        Snapshot.from_objects([{"kind": "Node", "metadata": {"name": "n"}}])


def test_a_spec_that_is_not_a_mapping_is_rejected_naming_the_object():
    broken = activation("basis")
    broken["spec"] = ["not", "a", "mapping"]
    with pytest.raises(SnapshotError, match="ModuleActivation/ai-system/basis: spec must be a mapping"):
        Snapshot.from_objects([broken])


def test_kinds_the_program_does_not_read_are_ignored():
    snapshot = Snapshot.from_objects([{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}])
    assert snapshot == Snapshot()


def test_a_crd_is_served_once_established_and_not_before():
    pending = crd("models.kubeai.org") | {"status": {"conditions": [{"type": "Established", "status": "False"}]}}
    established = crd("a.example.com") | {"status": {"conditions": [{"type": "Established", "status": "True"}]}}
    assert Snapshot.from_objects([pending, established]).served_crds == {"a.example.com"}


def test_kustomization_conditions_are_typed():
    snapshot = Snapshot.from_objects([kustomization_for("basis", "False", reason="BuildFailed")])
    (kustomization,) = snapshot.kustomizations
    assert kustomization.condition("Ready").reason == "BuildFailed"


def test_the_snapshot_cannot_be_changed():
    snapshot = Snapshot.from_objects([activation("basis")])
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.nodes = ()
    with pytest.raises(TypeError):
        snapshot.runtime_objects[0].spec["enabled"] = False
