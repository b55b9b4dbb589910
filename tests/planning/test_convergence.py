"""Determinism and convergence of the plan (invariants 2 and 4)."""

from __future__ import annotations

from planning.frozen import thaw
from planning.instances.plan import GATEWAY_CRDS, HELM_RELEASE_CRD
from planning.plan import Plan
from tests.planning.builders import (
    CATALOGS,
    LATER,
    activation,
    appliance,
    cpu_model,
    crd,
    flux_status,
    gateway_status,
    instance,
    plan_of,
    status_of,
)
from tests.support.crd_defaults import with_defaults
from tests.support.crd_schema import UnknownKindError, upstream_registry

SCENARIO = (
    appliance({"basis": True, "dashboard": True, "litellm": True, "model-catalog": True}),
    activation("kubeai"),
    activation("gpu", enabled=False),
    instance("openclaw-default", "openclaw"),
    cpu_model("qwen2505bcpu"),
    *(crd(name) for name in (*GATEWAY_CRDS, HELM_RELEASE_CRD)),
)


def _world_after(result: Plan, previous: tuple[dict, ...]) -> tuple[dict, ...]:
    """The cluster after applying `result`, as the API server and the controllers leave it.

    Declared objects are stored with their CRD's defaults, their generation moves when their
    spec does, Flux reports every Kustomization and HelmRelease Ready for its generation and
    Envoy Gateway accepts every SecurityPolicy and HTTPRoute for its generation; statuses are written.
    """
    objects: dict[tuple[str, str, str], dict] = {}
    for raw in previous:
        meta = raw["metadata"]
        objects[(raw["kind"], meta.get("namespace", ""), meta["name"])] = thaw(raw)
    for desired in result.objects:
        key = (desired.kind, desired.namespace or "", desired.name)
        if desired.ignore_spec_changes and key in objects:
            continue
        objects[key] = _stored(thaw(desired.body), objects.get(key))
        if desired.kind == "Kustomization":
            module = CATALOGS.modules.get(desired.body["metadata"]["labels"]["appliance.magicstick.dev/module"])
            for name in module.required_crds:
                objects[("CustomResourceDefinition", "", name)] = crd(name)
    for update in result.statuses:
        key = (update.kind, update.namespace, update.name)
        if key in objects:
            objects[key]["status"] = thaw(update.status)
    return tuple(objects[key] for key in sorted(objects))


def _stored(body: dict, before: dict | None) -> dict:
    """`body` as the API server stores it over `before`, with its controller's current status."""
    upstream = _is_upstream(body)
    stored = with_defaults(body) if upstream else body
    generation = before["metadata"].get("generation", 1) if before else 1
    if before is not None and before.get("spec") != stored.get("spec"):
        generation += 1
    stored["metadata"]["generation"] = generation
    if before is not None and "status" in before:
        stored["status"] = before["status"]
    if stored["kind"] in ("Kustomization", "HelmRelease"):
        stored["status"] = flux_status("True", reason="ReconciliationSucceeded", message="Applied", observed_generation=generation)
    elif stored["kind"] in ("SecurityPolicy", "HTTPRoute"):
        key = "ancestors" if stored["kind"] == "SecurityPolicy" else "parents"
        stored["status"] = gateway_status(key, "True", reason="Accepted", message="Accepted", observed_generation=generation)
    return stored


def _is_upstream(body: dict) -> bool:
    try:
        upstream_registry().definition_for(body["apiVersion"], body["kind"])
    except UnknownKindError:
        return False
    return True


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
    assert status_of(converged, "AppInstance", "openclaw-default")["accessGuardReady"] is True


def test_the_first_plan_declares_what_the_converged_snapshot_holds_unchanged():
    first = plan_of(*SCENARIO)
    world = _world_after(first, SCENARIO)
    second = plan_of(*world, now=LATER)
    created = {o.identity: o.body for o in first.objects}
    for obj in second.objects:
        # Kustomizations resume once their dependencies are Ready; routes open once the guard is accepted.
        if obj.identity in created and obj.kind not in ("Kustomization", "HTTPRoute"):
            assert obj.body == created[obj.identity], obj.identity
