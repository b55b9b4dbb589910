"""A namespace the program may not read degrades the objects that target it, and nothing else.

Issue #11, point 4. Run as the ServiceAccount deploy/ defines, whose Roles cover the target
namespace `ai` only: a ModelActivation targeting `team-x` makes the reader LIST Models, Pods and
ReferenceGrants there, and the server refuses. The namespaces every run needs (the system
namespace, flux-system, identity-system, `ai`) still fail closed (invariant 1).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from typing import Any, Final

import pytest

from api.meta import API_VERSION
from planning.frozen import thaw
from planning.plan import Plan, plan
from planning.snapshot import UNREADABLE_ANNOTATION, Snapshot, UnreadableNamespace
from planning.unreadable import NAMESPACE_UNREADABLE
from providers.kinds import MODEL_ACTIVATION, POD
from providers.kube import KubeAccess, KubeClient, NotFound, ResourceKind
from providers.live_reader import SnapshotReadError, read_snapshot
from providers.snapshot_capture import capture
from tests.deploy.manifests import SERVICE_ACCOUNT, SERVICE_ACCOUNT_USER, SYSTEM_NAMESPACE, documents
from tests.deploy.program_identity import FIELD_MANAGER as LOADER
from tests.deploy.program_identity import apply_all, ensure_namespaces
from tests.live.world import SERVICE_ACCOUNT as SERVICE_ACCOUNT_KIND
from tests.live.world import wait_until_rbac_says
from tests.planning.builders import CATALOGS, NOW, runtime, status_of, with_flux
from tests.planning.models.world import local_model, platform

TARGET: Final = "team-x"
"""A namespace the deployed RBAC grants nothing in."""

ROLE: Final = ResourceKind(
    group="rbac.authorization.k8s.io", version="v1", kind="Role", plural="roles", namespaced=True
)
ROLE_BINDING: Final = ResourceKind(
    group="rbac.authorization.k8s.io", version="v1", kind="RoleBinding", plural="rolebindings", namespaced=True
)
PODS_ONLY: Final = "magicstick-test-pods-only"


def model_activation(name: str, target: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelActivation",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "type": "local",
            "enabled": True,
            "targetNamespace": target,
            "local": {"preset": "qwen2505bcpu", "computeTarget": "cpu", "engine": "OLlama"},
        },
    }


@pytest.fixture
def activation_in_team_x(request: pytest.FixtureRequest, admin: KubeClient) -> Iterator[str]:
    """A ModelActivation in ai-system targeting team-x (which exists); deleted afterwards."""
    ensure_namespaces(admin, [TARGET])
    name = f"unreadable-{hashlib.sha256(request.node.name.encode()).hexdigest()[:10]}"
    admin.apply(MODEL_ACTIVATION, model_activation(name, TARGET), field_manager=LOADER)
    yield name
    with contextlib.suppress(NotFound):
        admin.delete(MODEL_ACTIVATION, name, SYSTEM_NAMESPACE)


@pytest.fixture
def pods_readable_in_team_x(admin: KubeClient, program_identity: object) -> Iterator[None]:
    """A Role in team-x letting the program list Pods there, and nothing else; removed afterwards."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": PODS_ONLY, "namespace": TARGET},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": PODS_ONLY, "namespace": TARGET},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": PODS_ONLY},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": SYSTEM_NAMESPACE}],
    }
    admin.apply(ROLE, role, field_manager=LOADER)
    admin.apply(ROLE_BINDING, binding, field_manager=LOADER)
    wait_until_rbac_says(
        admin, user=SERVICE_ACCOUNT_USER, verb="list", group="", resource="pods", namespace=TARGET, allowed=True
    )
    yield
    admin.delete(ROLE_BINDING, PODS_ONLY, TARGET)
    admin.delete(ROLE, PODS_ONLY, TARGET)


def a_model_pod(admin: KubeClient, name: str) -> None:
    admin.apply(
        SERVICE_ACCOUNT_KIND,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": TARGET}},
        field_manager=LOADER,
    )
    container = {"name": "server", "image": "ollama/ollama"}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": TARGET, "labels": {"model": "qwen"}},
        "spec": {"automountServiceAccountToken": False, "containers": [container]},
    }
    admin.apply(POD, body, field_manager=LOADER)


def test_a_model_activation_targeting_a_namespace_the_program_may_not_read_is_read_with_that_namespace_recorded(
    program_access: KubeAccess, activation_in_team_x: str
):
    snapshot = read_snapshot(program_access, system_namespace=SYSTEM_NAMESPACE)

    assert snapshot.runtime_object("ModelActivation", SYSTEM_NAMESPACE, activation_in_team_x) is not None
    assert [(u.namespace, u.kind, u.resource, u.verb) for u in snapshot.unreadable] == [
        (TARGET, "Model", "models.kubeai.org", "list")
    ]
    (refused,) = snapshot.unreadable
    assert refused.message.startswith("403 Forbidden: ")
    assert SERVICE_ACCOUNT_USER in refused.message
    assert refused.permission == "list models.kubeai.org in namespace team-x"


def test_a_captured_snapshot_file_records_the_unreadable_namespace(
    program_access: KubeAccess, activation_in_team_x: str
):
    document = capture(program_access, system_namespace=SYSTEM_NAMESPACE)

    (recorded,) = json.loads(document["metadata"]["annotations"][UNREADABLE_ANNOTATION])
    assert (
        UnreadableNamespace.from_wire(recorded, "capture")
        == read_snapshot(program_access, system_namespace=SYSTEM_NAMESPACE).unreadable[0]
    )
    assert recorded["namespace"] == TARGET


