"""Clusters as a plan leaves them: the applied world that convergence and invalid-edit tests start from."""

from __future__ import annotations

import json
from collections.abc import Iterable

from planning.frozen import thaw
from planning.plan import Plan
from tests.planning.builders import (
    CATALOGS,
    LATER,
    JsonObject,
    accepted_gateway_status,
    crd,
    flux_status,
    plan_of,
)
from tests.support.crd_defaults import with_defaults
from tests.support.crd_schema import UnknownKindError, upstream_registry

PROFILE_STORE = ("ConfigMap", "flux-system", "magicstick-runtime-profiles")
"""Where the RuntimeProfile dynamic resources write the CPU profiles of a plan."""


def world_after(result: Plan, previous: Iterable[JsonObject]) -> tuple[JsonObject, ...]:
    """The cluster after applying `result`, as the API server and the controllers leave it.

    Declared objects are stored with their CRD's defaults, their generation moves when their
    spec does, Flux reports every Kustomization and HelmRelease Ready for its generation,
    Envoy Gateway accepts every SecurityPolicy and HTTPRoute for its generation and every
    Deployment (the access guard) rolls out; the CPU
    profiles land in the runtime-profile store; statuses are written.
    """
    objects: dict[tuple[str, str, str], JsonObject] = {}
    for raw in previous:
        meta = raw["metadata"]
        objects[(raw["kind"], meta.get("namespace", ""), meta["name"])] = thaw(raw)
    for desired in result.objects:
        key = (desired.kind, desired.namespace or "", desired.name)
        if desired.ignore_spec_changes and key in objects:
            continue
        objects[key] = _stored(thaw(desired.body), objects.get(key))
        if desired.kind == "Kustomization":
            module = CATALOGS.modules.require(desired.body["metadata"]["labels"]["appliance.magicstick.dev/module"])
            for name in module.required_crds:
                objects[("CustomResourceDefinition", "", name)] = crd(name)
    if result.models.cpu_profiles:
        profiles = {p.name: thaw(p.body) for p in result.models.cpu_profiles}
        document = json.dumps({"resourceProfiles": profiles}, sort_keys=True)
        kind, namespace, name = PROFILE_STORE
        objects[PROFILE_STORE] = {
            "apiVersion": "v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": namespace},
            "data": {"values.json": document},
        }
    for update in result.statuses:
        key = (update.kind, update.namespace, update.name)
        if key in objects:
            objects[key]["status"] = thaw(update.status)
    return tuple(objects[key] for key in sorted(objects))


def _stored(body: JsonObject, before: JsonObject | None) -> JsonObject:
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
        stored["status"] = flux_status(
            "True", reason="ReconciliationSucceeded", message="Applied", observed_generation=generation
        )
    elif stored["kind"] in ("SecurityPolicy", "HTTPRoute"):
        key = "ancestors" if stored["kind"] == "SecurityPolicy" else "parents"
        stored["status"] = accepted_gateway_status(key, generation)
    elif stored["kind"] == "Deployment":
        replicas = stored["spec"].get("replicas", 1)
        stored["status"] = {
            "observedGeneration": generation,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "availableReplicas": replicas,
        }
    return stored


def _is_upstream(body: JsonObject) -> bool:
    try:
        upstream_registry().definition_for(body["apiVersion"], body["kind"])
    except UnknownKindError:
        return False
    return True


def converge(world: Iterable[JsonObject], rounds: int = 10) -> tuple[Plan, tuple[JsonObject, ...]]:
    """Plan and apply until the plan stops changing; the last plan and the world it leaves."""
    current = tuple(world)
    result = plan_of(*current)
    for _ in range(rounds):
        current = world_after(result, current)
        following = plan_of(*current, now=LATER)
        if following.objects == result.objects and following.statuses == result.statuses:
            return following, current
        result = following
    raise AssertionError("the plan did not converge")
