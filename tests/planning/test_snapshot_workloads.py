"""Reading the Deployments of direct runtimes into Workloads, with their rollout counts."""

from __future__ import annotations

from typing import Any

import pytest

from planning.snapshot import HealthObservation, Snapshot, SnapshotError, Workload


def deployment(
    *, generation: int = 3, spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "omni",
            "namespace": "ai",
            "generation": generation,
            "labels": {"appliance.magicstick.dev/runtime": "realtime"},
        },
        "spec": {"replicas": 2} if spec is None else spec,
        "status": {} if status is None else status,
    }


ROLLED_OUT = {"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 1}


def only_workload(obj: dict[str, Any]) -> Workload:
    (workload,) = Snapshot.from_objects([obj]).workloads
    return workload


def test_a_deployment_reads_into_a_workload_with_its_generations_and_replica_counts():
    workload = only_workload(deployment(status=ROLLED_OUT))

    assert (workload.meta.namespace, workload.meta.name, workload.meta.generation) == ("ai", "omni", 3)
    assert (
        workload.observed_generation,
        workload.replicas,
        workload.updated_replicas,
        workload.available_replicas,
    ) == (3, 2, 2, 1)
    assert workload.desired_replicas == 2


def test_a_deployment_its_controller_has_not_seen_yet_reads_with_no_observed_generation_and_no_replicas():
    workload = only_workload(deployment(status={}))

    assert (
        workload.observed_generation,
        workload.replicas,
        workload.updated_replicas,
        workload.available_replicas,
    ) == (None, 0, 0, 0)


def test_a_deployment_without_spec_replicas_wants_one_as_the_api_server_defaults():
    assert only_workload(deployment(spec={})).desired_replicas == 1


def test_a_deployment_of_another_api_group_is_not_a_workload():
    assert Snapshot.from_objects([{**deployment(), "apiVersion": "extensions/v1beta1"}]).workloads == ()


@pytest.mark.parametrize("field", ["replicas", "updatedReplicas", "availableReplicas", "observedGeneration"])
def test_a_rollout_count_that_is_not_an_integer_is_rejected_naming_the_deployment_and_the_field(field):
    with pytest.raises(SnapshotError) as raised:
        Snapshot.from_objects([deployment(status={**ROLLED_OUT, field: "2"})])

    assert str(raised.value) == f"Deployment/ai/omni: status.{field} must be an integer"


def test_health_observations_are_kept_sorted_by_namespace_and_pod_and_found_by_pod():
    later = HealthObservation(
        namespace="team-x", pod="omni-0", healthy=False, error="GET health: 503 Service Unavailable"
    )
    earlier = HealthObservation(namespace="ai", pod="omni-1", healthy=True)

    snapshot = Snapshot.from_objects([], health=[later, earlier])

    assert snapshot.health == (earlier, later)
    assert snapshot.health_of("team-x", "omni-0") == later
    assert snapshot.health_of("ai", "omni-0") is None
