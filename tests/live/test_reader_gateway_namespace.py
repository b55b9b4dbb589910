"""The gateway namespace in the live reader: routes, policies and the access guard's Deployment
are read where the Gateway lives, which may differ from the system namespace."""

from __future__ import annotations

from planning.frozen import thaw
from planning.instances.guard import guard_objects
from planning.settings import PlanSettings
from providers.kinds import DEPLOYMENT
from providers.kube import KubeClient
from providers.live_reader import read_live_objects, reads
from tests.live.conftest import admin, admin_access  # noqa: F401 - fixtures used by name
from tests.live.world import LOADER

SYSTEM = "ai-system"


def guard_deployment(namespace: str) -> dict:
    access = PlanSettings().access
    planned = next(o for o in guard_objects({}, access, field_manager=LOADER) if o.kind == "Deployment")
    body = thaw(planned.body)
    body["metadata"]["namespace"] = namespace
    return body


def test_routes_policies_and_the_guard_are_read_in_the_gateway_namespace_only():
    by_namespace = {(read.kind.kind, read.namespace) for read in reads(SYSTEM, (), "edge")}
    assert {("HTTPRoute", "edge"), ("SecurityPolicy", "edge"), ("Deployment", "edge")} <= by_namespace
    assert not {("HTTPRoute", SYSTEM), ("SecurityPolicy", SYSTEM)} & by_namespace


def test_the_guard_deployment_in_another_gateway_namespace_is_read_and_other_deployments_are_not(
    namespace, admin: KubeClient
):
    admin.apply(DEPLOYMENT, guard_deployment(namespace), field_manager=LOADER)
    other = guard_deployment(namespace)
    other["metadata"] = {"name": "unrelated", "namespace": namespace, "labels": {"app": "unrelated"}}
    other["spec"]["selector"] = {"matchLabels": {"app": "unrelated"}}
    other["spec"]["template"]["metadata"]["labels"] = {"app": "unrelated"}
    admin.apply(DEPLOYMENT, other, field_manager=LOADER)

    objects = read_live_objects(admin, SYSTEM, namespace).objects

    found = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "Deployment"]
    assert (namespace, "magicstick-access-guard") in found
    assert (namespace, "unrelated") not in found
