"""AppInstances and the cluster around them, for instance planning tests."""

from __future__ import annotations

from typing import Any

from planning.instances.plan import GATEWAY_CRDS, HELM_RELEASE_CRD
from planning.objects import DesiredObject
from planning.plan import Plan
from tests.planning.builders import (
    CATALOGS,
    JsonObject,
    accepted_policy,
    accepted_route,
    appliance,
    as_stored,
    crd,
    observed_release,
    plan_of,
    ready_modules,
    running_guard,
    runtime,
    status_of,
)

PAPERCLIP_VALUES = {
    "name": "default",
    "model": "qwen3635b",
    "agentExecution": {
        "defaultModel": "litellm/qwen3635b",
        "maxConcurrentAgents": 2,
        "openCode": {"enabled": True},
        "openClaw": {"enabled": False, "instanceRef": ""},
        "hermes": {"enabled": False, "instanceRef": ""},
    },
}


def instance(
    name: str, application: str, values: JsonObject | None = None, *, created: str | None = None, **spec: Any
) -> JsonObject:
    """An AppInstance; `created` is its metadata.creationTimestamp (RFC 3339), when given."""
    body: JsonObject = {
        "application": application,
        "values": values if values is not None else {"name": "default", "model": "CHANGEME_MODEL"},
    }
    body.update(spec)
    obj = runtime("AppInstance", name, body)
    if created is not None:
        obj["metadata"]["creationTimestamp"] = created
    return obj


def platform(*applications: str, crds: bool = True) -> list[JsonObject]:
    """An appliance whose modules for `applications` are Ready and (unless `crds` is False)
    whose application, Gateway and Flux Helm CRDs are served."""
    entries = [CATALOGS.applications.require(a) for a in applications]
    modules = {m for e in entries for m in e.required_modules} | set(CATALOGS.applications.common_modules)
    for name in list(modules):
        modules |= set(CATALOGS.modules.require(name).depends_on)
    objects = [
        appliance(source={"kind": "GitRepository", "name": "magicstick-public", "namespace": "flux-system"}),
        *ready_modules(*sorted(modules)),
    ]
    if crds:
        served = {o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"}
        wanted = {c for e in entries for c in e.required_crds} | {*GATEWAY_CRDS, HELM_RELEASE_CRD}
        objects += [crd(n) for n in sorted(wanted - served)]
    return objects


def objects_of(result: Plan, name: str) -> dict[str, list[DesiredObject]]:
    found: dict[str, list[DesiredObject]] = {}
    for outcome in result.instances.outcomes:
        if outcome.instance == name:
            for obj in outcome.objects:
                found.setdefault(obj.kind, []).append(obj)
    return found


def helm_release_of(result: Plan, name: str) -> DesiredObject:
    return objects_of(result, name)["HelmRelease"][0]


def backend_services(result: Plan, name: str) -> set[tuple[str, str]]:
    """(namespace, name) of every Service the instance's routes lead to."""
    routes = objects_of(result, name).get("HTTPRoute", ())
    return {
        (ref["namespace"], ref["name"])
        for route in routes
        for rule in route.body["spec"]["rules"]
        for ref in rule.get("backendRefs", ())
    }


def converged(*objects: JsonObject, rounds: int = 3) -> list[JsonObject]:
    """`objects` plus what the controllers report once the program's objects were applied:
    every planned HelmRelease Ready, SecurityPolicy and HTTPRoute accepted for its generation, the
    access guard rolled out,
    replayed until the plan's objects stop changing (the guard opens the routes in between)."""
    world = {_identity(o): o for o in objects}
    for _ in range(rounds):
        result = plan_of(*world.values())
        world |= {_identity(o): o for o in (_as_reported(p) for p in result.instances.objects)}
    return list(world.values())


def _identity(obj: JsonObject) -> tuple[str, str, str, str]:
    metadata = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], metadata.get("namespace") or "", metadata["name"])


def _as_reported(planned: DesiredObject) -> JsonObject:
    if planned.kind == "HelmRelease":
        return observed_release(planned)
    if planned.kind == "SecurityPolicy":
        return accepted_policy(planned)
    if planned.kind == "HTTPRoute":
        return accepted_route(planned)
    if planned.kind == "Deployment":
        return running_guard()
    return as_stored(planned)


def instance_status(result: Plan, name: str) -> JsonObject:
    return status_of(result, "AppInstance", name)
