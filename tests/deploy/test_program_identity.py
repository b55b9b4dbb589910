"""The program's real code, run as the ServiceAccount deploy/ defines, against the real API server.

What the program does must be allowed; what it never does must be Forbidden.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from api.crdgen import load_committed_crds
from api.meta import API_VERSION
from catalogs import load_catalogs
from planning.frozen import thaw
from planning.hardware.amd import ELIGIBLE_LABEL, device_config, node_eligibility_patch
from planning.kustomizations import SourceRef, module_kustomization
from planning.objects import encode_status
from planning.settings import FIELD_MANAGER, FLUX_NAMESPACE
from providers.kinds import CONFIG_MAP, CRD, KUSTOMIZATION, MODULE_ACTIVATION, NODE
from providers.kube import Forbidden, KubeAccess, KubeClient, NotFound
from providers.kube.client import APPLY_PATCH
from providers.live_reader import read_snapshot
from providers.offloading_store import OFFLOADING_STORE
from providers.profile_store import put_profile, read_profiles, remove_profile
from providers.status_batch import LIST_FROM, StatusBatchProvider
from providers.status_writer import StatusTarget, write_status
from tests.cluster.apiserver import TestIdentity
from tests.deploy.manifests import SERVICE_ACCOUNT_USER, SYSTEM_NAMESPACE
from tests.deploy.program_identity import FIELD_MANAGER as LOADER
from tests.live.world import DEVICE_CONFIG, NAMESPACE
from tests.providers.engine import configured, kubeconfig_config

OWN_CRD_NAMES = tuple(crd["metadata"]["name"] for crd in load_committed_crds())


def module_activation(name: str, module: str = "basis") -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleActivation",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
        "spec": {"module": module, "enabled": True},
    }


@pytest.fixture
def activation_name(request: pytest.FixtureRequest, admin: KubeClient) -> Iterator[str]:
    """A ModuleActivation name of this test in ai-system; the object is deleted afterwards."""
    name = f"deploy-{hashlib.sha256(request.node.name.encode()).hexdigest()[:10]}"
    yield name
    with contextlib.suppress(NotFound):
        admin.delete(MODULE_ACTIVATION, name, SYSTEM_NAMESPACE)


class TestWhatTheProgramDoesIsAllowed:
    def test_the_live_reader_reads_a_complete_snapshot(
        self, program_access: KubeAccess, admin: KubeClient, activation_name
    ):
        admin.apply(MODULE_ACTIVATION, module_activation(activation_name), field_manager=LOADER)

        snapshot = read_snapshot(program_access, system_namespace=SYSTEM_NAMESPACE)

        assert snapshot.runtime_object("ModuleActivation", SYSTEM_NAMESPACE, activation_name) is not None
        assert set(OWN_CRD_NAMES) <= snapshot.served_crds
        assert "kustomizations.kustomize.toolkit.fluxcd.io" in snapshot.served_crds

    def test_the_status_writer_writes_the_status_of_a_module_activation(
        self, program: KubeClient, admin: KubeClient, activation_name
    ):
        admin.apply(MODULE_ACTIVATION, module_activation(activation_name), field_manager=LOADER)
        status = {"phase": "Ready", "observedGeneration": 1, "message": "Kustomization platform-basis is ready."}
        target = StatusTarget(
            api_version=API_VERSION,
            kind="ModuleActivation",
            namespace=SYSTEM_NAMESPACE,
            name=activation_name,
            status=status,
        )

        assert write_status(program, target) is True
        assert admin.get(MODULE_ACTIVATION, activation_name, SYSTEM_NAMESPACE)["status"] == status

    def test_a_status_batch_reads_its_objects_by_one_list_and_writes_their_statuses(
        self, program_access: KubeAccess, admin: KubeClient, request: pytest.FixtureRequest
    ):
        stem = f"batch-{hashlib.sha256(request.node.name.encode()).hexdigest()[:8]}"
        names = [f"{stem}-{index}" for index in range(LIST_FROM)]
        for name in names:
            admin.apply(MODULE_ACTIVATION, module_activation(name), field_manager=LOADER)
        request.addfinalizer(lambda: [admin.delete(MODULE_ACTIVATION, name, SYSTEM_NAMESPACE) for name in names])
        status = {"phase": "Ready", "observedGeneration": 1, "message": "Kustomization platform-basis is ready."}
        members = {
            f"{SYSTEM_NAMESPACE}/{name}": {"namespace": SYSTEM_NAMESPACE, "name": name, "status": encode_status(status)}
            for name in names
        }
        assert program_access.kubeconfig is not None
        provider = configured(StatusBatchProvider(), kubeconfig_config(program_access.kubeconfig))
        inputs = provider.check({}, {"apiVersion": API_VERSION, "kind": "ModuleActivation", "members": members}).inputs

        created = provider.create(inputs)

        assert created.outs["writeProblems"] == {}
        assert all(admin.get(MODULE_ACTIVATION, name, SYSTEM_NAMESPACE)["status"] == status for name in names)
        assert provider.read(created.id, created.outs).outs.get("problem") in (None, {})

    def test_a_missing_module_activation_is_seeded_by_server_side_apply(
        self, program: KubeClient, admin: KubeClient, activation_name
    ):
        program.apply(MODULE_ACTIVATION, module_activation(activation_name), field_manager=FIELD_MANAGER)

        assert admin.get(MODULE_ACTIVATION, activation_name, SYSTEM_NAMESPACE)["spec"]["module"] == "basis"

    def test_a_planned_flux_kustomization_is_applied_in_flux_system_as_a_dry_run(
        self, program: KubeClient, admin: KubeClient
    ):
        planned = module_kustomization(
            entry=load_catalogs().modules.get("litellm"),
            dependencies=(),
            source=SourceRef(),
            suspend=False,
            activation="litellm",
            field_manager=FIELD_MANAGER,
        )
        body = thaw(planned.body)
        before = admin.get_or_none(KUSTOMIZATION, body["metadata"]["name"], FLUX_NAMESPACE)

        answered = program.apply(KUSTOMIZATION, body, field_manager=FIELD_MANAGER, dry_run=True)

        assert answered["spec"]["path"] == body["spec"]["path"]
        assert admin.get_or_none(KUSTOMIZATION, body["metadata"]["name"], FLUX_NAMESPACE) == before

    def test_the_offloading_store_is_created_and_changed_by_compare_and_swap(
        self, program: KubeClient, admin: KubeClient
    ):
        ref = OFFLOADING_STORE.ref
        profile = {"imageName": "nvidia-gpu", "requests": {"memory": "24576Mi"}, "limits": {"memory": "24576Mi"}}
        try:
            assert put_profile(program, ref, "magicstick-offload-a", profile, store=OFFLOADING_STORE) is True
            assert put_profile(program, ref, "magicstick-offload-b", profile, store=OFFLOADING_STORE) is True
            assert remove_profile(program, ref, "magicstick-offload-a", store=OFFLOADING_STORE) is True
            assert set(read_profiles(admin.get(CONFIG_MAP, ref.name, ref.namespace))) == {"magicstick-offload-b"}
        finally:
            with contextlib.suppress(NotFound):
                admin.delete(CONFIG_MAP, ref.name, ref.namespace)

    def test_the_amd_eligibility_label_is_applied_to_a_node_as_a_dry_run(self, program: KubeClient, admin: KubeClient):
        admin.apply(
            NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "identity-test-node"}}, field_manager=LOADER
        )
        planned = thaw(node_eligibility_patch("identity-test-node", FIELD_MANAGER).body)

        try:
            answered = program.apply(NODE, planned, field_manager=FIELD_MANAGER, dry_run=True)
            stored = admin.get(NODE, "identity-test-node")
        finally:
            admin.delete(NODE, "identity-test-node")

        assert answered["metadata"]["labels"][ELIGIBLE_LABEL] == "true"
        assert ELIGIBLE_LABEL not in (stored["metadata"].get("labels") or {})

    def test_the_managed_amd_device_config_is_applied_as_a_dry_run(self, program: KubeClient, admin: KubeClient):
        admin.apply(
            NAMESPACE,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-amd-gpu"}},
            field_manager=LOADER,
        )
        planned = thaw(device_config("kube-amd-gpu", FIELD_MANAGER).body)

        answered = program.apply(DEVICE_CONFIG, planned, field_manager=FIELD_MANAGER, dry_run=True)

        assert answered["spec"]["selector"] == {ELIGIBLE_LABEL: "true"}

    @pytest.mark.parametrize("name", OWN_CRD_NAMES)
    def test_each_of_the_programs_own_crds_may_be_patched_replaced_and_deleted(self, program: KubeClient, name: str):
        path = CRD.object_path(name)
        patched = program.request(
            "PATCH",
            path,
            params={"dryRun": "All", "fieldManager": FIELD_MANAGER},
            body={"metadata": {"labels": {"example.com/probe": "true"}}},
            content_type="application/merge-patch+json",
        )
        replaced = program.request(
            "PUT",
            path,
            params={"dryRun": "All", "fieldManager": FIELD_MANAGER},
            body=program.get(CRD, name),
            content_type="application/json",
        )

        program.request("DELETE", path, params={"dryRun": "All"})

        assert patched["metadata"]["labels"]["example.com/probe"] == "true"
        assert replaced["metadata"]["name"] == name
        assert program.get(CRD, name)["metadata"].get("deletionTimestamp") is None

    def test_a_crd_may_be_created_because_a_create_cannot_be_restricted_by_name(
        self, program: KubeClient, admin: KubeClient
    ):
        crd = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [
                    {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
                ],
            },
        }

        program.request(
            "POST", CRD.collection_path(), params={"dryRun": "All"}, body=crd, content_type="application/json"
        )

        assert admin.get_or_none(CRD, "widgets.example.com") is None

    def test_the_workspace_agent_may_review_a_token_as_pko_v2_requires(
        self, program: KubeClient, program_identity: TestIdentity
    ):
        review = program.request(
            "POST",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            body={
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": program_identity.token},
            },
            content_type="application/json",
        )

        assert review["status"]["authenticated"] is True
        assert review["status"]["user"]["username"] == SERVICE_ACCOUNT_USER


@dataclass(frozen=True)
class Attempt:
    """One request the program never makes; `{scratch}` in the path is a namespace of the test."""

    method: str
    path: str
    body: dict[str, Any] | None = None
    content_type: str | None = None
    params: dict[str, str] = field(default_factory=dict)


NEVER = {
    "list Secrets in ai-system": Attempt("GET", "/api/v1/namespaces/ai-system/secrets"),
    "list Secrets in flux-system": Attempt("GET", "/api/v1/namespaces/flux-system/secrets"),
    "list Secrets across the cluster": Attempt("GET", "/api/v1/secrets"),
    "get a Secret by name": Attempt("GET", "/api/v1/namespaces/ai-system/secrets/changeme-pulumi-backend"),
    "create a Deployment in kube-system": Attempt(
        "POST",
        "/apis/apps/v1/namespaces/kube-system/deployments",
        body={"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "deploy-probe"}},
        content_type="application/json",
        params={"dryRun": "All"},
    ),
    "patch the status of a HostOperation": Attempt(
        "PATCH",
        "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/hostoperations/deploy-probe/status",
        body={
            "apiVersion": API_VERSION,
            "kind": "HostOperation",
            "metadata": {"name": "deploy-probe", "namespace": "ai-system"},
            "status": {"phase": "Succeeded"},
        },
        content_type=APPLY_PATCH,
        params={"fieldManager": FIELD_MANAGER},
    ),
    "create a HostOperation": Attempt(
        "POST",
        "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/hostoperations",
        body={"apiVersion": API_VERSION, "kind": "HostOperation", "metadata": {"name": "deploy-probe"}},
        content_type="application/json",
        params={"dryRun": "All"},
    ),
    "patch the status of an ApplianceSetup": Attempt(
        "PATCH",
        "/apis/appliance.magicstick.dev/v1alpha1/namespaces/identity-system/appliancesetups/deploy-probe/status",
        body={
            "apiVersion": API_VERSION,
            "kind": "ApplianceSetup",
            "metadata": {"name": "deploy-probe", "namespace": "identity-system"},
            "status": {"phase": "Complete"},
        },
        content_type=APPLY_PATCH,
        params={"fieldManager": FIELD_MANAGER},
    ),
    "delete a ModuleActivation": Attempt(
        "DELETE", "/apis/appliance.magicstick.dev/v1alpha1/namespaces/ai-system/moduleactivations/deploy-probe"
    ),
    "create a Kustomization outside flux-system": Attempt(
        "POST",
        "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/ai-system/kustomizations",
        body={
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "deploy-probe"},
        },
        content_type="application/json",
        params={"dryRun": "All"},
    ),
    "patch a CRD of another project": Attempt(
        "PATCH",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/kustomizations.kustomize.toolkit.fluxcd.io",
        body={"metadata": {"labels": {"example.com/probe": "true"}}},
        content_type="application/merge-patch+json",
        params={"dryRun": "All"},
    ),
    "delete a CRD of another project": Attempt(
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/kustomizations.kustomize.toolkit.fluxcd.io",
        params={"dryRun": "All"},
    ),
    "delete a namespace": Attempt("DELETE", "/api/v1/namespaces/{scratch}", params={"dryRun": "All"}),
    "bind itself to cluster-admin": Attempt(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        body={
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "deploy-probe"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "magicstick-program", "namespace": "ai-system"}],
        },
        content_type="application/json",
        params={"dryRun": "All"},
    ),
}


class TestWhatTheProgramNeverDoesIsForbidden:
    @pytest.mark.parametrize("attempt", NEVER.values(), ids=NEVER.keys())
    def test_the_service_account_is_refused(self, program: KubeClient, namespace: str, attempt: Attempt):
        with pytest.raises(Forbidden) as refused:
            program.request(
                attempt.method,
                attempt.path.format(scratch=namespace),
                params=attempt.params,
                body=attempt.body,
                content_type=attempt.content_type,
            )

        assert SERVICE_ACCOUNT_USER in refused.value.message
