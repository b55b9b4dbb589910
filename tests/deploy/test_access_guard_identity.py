"""The access guard's objects, as planned, applied as the deployed ServiceAccount (dry run):
what the program declares beside the Gateway must be allowed, and accepted by the server."""

from __future__ import annotations

import pytest

from planning.frozen import thaw
from planning.instances.guard import envoy_proxy, guard_objects
from planning.settings import FIELD_MANAGER, PlanSettings
from providers.kinds import CONFIG_MAP, DEPLOYMENT, ENVOY_PROXY, NETWORK_POLICY, POD_DISRUPTION_BUDGET, SERVICE
from providers.kube import Forbidden, KubeClient
from tests.deploy.manifests import SYSTEM_NAMESPACE

ACCESS = PlanSettings().access
GRANTS = {"ai-system.openclaw-default.json": '{"authentication":"sso"}'}
KINDS = {
    "ConfigMap": CONFIG_MAP,
    "Service": SERVICE,
    "Deployment": DEPLOYMENT,
    "EnvoyProxy": ENVOY_PROXY,
    "PodDisruptionBudget": POD_DISRUPTION_BUDGET,
    "NetworkPolicy": NETWORK_POLICY,
}


def planned() -> list[dict]:
    objects = (
        *guard_objects(GRANTS, ACCESS, field_manager=FIELD_MANAGER),
        envoy_proxy(ACCESS, field_manager=FIELD_MANAGER),
    )
    return [thaw(o.body) for o in objects]


@pytest.mark.parametrize("body", planned(), ids=lambda body: body["kind"])
def test_the_program_may_apply_each_access_guard_object_beside_the_gateway(body, program: KubeClient):
    kind = KINDS[body["kind"]]
    answered = program.apply(kind, body, field_manager=FIELD_MANAGER, dry_run=True)
    assert (answered["metadata"]["namespace"], answered["metadata"]["name"]) == (
        SYSTEM_NAMESPACE,
        body["metadata"]["name"],
    )


def test_a_config_map_other_than_the_grants_cannot_be_patched_by_the_program(program: KubeClient):
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "someone-elses", "namespace": SYSTEM_NAMESPACE},
        "data": {},
    }
    with pytest.raises(Forbidden):
        program.apply(CONFIG_MAP, body, field_manager=FIELD_MANAGER, dry_run=True)
