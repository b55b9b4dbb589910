"""The direct runtimes under the deployed RBAC: what the manifests grant, and the provider run as
the program's ServiceAccount against the real API server.

The realtime runtime's stage ConfigMap is written under its own Role (ai/magicstick-realtime-
runtime), not under the program's ClusterRole or its `ai` Role; a write the roles do not cover is
the runtime's RealtimePermissionDenied problem, never an exception.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Final

import pytest

from planning.models.direct import DirectRuntimeKind
from providers.kinds import CONFIG_MAP, DEPLOYMENT, SERVICE
from providers.kube import KubeAccess, KubeClient, NotFound
from providers.status_writer import problems_of, status_with_problems
from tests.deploy.manifests import SERVICE_ACCOUNT_USER, SYSTEM_NAMESPACE, Permission, documents, granted
from tests.providers.direct_runtime_objects import identity, inputs, provider_for, runtime_objects

WORKLOADS: Final = "ai"
REALTIME_ROLE: Final = "magicstick-realtime-runtime"
NOW: Final = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
KINDS: Final = {"ConfigMap": CONFIG_MAP, "Service": SERVICE, "Deployment": DEPLOYMENT}


def without_realtime_role(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["metadata"]["name"] != REALTIME_ROLE]


@pytest.fixture(scope="module")
def rbac() -> list[dict[str, Any]]:
    return documents("rbac.yaml")


class TestTheManifests:
    @pytest.mark.parametrize("verb", ["get", "create", "patch", "delete"])
    def test_the_realtime_runtimes_config_maps_in_ai_are_granted_by_its_own_role_and_by_no_other(self, rbac, verb):
        permission = Permission(verb, "", "configmaps", WORKLOADS)

        assert permission in granted(rbac)
        assert permission not in granted(without_realtime_role(rbac))

    def test_listing_config_maps_in_ai_is_the_programs_own_observation_of_kubeais_configuration(self, rbac):
        assert Permission("list", "", "configmaps", WORKLOADS) in granted(without_realtime_role(rbac))

    @pytest.mark.parametrize(
        "permission",
        [
            *(
                Permission(verb, "apps", "deployments", WORKLOADS)
                for verb in ("get", "list", "watch", "create", "patch", "delete")
            ),
            *(Permission(verb, "", "services", WORKLOADS) for verb in ("get", "create", "patch", "delete")),
        ],
        ids=str,
    )
    def test_the_direct_runtimes_deployments_and_services_in_ai_are_granted_by_the_programs_ai_role(
        self, rbac, permission
    ):
        assert permission in granted(without_realtime_role(rbac))

    def test_deployments_and_services_are_granted_only_in_ai_and_beside_the_gateway_for_the_access_guard(self, rbac):
        elsewhere = {
            p.namespace for p in granted(rbac) if p.resource in {"deployments", "services"} and p.namespace != WORKLOADS
        }

        assert elsewhere == {SYSTEM_NAMESPACE}


@pytest.fixture
def runtime_name(request: pytest.FixtureRequest, admin: KubeClient) -> Iterator[str]:
    """A runtime name of this test in `ai`; whatever the test left there is deleted afterwards."""
    name = f"rt-{hashlib.sha256(request.node.name.encode()).hexdigest()[:10]}"
    yield name
    for body in runtime_objects(WORKLOADS, name):
        with contextlib.suppress(NotFound):
            admin.delete(KINDS[body["kind"]], body["metadata"]["name"], WORKLOADS)


def stored(client: KubeClient, body: dict[str, Any]) -> dict[str, Any] | None:
    return client.get_or_none(KINDS[body["kind"]], body["metadata"]["name"], body["metadata"]["namespace"])


class TestAsTheServiceAccount:
    @pytest.mark.parametrize("kind", list(DirectRuntimeKind), ids=str)
    def test_the_runtimes_writes_in_ai_succeed(
        self, program_access: KubeAccess, admin: KubeClient, runtime_name: str, kind
    ):
        objects = runtime_objects(WORKLOADS, runtime_name, kind)
        provider = provider_for(program_access)

        result = provider.create(provider.check({}, inputs(WORKLOADS, objects, kind)).inputs)

        assert result.outs["problem"] == {}
        assert result.outs["applied"] == [identity(body) for body in objects]
        assert all(stored(admin, body) is not None for body in objects)

    def test_the_runtime_may_drop_its_config_map_and_delete_everything(
        self, program_access: KubeAccess, admin: KubeClient, runtime_name: str
    ):
        objects = runtime_objects(WORKLOADS, runtime_name)
        provider = provider_for(program_access)
        created = provider.create(provider.check({}, inputs(WORKLOADS, objects)).inputs)

        updated = provider.update(
            created.id, created.outs, provider.check(created.outs, inputs(WORKLOADS, objects[1:])).inputs
        )
        assert (updated.outs["problem"], stored(admin, objects[0])) == ({}, None)
        provider.delete(created.id, updated.outs)

        assert [stored(admin, body) for body in objects] == [None, None, None]

    def test_a_config_map_write_outside_the_role_is_a_temporary_permission_denial_not_an_exception(
        self, program_access: KubeAccess, admin: KubeClient, namespace: str
    ):
        objects = runtime_objects(namespace, "omni")
        provider = provider_for(program_access)

        result = provider.create(provider.check({}, inputs(namespace, objects)).inputs)

        problem = result.outs["problem"]
        assert (problem["reason"], problem["persistence"]) == ("RealtimePermissionDenied", "Temporary")
        assert problem["message"].startswith(f"apply ConfigMap/{namespace}/omni-stages: 403 Forbidden: ")
        assert SERVICE_ACCOUNT_USER in problem["message"]
        assert result.outs["applied"] == []
        assert all(stored(admin, body) is None for body in objects)
        assert (
            provider.diff(result.id, result.outs, provider.check({}, inputs(namespace, objects)).inputs).changes is True
        )

    def test_the_denied_write_degrades_the_activation(self, program_access: KubeAccess, namespace: str):
        provider = provider_for(program_access)
        outputs = provider.create(provider.check({}, inputs(namespace, runtime_objects(namespace, "omni"))).inputs).outs
        planned = {
            "phase": "Ready",
            "reason": "Ready",
            "message": "The realtime runtime is ready.",
            "observedGeneration": 1,
        }

        status = status_with_problems(
            planned, problems_of({f"realtime/{namespace}/omni": outputs["problem"]}), previous={}, now=NOW
        )

        assert (status["phase"], status["reason"]) == ("Degraded", "RealtimePermissionDenied")
