"""Server-side apply ownership on the real API server: objects the program owns end as planned
even when another field manager set one of their fields (`flux suspend`, an earlier operator).

The engine stand-in applies as pulumi-kubernetes does: without `force`, unless the object carries
`pulumi.com/patchForce: "true"`, which the plan sets on every object the program owns.
"""

from __future__ import annotations

import pytest

from planning.frozen import thaw
from planning.kustomizations import SourceRef, module_kustomization
from planning.objects import OWNED_FORCE_ANNOTATION, DesiredObject
from providers.kinds import KUSTOMIZATION
from providers.kube import Conflict, KubeClient
from tests.live.world import engine_force, ensure_namespace
from tests.planning.builders import CATALOGS

PROGRAM = "magicstick"
FLUX_CLI = "flux-client-side-apply"


def _apply_as_pulumi_kubernetes(client: KubeClient, obj: DesiredObject) -> dict:
    body = thaw(obj.body)
    return client.apply(KUSTOMIZATION, body, field_manager=PROGRAM, force=engine_force(body))


def _suspend_as_a_person_would(client: KubeClient, name: str) -> None:
    patch = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"suspend": True},
    }
    client.apply(KUSTOMIZATION, patch, field_manager=FLUX_CLI, force=True)


def _planned() -> DesiredObject:
    return module_kustomization(
        entry=CATALOGS.modules.get("kubeai"),
        dependencies=(),
        source=SourceRef(),
        suspend=False,
        activation="kubeai",
        field_manager=PROGRAM,
    )


def _managers_of(obj: dict, field: str) -> set[str]:
    return {
        entry["manager"]
        for entry in obj["metadata"].get("managedFields", [])
        if field in entry.get("fieldsV1", {}).get("f:spec", {})
    }


@pytest.fixture
def flux_system(admin: KubeClient, clean_shared_namespaces) -> KubeClient:
    ensure_namespace(admin, "flux-system")
    return admin


def test_a_suspended_kustomization_the_program_owns_is_resumed_by_the_next_apply(flux_system):
    planned = _planned()
    _apply_as_pulumi_kubernetes(flux_system, planned)
    _suspend_as_a_person_would(flux_system, planned.name)
    applied = _apply_as_pulumi_kubernetes(flux_system, planned)
    assert applied["spec"]["suspend"] is False
    assert _managers_of(applied, "f:suspend") == {PROGRAM}


def test_without_the_force_annotation_the_same_apply_is_refused_as_a_conflict(flux_system):
    """What pulumi-kubernetes meets on an object the plan did not mark as owned."""
    planned = _planned()
    _apply_as_pulumi_kubernetes(flux_system, planned)
    _suspend_as_a_person_would(flux_system, planned.name)
    unforced = thaw(planned.body)
    del unforced["metadata"]["annotations"][OWNED_FORCE_ANNOTATION]
    with pytest.raises(Conflict, match="suspend"):
        flux_system.apply(KUSTOMIZATION, unforced, field_manager=PROGRAM, force=False)


def test_an_object_an_earlier_operator_created_is_adopted_as_planned(flux_system):
    planned = _planned()
    earlier = thaw(planned.body)
    earlier["metadata"]["annotations"] = {}
    earlier["spec"].update(interval="1h", prune=False)
    flux_system.apply(KUSTOMIZATION, earlier, field_manager="magicstick-operator", force=True)
    applied = _apply_as_pulumi_kubernetes(flux_system, planned)
    assert (applied["spec"]["interval"], applied["spec"]["prune"]) == ("10m0s", True)
    assert _managers_of(applied, "f:interval") == {PROGRAM}
