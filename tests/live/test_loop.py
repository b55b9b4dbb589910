"""The reconciliation loop without the Pulumi CLI, against the real apiserver.

observe (the live reader) -> plan -> apply the planned objects by server-side apply (a
stand-in for the Pulumi engine, here only) -> write the planned statuses -> play Flux ->
again, until nothing changes.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from api.crdgen import load_committed_crds
from catalogs import load_catalogs
from planning.frozen import thaw
from planning.objects import DesiredObject
from planning.plan import Plan, plan
from planning.settings import PlanSettings
from providers.kinds import CRD, KUBEAI_MODEL, KUSTOMIZATION, MODULE_ACTIVATION, POD
from providers.kube import KubeAccess, KubeClient, NotFound, ResourceKind
from providers.live_reader import read_snapshot
from providers.status_writer import StatusTarget, write_status
from providers.profile_store import ProfileStoreRef, put_profile, read_profile
from tests.live.world import (
    delete_all,
    ensure_namespace,
    kind_of,
    load,
    mark_kustomizations_ready,
    play_kubeai,
    publish_model_catalog,
    without_cel_rules,
)
from tests.planning.builders import activation, appliance, cpu_model

ENGINE = "magicstick"
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


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


def _engine_apply(client: KubeClient, desired: Plan, applied: dict[str, DesiredObject]) -> dict[str, DesiredObject]:
    """What the engine would do: apply declared objects, delete those no longer declared."""
    declared = {obj.identity: obj for obj in desired.objects}
    for identity, obj in declared.items():
        kind = kind_of(obj.body)
        if obj.ignore_spec_changes and client.get_or_none(kind, obj.name, obj.namespace) is not None:
            continue
        body = thaw(obj.body)
        client.apply(kind, without_cel_rules(body) if kind is CRD else body, field_manager=ENGINE)
    for identity, obj in applied.items():
        if identity not in declared and not obj.retain_on_delete:
            try:
                client.delete(kind_of(obj.body), obj.name, obj.namespace)
            except NotFound:
                pass
    for profile in desired.models.cpu_profiles:
        put_profile(client, ProfileStoreRef(), profile.name, thaw(profile.body))
    return declared


def _write_statuses(client: KubeClient, desired: Plan, access: KubeAccess) -> int:
    written = 0
    for update in desired.statuses:
        target = StatusTarget(
            api_version=update.api_version,
            kind=update.kind,
            namespace=update.namespace,
            name=update.name,
            status=thaw(update.status),
            access=access,
        )
        written += write_status(client, target)
    return written


def test_the_loop_converges_and_the_converged_run_writes_nothing(clean_shared_namespaces, namespace, admin, admin_access):
    ensure_namespace(admin, "ai")
    delete_all(admin, [KUBEAI_MODEL, POD], "ai")
    load(admin, _scenario(namespace))
    applied: dict[str, DesiredObject] = {}
    previous: Plan | None = None
    rounds = 0
    for rounds in range(1, 12):
        now = START + timedelta(minutes=rounds)
        current = _observe_and_plan(admin_access, namespace, now)
        applied = _engine_apply(admin, current, applied)
        written = _write_statuses(admin, current, admin_access)
        marked = mark_kustomizations_ready(admin) + play_kubeai(admin, "ai")
        publish_model_catalog(admin, namespace, [m.name for m in current.models.models])
        unchanged = previous is not None and current.objects == previous.objects and current.statuses == previous.statuses
        if unchanged and written == 0 and marked == 0:
            break
        previous = current
    else:
        raise AssertionError("the loop did not converge in 11 rounds")

    final = _observe_and_plan(admin_access, namespace, START + timedelta(days=1))
    assert final.objects == previous.objects
    assert final.statuses == previous.statuses
    assert _write_statuses(admin, final, admin_access) == 0

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
