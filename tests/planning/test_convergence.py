"""Determinism and convergence of the plan (invariants 2 and 4)."""

from __future__ import annotations

from planning.instances.plan import GATEWAY_CRDS, HELM_RELEASE_CRD
from tests.planning.builders import (
    LATER,
    activation,
    appliance,
    cpu_model,
    crd,
    instance,
    plan_of,
    status_of,
)
from tests.planning.worlds import converge, world_after
from tests.support.hash_seeds import digest, digests_under_hash_seeds

SCENARIO = (
    appliance({"basis": True, "dashboard": True, "litellm": True, "model-catalog": True}),
    activation("kubeai"),
    activation("gpu", enabled=False),
    instance("openclaw-default", "openclaw"),
    cpu_model("qwen2505bcpu"),
    *(crd(name) for name in (*GATEWAY_CRDS, HELM_RELEASE_CRD)),
)


def test_the_same_snapshot_gives_the_same_plan_whatever_the_order_of_its_objects():
    assert plan_of(*SCENARIO) == plan_of(*reversed(SCENARIO))


def test_the_same_snapshot_gives_the_same_plan_byte_for_byte_whatever_the_hash_seed():
    imports = "from tests.planning.test_convergence import SCENARIO\nfrom tests.planning.builders import plan_of"
    assert digests_under_hash_seeds("plan_of(*SCENARIO)", imports=imports) == [digest(repr(plan_of(*SCENARIO)))] * 2


def test_a_plan_applied_to_the_cluster_converges_and_then_declares_the_same_objects_and_statuses():
    converged, world = converge(SCENARIO)
    again = plan_of(*world, now=LATER)
    assert again.objects == converged.objects
    assert again.statuses == converged.statuses
    assert {m.phase for m in converged.modules.modules} <= {"Ready", "Disabled"}
    assert status_of(converged, "AppInstance", "openclaw-default")["accessGuardReady"] is True


def test_the_first_plan_declares_what_the_converged_snapshot_holds_unchanged():
    first = plan_of(*SCENARIO)
    world = world_after(first, SCENARIO)
    second = plan_of(*world, now=LATER)
    created = {o.identity: o.body for o in first.objects}
    for obj in second.objects:
        # Kustomizations resume once their dependencies are Ready; routes open once the guard is accepted.
        if obj.identity in created and obj.kind not in ("Kustomization", "HTTPRoute"):
            assert obj.body == created[obj.identity], obj.identity
