"""The live reader records which optional built-in APIs the cluster serves (GPU sharing's DRA
claim and admission policy), by discovery, and reads their objects only where served.

The test server is as a current cluster comes: it serves resource.k8s.io/v1 (DRA, GA since
Kubernetes 1.34) and not admissionregistration.k8s.io/v1beta1 (MutatingAdmissionPolicy, a beta
API a cluster serves only once its administrator turns it on).
"""

from __future__ import annotations

from planning.frozen import thaw
from planning.hardware.amd_sharing import SHARED_CLAIM, shared_claim
from providers.kinds import MUTATING_ADMISSION_POLICY, RESOURCE_CLAIM, RESOURCE_SLICE
from providers.kube import KubeClient
from providers.live_reader import DEFAULT_MODEL_NAMESPACE, api_name, read_snapshot, served_apis

NS = "ai-system"
SLICE = "gpu-1-gpu.amd.com"
UNMANAGED_CLAIM = "someone-elses-claim"


def resource_slice() -> dict:
    """A ResourceSlice as the AMD DRA driver publishes it for one node."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": SLICE},
        "spec": {
            "driver": "gpu.amd.com",
            "nodeName": "gpu-1",
            "pool": {"name": "gpu-1", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": "gpu-0", "attributes": {"resource.kubernetes.io/pciBusID": {"string": "0000:c3:00.0"}}}
            ],
        },
    }


def unmanaged_claim() -> dict:
    body = thaw(shared_claim(namespace=DEFAULT_MODEL_NAMESPACE, node="gpu-1", slots=2, field_manager="someone").body)
    return {**body, "metadata": {"name": UNMANAGED_CLAIM, "namespace": DEFAULT_MODEL_NAMESPACE}}


def test_a_server_serving_dra_but_not_admission_policies_gives_a_snapshot_serving_resource_claims_only(
    clean_shared_namespaces, admin_access
):
    snapshot = read_snapshot(admin_access, system_namespace=NS)

    assert snapshot.served_apis == frozenset({"resourceclaims.resource.k8s.io/v1"})
    assert not [o for o in snapshot.generated if o.kind in ("ResourceClaim", "ResourceSlice")]


def test_the_reader_reads_every_resource_slice_and_only_the_resource_claim_the_program_manages(
    clean_shared_namespaces, admin: KubeClient, admin_access
):
    managed = thaw(
        shared_claim(namespace=DEFAULT_MODEL_NAMESPACE, node="gpu-1", slots=2, field_manager="magicstick").body
    )
    admin.apply(RESOURCE_SLICE, resource_slice(), field_manager="gpu.amd.com")
    admin.apply(RESOURCE_CLAIM, managed, field_manager="magicstick")
    admin.apply(RESOURCE_CLAIM, unmanaged_claim(), field_manager="someone")
    try:
        snapshot = read_snapshot(admin_access, system_namespace=NS)
    finally:
        admin.delete(RESOURCE_CLAIM, UNMANAGED_CLAIM, DEFAULT_MODEL_NAMESPACE)
        admin.delete(RESOURCE_CLAIM, SHARED_CLAIM, DEFAULT_MODEL_NAMESPACE)
        admin.delete(RESOURCE_SLICE, SLICE)

    read = [
        (o.kind, o.meta.namespace, o.meta.name)
        for o in snapshot.generated
        if o.kind in ("ResourceClaim", "ResourceSlice")
    ]
    assert read == [("ResourceClaim", DEFAULT_MODEL_NAMESPACE, SHARED_CLAIM), ("ResourceSlice", None, SLICE)]
    (slice_,) = [o for o in snapshot.generated if o.kind == "ResourceSlice"]
    assert slice_.spec["driver"] == "gpu.amd.com"


def test_discovery_on_this_server_finds_resource_claims_and_no_admission_policy_group_version(admin: KubeClient):
    served: dict = {}
    assert served_apis(admin, served) == ("resourceclaims.resource.k8s.io/v1",)
    assert {"resourceclaims", "resourceslices"} <= served[(RESOURCE_CLAIM.group, RESOURCE_CLAIM.version)]
    assert served[(MUTATING_ADMISSION_POLICY.group, MUTATING_ADMISSION_POLICY.version)] is None


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
