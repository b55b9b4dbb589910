"""The access guard opens on a real API server, and the converged loop writes nothing.

The demo's OpenClaw and Paperclip AppInstances are loaded into the test kube-apiserver; then,
each round: observe (the live reader) -> plan -> apply by server-side apply as the Pulumi
engine would (`engine_apply`: no force unless the object asks for it) -> write the planned
statuses -> play the controllers for the current generation only (Flux's Kustomizations and
HelmReleases Ready, Envoy Gateway's SecurityPolicy ancestors and HTTPRoute parents Accepted,
the access guard's Deployment rolled out).

The server stores what the program applied plus the upstream CRDs' defaults, so the observed
SecurityPolicy never equals the planned one: the guard opens because the policy carries the
planned spec hash and its current generation is accepted.

System namespace `ai-system`: the gateway objects live in the gateway namespace, and the
reader reads them in the system namespace, so the two are the same here, as they are by
default. The operators' CRDs (OpenClaw, Paperclip, agent sandbox) are installed up front,
standing in for what Flux installs with their modules.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from api.crdgen import load_committed_crds
from catalogs import load_catalogs
from planning.access_settings import AccessSettings
from planning.frozen import thaw
from planning.objects import DesiredObject
from planning.plan import Plan, plan
from planning.readiness import SPEC_HASH_ANNOTATION
from planning.settings import PlanSettings
from providers.kinds import APP_INSTANCE, HELM_RELEASE, HTTP_ROUTE, SECURITY_POLICY
from providers.kube import KubeAccess, KubeClient
from providers.live_reader import read_snapshot
from tests.cluster.apiserver import ClusterInfo, install_crds
from tests.live.world import (
    accept_gateway_objects,
    engine_apply,
    load,
    mark_helm_releases_ready,
    mark_kustomizations_ready,
    roll_out_deployments,
    write_planned_statuses,
)

SYSTEM = "ai-system"
SETTINGS = PlanSettings(
    system_namespace=SYSTEM, access=AccessSettings(guard_image="registry.example.com/magicstick/access-guard:0.1.0")
)
"""The demo's settings with an access guard image an administrator has built and set."""
INSTANCES = ("openclaw-default", "paperclip-default")
START = datetime(2026, 1, 1, tzinfo=UTC)
DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo" / "snapshot.yaml"
OPERATOR_CRDS = (
    ("openclaw.rocks", "OpenClawInstance", "openclawinstances"),
    ("paperclip.inc", "Instance", "instances"),
    ("agents.x-k8s.io", "Sandbox", "sandboxes"),
)


def _operator_crd(group: str, kind: str, plural: str) -> dict:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": schema}],
        },
    }


def _demo_scenario() -> list[dict]:
    """The demo's Appliance and AppInstances, nothing else."""
    documents = yaml.safe_load_all(DEMO.read_text())
    return [d for d in documents if d and d["kind"] in ("Appliance", "AppInstance")]


def _observe_and_plan(access: KubeAccess, now: datetime) -> Plan:
    snapshot = read_snapshot(access, system_namespace=SYSTEM)
    return plan(snapshot=snapshot, catalogs=load_catalogs(), now=now, settings=SETTINGS, own_crds=load_committed_crds())


def _play_controllers(client: KubeClient) -> int:
    played = (
        mark_kustomizations_ready(client)
        + mark_helm_releases_ready(client, SYSTEM)
        + accept_gateway_objects(client, SYSTEM)
    )
    return played + roll_out_deployments(client, SYSTEM)


def _converge(client: KubeClient, access: KubeAccess) -> tuple[Plan, dict[str, DesiredObject], int]:
    """Run rounds until a round plans what the previous one did and nothing is written or marked."""
    applied: dict[str, DesiredObject] = {}
    previous: Plan | None = None
    for rounds in range(1, 16):
        current = _observe_and_plan(access, START + timedelta(minutes=rounds))
        applied = engine_apply(client, current, applied)
        written = write_planned_statuses(client, current)
        marked = _play_controllers(client)
        unchanged = (
            previous is not None and current.objects == previous.objects and current.statuses == previous.statuses
        )
        if unchanged and written == 0 and marked == 0:
            return current, applied, rounds
        previous = current
    raise AssertionError("the loop did not converge in 15 rounds")