def test_nothing_is_read_in_an_unreadable_namespace_not_even_a_kind_the_program_may_list_there(
    program_access: KubeAccess, admin: KubeClient, activation_in_team_x: str, pods_readable_in_team_x: None
):
    a_model_pod(admin, "qwen-0")
    try:
        snapshot = read_snapshot(program_access, system_namespace=SYSTEM_NAMESPACE)
    finally:
        admin.delete(POD, "qwen-0", TARGET)

    assert [u.namespace for u in snapshot.unreadable] == [TARGET]
    assert [p.meta.name for p in snapshot.pods if p.meta.namespace == TARGET] == []


def test_a_refused_read_in_a_namespace_every_run_needs_still_stops_the_read(
    program_access: KubeAccess, admin: KubeClient, activation_in_team_x: str
):
    admin.delete(ROLE_BINDING, "magicstick-program", "ai")
    try:
        wait_until_rbac_says(
            admin,
            user=SERVICE_ACCOUNT_USER,
            verb="list",
            group="resource.k8s.io",
            resource="resourceclaims",
            namespace="ai",
            allowed=False,
        )
        # The first read in `ai`: the shared GPU claim, as the server serves resource.k8s.io/v1.
        with pytest.raises(
            SnapshotReadError,
            match=r"reading ResourceClaim \(resource.k8s.io/v1\) in namespace ai failed: 403 Forbidden",
        ):
            read_snapshot(program_access, system_namespace=SYSTEM_NAMESPACE)
    finally:
        apply_all(admin, [o for o in documents("rbac.yaml") if o["kind"] == "RoleBinding"])


# --- the plan (pure): only what targets the unreadable namespace degrades ----------------------

REFUSED: Final = UnreadableNamespace(
    namespace=TARGET,
    api_version="kubeai.org/v1",
    kind="Model",
    resource="models.kubeai.org",
    verb="list",
    message=(
        '403 Forbidden: models.kubeai.org is forbidden: User "system:serviceaccount:ai-system:magicstick-program" '
        'cannot list resource "models" in API group "kubeai.org" in the namespace "team-x"'
    ),
)
WIRING: Final = "planning wires planning/unreadable.py into planning/models/plan.py (model_hold)"


def in_team_x(name: str, *, status: dict[str, Any] | None = None) -> dict[str, Any]:
    spec = {
        "type": "local",
        "targetNamespace": TARGET,
        "local": {"preset": "qwen2505bcpu", "computeTarget": "cpu", "engine": "VLLM"},
    }
    return runtime("ModelActivation", name, spec, status=status)


def plan_with_team_x_unreadable(*objects: dict[str, Any]) -> Plan:
    snapshot = Snapshot.from_objects(with_flux([*platform(), *objects]), unreadable=[REFUSED])
    return plan(snapshot=snapshot, catalogs=CATALOGS, now=NOW)


def declared_in(result: Plan, namespace: str) -> list[str]:
    return sorted(f"{o.kind}/{o.name}" for o in result.objects if o.namespace == namespace)


def test_the_plan_degrades_only_the_activation_whose_namespace_cannot_be_read_and_still_declares_the_others():
    result = plan_with_team_x_unreadable(local_model("in-ai"), in_team_x("in-team-x"))

    refused = status_of(result, "ModelActivation", "in-team-x")
    assert (refused["phase"], refused["reason"]) == ("Degraded", NAMESPACE_UNREADABLE)
    assert "Namespace team-x cannot be read" in refused["message"]
    assert "list models.kubeai.org in namespace team-x" in refused["message"]
    assert "modelRef" not in refused
    assert status_of(result, "ModelActivation", "in-ai")["reason"] != NAMESPACE_UNREADABLE
    assert declared_in(result, "ai") == ["Model/in-ai"]
    assert declared_in(result, TARGET) == []


def test_a_model_declared_before_its_namespace_became_unreadable_stays_declared_from_its_spec():
    observed_before = {"phase": "Ready", "reason": "Ready", "modelRef": f"{TARGET}/in-team-x", "replicas": {"ready": 1}}
    result = plan_with_team_x_unreadable(in_team_x("in-team-x", status=observed_before))

    assert declared_in(result, TARGET) == ["Model/in-team-x"]
    held = status_of(result, "ModelActivation", "in-team-x")
    assert (held["reason"], held["modelRef"]) == (NAMESPACE_UNREADABLE, f"{TARGET}/in-team-x")
    assert "replicas" not in held
    again = plan_with_team_x_unreadable(in_team_x("in-team-x", status=held))
    assert declared_in(again, TARGET) == ["Model/in-team-x"]
    assert thaw(status_of(again, "ModelActivation", "in-team-x")) == held


def test_an_object_in_a_namespace_that_was_read_is_not_held():
    result = plan(
        snapshot=Snapshot.from_objects(with_flux([*platform(), in_team_x("in-team-x")])), catalogs=CATALOGS, now=NOW
    )
    assert status_of(result, "ModelActivation", "in-team-x")["reason"] != NAMESPACE_UNREADABLE
    assert declared_in(result, TARGET) == ["Model/in-team-x"]
