"""The live reader records which optional built-in APIs the cluster serves (GPU sharing's DRA
claim and admission policy), by discovery, and reads their objects only where served."""

from __future__ import annotations

from providers.kinds import MUTATING_ADMISSION_POLICY, RESOURCE_CLAIM
from providers.kube import KubeClient
from providers.live_reader import api_name, read_snapshot, served_apis

NS = "ai-system"


def test_a_server_serving_neither_api_gives_a_snapshot_serving_none_and_no_sharing_objects(clean_shared_namespaces, admin_access):
    snapshot = read_snapshot(admin_access, system_namespace=NS)

    assert snapshot.served_apis == frozenset()
    assert not [o for o in snapshot.generated if o.kind in ("ResourceClaim", "ResourceSlice")]


def test_discovery_of_admission_policies_on_this_server_finds_the_group_but_not_the_kind(admin: KubeClient):
    served: dict = {}
    assert served_apis(admin, served) == ()
    assert served[(MUTATING_ADMISSION_POLICY.group, MUTATING_ADMISSION_POLICY.version)] is not None
    assert served[(RESOURCE_CLAIM.group, RESOURCE_CLAIM.version)] is None


def test_apis_discovery_already_answered_are_named_as_the_snapshot_names_them(admin: KubeClient):
    served = {
        (RESOURCE_CLAIM.group, RESOURCE_CLAIM.version): frozenset({"resourceclaims", "resourceslices"}),
        (MUTATING_ADMISSION_POLICY.group, MUTATING_ADMISSION_POLICY.version): frozenset({"mutatingadmissionpolicies"}),
    }
    assert served_apis(admin, served) == (
        "resourceclaims.resource.k8s.io/v1",
        "mutatingadmissionpolicies.admissionregistration.k8s.io/v1beta1",
    )
    assert api_name(RESOURCE_CLAIM) == "resourceclaims.resource.k8s.io/v1"