def test_every_instance_reaches_its_access_guard_on_a_real_api_server_and_the_converged_run_writes_nothing(
    clean_shared_namespaces, cluster: ClusterInfo, admin: KubeClient, admin_access: KubeAccess, tmp_path: Path
):
    (tmp_path / "operators.yaml").write_text(yaml.safe_dump_all([_operator_crd(*crd) for crd in OPERATOR_CRDS]))
    install_crds(cluster, [tmp_path / "operators.yaml"])
    load(admin, _demo_scenario())

    converged, applied, rounds = _converge(admin, admin_access)

    for name in INSTANCES:
        status = admin.get(APP_INSTANCE, name, SYSTEM)["status"]
        assert (status["phase"], status["accessGuardReady"]) == ("Ready", True), name
        routes = [o for o in converged.objects if o.kind == "HTTPRoute" and o.name.startswith(f"{name}-")]
        assert routes and all(rule.get("backendRefs") for r in routes for rule in r.body["spec"]["rules"]), name
        stored_routes = [admin.get(HTTP_ROUTE, r.name, SYSTEM) for r in routes]
        assert all(rule.get("backendRefs") for r in stored_routes for rule in r["spec"]["rules"]), name
        services = {
            (ref["namespace"], ref["name"])
            for r in stored_routes
            for rule in r["spec"]["rules"]
            for ref in rule["backendRefs"]
        }
        assert services == {("ai", name)}, (
            "each instance reaches the Service its own release renders, never a shared one"
        )
        assert status["url"].startswith("https://"), name

    (policy,) = [o for o in converged.objects if o.kind == "SecurityPolicy" and o.name.startswith("openclaw-default")]
    stored = admin.get(SECURITY_POLICY, policy.name, SYSTEM)
    planned_spec = thaw(policy.body["spec"])
    assert stored["spec"] != planned_spec, "the server adds the CRD's defaults to what was applied"
    assert stored["spec"]["oidc"]["refreshToken"] is True and "refreshToken" not in planned_spec["oidc"]
    assert (
        stored["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
        == policy.body["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
    )

    final = _observe_and_plan(admin_access, START + timedelta(days=1))
    assert final.objects == converged.objects
    assert final.statuses == converged.statuses
    engine_apply(admin, final, applied)
    assert write_planned_statuses(admin, final) == 0
    assert _play_controllers(admin) == 0
    assert 2 < rounds < 16


def test_an_instance_is_reconciling_while_flux_has_not_observed_the_new_generation_of_its_release(
    clean_shared_namespaces, cluster: ClusterInfo, admin: KubeClient, admin_access: KubeAccess, tmp_path: Path
):
    (tmp_path / "operators.yaml").write_text(yaml.safe_dump_all([_operator_crd(*crd) for crd in OPERATOR_CRDS]))
    install_crds(cluster, [tmp_path / "operators.yaml"])
    scenario = _demo_scenario()
    load(admin, scenario)
    _, applied, _ = _converge(admin, admin_access)

    (openclaw,) = [o for o in scenario if o["metadata"]["name"] == "openclaw-default"]
    load(
        admin,
        [{**openclaw, "spec": {**openclaw["spec"], "values": {**openclaw["spec"]["values"], "model": "qwen3635b"}}}],
    )
    for minute in (100, 101):
        edited = _observe_and_plan(admin_access, START + timedelta(minutes=minute))
        applied = engine_apply(admin, edited, applied)
        write_planned_statuses(admin, edited)

    release = admin.get(HELM_RELEASE, "openclaw-default", SYSTEM)
    assert (release["metadata"]["generation"], release["status"]["observedGeneration"]) == (2, 1)
    status = admin.get(APP_INSTANCE, "openclaw-default", SYSTEM)["status"]
    assert (status["phase"], status["reason"], status["conditions"][0]["status"]) == (
        "Reconciling",
        "Reconciling",
        "False",
    )
    assert "generation 2" in status["message"]

    _converge(admin, admin_access)
    assert admin.get(APP_INSTANCE, "openclaw-default", SYSTEM)["status"]["phase"] == "Ready"


def test_the_later_of_two_instances_asking_for_one_hostname_is_in_conflict_on_a_real_api_server(
    clean_shared_namespaces, cluster: ClusterInfo, admin: KubeClient, admin_access: KubeAccess, tmp_path: Path
):
    (tmp_path / "operators.yaml").write_text(yaml.safe_dump_all([_operator_crd(*crd) for crd in OPERATOR_CRDS]))
    install_crds(cluster, [tmp_path / "operators.yaml"])
    scenario = _demo_scenario()
    load(admin, scenario)
    (openclaw,) = [o for o in scenario if o["metadata"]["name"] == "openclaw-default"]
    # Created after it, and after it by name too: both rules (creation time, then name) agree
    # whether or not the server stamps the two within one second.
    load(admin, [{**openclaw, "metadata": {**openclaw["metadata"], "name": "openclaw-second"}}])

    snapshot = read_snapshot(admin_access, system_namespace=SYSTEM)
    assert all(o.meta.creation_timestamp for o in snapshot.of_kind("AppInstance", SYSTEM)), (
        "the reader keeps creationTimestamp"
    )
    converged, _, _ = _converge(admin, admin_access)

    second = admin.get(APP_INSTANCE, "openclaw-second", SYSTEM)["status"]
    assert (second["phase"], second["reason"]) == ("Conflict", "HostnameConflict")
    assert second["conflictsWith"] == {"kind": "AppInstance", "namespace": SYSTEM, "name": "openclaw-default"}
    assert admin.get(APP_INSTANCE, "openclaw-default", SYSTEM)["status"]["phase"] == "Ready"
    assert not [o for o in converged.objects if o.name.startswith("openclaw-second")]
