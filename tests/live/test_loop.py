"""The reconciliation loop without the Pulumi CLI, against the real apiserver.

observe (the live reader) -> plan -> apply the planned objects by server-side apply (a
stand-in for the Pulumi engine, tests/live/world.py: without force unless the object asks
for it, as pulumi-kubernetes does) -> write the planned statuses -> play Flux ->
again, until nothing changes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.crdgen import load_committed_crds
from catalogs import load_catalogs
from planning.objects import DesiredObject
from planning.plan import Plan, plan
from planning.settings import PlanSettings
from providers.kinds import KUBEAI_MODEL, KUSTOMIZATION, MODULE_ACTIVATION, POD
from providers.kube import KubeAccess, ResourceKind
from providers.live_reader import read_snapshot
from providers.profile_store import ProfileStoreRef, read_profile
from tests.live.world import (
    delete_all,
    engine_apply,
    ensure_namespace,
    load,
    mark_kustomizations_ready,
    play_kubeai,
    publish_model_catalog,
    write_planned_statuses,
)
from tests.planning.builders import activation, appliance, cpu_model

START = datetime(2026, 1, 1, tzinfo=UTC)


def _scenario(namespace: str) -> list[dict]:
    objects = [
        appliance({"basis": True, "dashboard": True, "litellm": True, "model-catalog": True}),
        activation("kubeai"),
        activation("gpu", enabled=False),
        cpu_model("qwen2505bcpu"),
    ]
    return [dict(o, metadata={**o["metadata"], "namespace": namespace}) for o in objects]


def _observe_and_plan(access: KubeAccess, namespace: str, now: datetime) -> Plan:
    snapshot = read_snapshot(access, system_namespace=namespace)
    return plan(
        snapshot=snapshot,
        catalogs=load_catalogs(),
        now=now,
        settings=PlanSettings(system_namespace=namespace),
        own_crds=load_committed_crds(),
    )


def test_the_loop_converges_and_the_converged_run_writes_nothing(
    clean_shared_namespaces, namespace, admin, admin_access
):
    ensure_namespace(admin, "ai")
    delete_all(admin, [KUBEAI_MODEL, POD], "ai")
    load(admin, _scenario(namespace))
    applied: dict[str, DesiredObject] = {}
    previous: Plan | None = None
    rounds = 0
    for rounds in range(1, 12):
        now = START + timedelta(minutes=rounds)
        current = _observe_and_plan(admin_access, namespace, now)
        applied = engine_apply(admin, current, applied)
        written = write_planned_statuses(admin, current)
        marked = mark_kustomizations_ready(admin) + play_kubeai(admin, "ai")
        publish_model_catalog(admin, namespace, [m.name for m in current.models.models])
        unchanged = (
            previous is not None and current.objects == previous.objects and current.statuses == previous.statuses
        )
        if unchanged and written == 0 and marked == 0:
            break
        previous = current
    else:
        raise AssertionError("the loop did not converge in 11 rounds")

    final = _observe_and_plan(admin_access, namespace, START + timedelta(days=1))
    assert final.objects == previous.objects
    assert final.statuses == previous.statuses
    assert write_planned_statuses(admin, final) == 0

    appliance_status = admin.get(_APPLIANCE, "local", namespace)["status"]
    assert appliance_status["phase"] == "Ready"
    assert appliance_status["conditions"][0]["status"] == "True"
    model = admin.get(_MODEL, "qwen2505bcpu", namespace)["status"]
    assert model["phase"] == "Ready"
    assert model["effectiveKvCacheType"] == "auto"
    profile = model["resolvedResourceProfile"].removesuffix(":1")
    assert read_profile(admin, ProfileStoreRef(), profile)["requests"]["memory"] == "4096Mi"
    kubeai_model = admin.get(KUBEAI_MODEL, "qwen2505bcpu", "ai")
    assert kubeai_model["spec"]["resourceProfile"] == model["resolvedResourceProfile"]
    seeded = admin.get(MODULE_ACTIVATION, "basis", namespace)
    assert seeded["metadata"]["labels"]["appliance.magicstick.dev/seeded"] == "true"
    assert admin.get_or_none(KUSTOMIZATION, "platform-gpu", "flux-system") is None
    assert 2 < rounds < 12


_APPLIANCE = ResourceKind("appliance.magicstick.dev", "v1alpha1", "Appliance", "appliances", True)
_MODEL = ResourceKind("appliance.magicstick.dev", "v1alpha1", "ModelActivation", "modelactivations", True)
