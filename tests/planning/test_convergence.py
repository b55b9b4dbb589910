"""Determinism and convergence of the plan (invariants 2 and 4)."""

from __future__ import annotations

from planning.frozen import thaw
from planning.plan import Plan
from tests.planning.builders import (
    CATALOGS,
    LATER,
    activation,
    appliance,
    cpu_model,
    crd,
    instance,
    plan_of,
)

SCENARIO = (
    appliance({"basis": True, "dashboard": True, "litellm": True, "model-catalog": True}),
    activation("kubeai"),
    activation("gpu", enabled=False),
    instance("openclaw-default", "openclaw"),
    cpu_model("qwen2505bcpu"),
)


def _world_after(result: Plan, previous: tuple[dict, ...]) -> tuple[dict, ...]:
    """The cluster after applying `result`: declared objects exist and are Ready, statuses written."""
    objects: dict[tuple[str, str, str], dict] = {}
    for raw in previous:
        meta = raw["metadata"]
        objects[(raw["kind"], meta.get("namespace", ""), meta["name"])] = thaw(raw)
    for desired in result.objects:
        body = thaw(desired.body)
        body["metadata"].setdefault("generation", 1)
        if desired.kind == "Kustomization":
            body["status"] = {
                "observedGeneration": 1,
                "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            }
            module = CATALOGS.modules.get(body["metadata"]["labels"]["appliance.magicstick.dev/module"])
            for name in module.required_crds:
                objects[("CustomResourceDefinition", "", name)] = crd(name)
        key = (desired.kind, desired.namespace or "", desired.name)
        if desired.ignore_spec_changes and key in objects:
            continue
        objects[key] = body
    for update in result.statuses:
        key = (update.kind, update.namespace, update.name)
        if key in objects:
            objects[key]["status"] = thaw(update.status)
    return tuple(objects[key] for key in sorted(objects))


def _converge(world: tuple[dict, ...], rounds: int = 10) -> tuple[Plan, tuple[dict, ...]]:
    result = plan_of(*world)
    for _ in range(rounds):
        world = _world_after(result, world)
        following = plan_of(*world, now=LATER)
        if following.objects == result.objects and following.statuses == result.statuses:
            return following, world
        result = following
    raise AssertionError("the plan did not converge")


def test_the_same_snapshot_gives_the_same_plan():
    assert plan_of(*SCENARIO) == plan_of(*SCENARIO)
    assert plan_of(*SCENARIO) == plan_of(*reversed(SCENARIO))


def test_a_plan_applied_to_the_cluster_converges_and_then_declares_the_same_objects_and_statuses():
    converged, world = _converge(SCENARIO)
    again = plan_of(*world, now=LATER)
    assert again.objects == converged.objects
    assert again.statuses == converged.statuses
    assert {m.phase for m in converged.modules.modules} <= {"Ready", "Disabled"}


def test_the_first_plan_declares_what_the_converged_snapshot_holds_unchanged():
    first = plan_of(*SCENARIO)
    world = _world_after(first, SCENARIO)
    second = plan_of(*world, now=LATER)
    created = {o.identity: o.body for o in first.objects}
    for obj in second.objects:
        if obj.identity in created and obj.kind != "Kustomization":
            assert obj.body == created[obj.identity], obj.identity
