"""The deploy/ manifests as files: they parse, they conform, they grant what the code uses, and
they hold no secret and no real deployment value. No cluster here; see test_program_identity.py."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from api.crdgen import load_committed_crds
from components.appliance import WRITTEN_STATUS_KINDS
from providers.kinds import (
    APPLIANCE_KINDS,
    CONFIG_MAP,
    CRD,
    DEPLOYMENT,
    ENVOY_PROXY,
    HELM_RELEASE,
    HTTP_ROUTE,
    KUBEAI_MODEL,
    KUSTOMIZATION,
    NETWORK_POLICY,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD_DISRUPTION_BUDGET,
    REFERENCE_GRANT,
    SECURITY_POLICY,
    SERVICE,
)
from providers.kube import ResourceKind
from providers.live_reader import reads
from tests.deploy.manifests import (
    BUILT_IN_CLUSTER_ROLES,
    DEPLOY_DIR,
    KUSTOMIZATION_FILE,
    RBAC_API_VERSION,
    SERVICE_ACCOUNT,
    SYSTEM_NAMESPACE,
    WORKFLOW_FILE,
    Permission,
    allows,
    bound_rules,
    documents,
    granted,
    kubernetes_files,
    the_one,
    walk,
    yaml_files,
)
from tests.support.crd_schema import upstream_registry
from tests.support.vendored import REPOSITORY_ROOT as REPO_ROOT

APPLIANCE_NAMESPACES = {"ai-system", "flux-system", "identity-system", "ai"}
PLACEHOLDER_DOMAINS = ("example.com", "example.local")

INLINE_VALUE_FIELDS = frozenset({"literal", "secrets", "accessTokenSecret", "value", "stringData", "data"})
"""Fields through which a value, rather than a reference, would enter a manifest."""

GOLDEN_RESOURCES = REPO_ROOT / "tests" / "golden" / "demo" / "resources"
DEPLOY_FILES = tuple(sorted(path for path in DEPLOY_DIR.rglob("*") if path.is_file()))
"""Every file under deploy/, the workspace image's build files included."""
STATE_CLAIM = "magicstick-state"
STATE_MOUNT = "/state"
STATE_PASSPHRASE_SECRET = "magicstick-state-passphrase"
NAMED_SECRETS = frozenset({STATE_PASSPHRASE_SECRET})
"""Secrets the manifests reference by a fixed name, which deploy/README.md tells the installer to create."""
WORKSPACE_IMAGE = "registry.example.com/magicstick/workspace:CHANGEME"
DEVICE_CONFIG = ResourceKind(
    group="amd.com", version="v1alpha1", kind="DeviceConfig", plural="deviceconfigs", namespaced=True
)
DECLARABLE = {
    (kind.api_version, kind.kind): kind
    for kind in (
        CRD,
        KUSTOMIZATION,
        NODE,
        DEVICE_CONFIG,
        CONFIG_MAP,
        KUBEAI_MODEL,
        HELM_RELEASE,
        HTTP_ROUTE,
        REFERENCE_GRANT,
        SECURITY_POLICY,
        DEPLOYMENT,
        SERVICE,
        POD_DISRUPTION_BUDGET,
        NETWORK_POLICY,
        ENVOY_PROXY,
        PERSISTENT_VOLUME,
        PERSISTENT_VOLUME_CLAIM,
        *APPLIANCE_KINDS.values(),
    )
}
UNNAMED_CLUSTER_WIDE_WRITES = {
    Permission("create", "apiextensions.k8s.io", "customresourcedefinitions"),
    Permission("patch", "", "nodes"),
    Permission("create", "amd.com", "deviceconfigs"),
    Permission("create", "admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    Permission("create", "admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
    Permission("create", "", "persistentvolumes"),
}
"""Cluster-wide writes Kubernetes cannot narrow by name: a create, or a node the installation names."""


def declared_objects() -> list[dict[str, Any]]:
    """Every Kubernetes object the demo render declares (the golden files)."""
    return [yaml.safe_load(path.read_text()) for path in sorted(GOLDEN_RESOURCES.glob("*.yaml"))]


@pytest.fixture(scope="module")
def rbac() -> list[dict[str, Any]]:
    return documents("rbac.yaml")


@pytest.fixture(scope="module")
def stack() -> dict[str, Any]:
    return the_one(documents("stack.yaml"), "Stack")


@pytest.fixture(scope="module")
def claim() -> dict[str, Any]:
    return the_one(documents("state.yaml"), "PersistentVolumeClaim")


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    (document,) = documents(WORKFLOW_FILE)
    return document


SHARED_ADMISSION_POLICY = "../magic-cluster/platform/admission"
"""The admission policy deploy/ shares with the dashboard base (kustomize allows a directory outside its root)."""
HOST_AGENT_IDENTITY = "../magic-cluster/platform/host-agent"
"""The host agent's ServiceAccount, roles and admission policy, outside deploy/ beside the admission policy."""


class TestEveryFile:
    @pytest.mark.parametrize("path", yaml_files(), ids=lambda path: path.name)
    def test_it_parses_into_mappings(self, path):
        loaded = documents(path.name)

        assert loaded
        assert all(isinstance(document, dict) for document in loaded)

    @pytest.mark.parametrize("name", kubernetes_files())
    def test_each_object_names_its_api_version_kind_and_name(self, name):
        for obj in documents(name):
            assert obj.get("apiVersion") and obj.get("kind") and obj["metadata"].get("name"), obj

    def test_the_kustomization_lists_every_kubernetes_file_the_shared_admission_policy_and_the_host_agent_identity(
        self,
    ):
        (kustomization,) = documents(KUSTOMIZATION_FILE)

        assert kustomization["kind"] == "Kustomization"
        assert sorted(kustomization["resources"]) == sorted(
            [*kubernetes_files(), SHARED_ADMISSION_POLICY, HOST_AGENT_IDENTITY]
        )
        assert "namespace" not in kustomization

    @pytest.mark.parametrize("path", DEPLOY_FILES, ids=lambda path: str(path.relative_to(DEPLOY_DIR)))
    def test_every_host_it_names_is_a_placeholder(self, path):
        hosts = re.findall(r"https?://([A-Za-z0-9.-]+)", path.read_text())

        assert [host for host in hosts if not host.endswith(PLACEHOLDER_DOMAINS)] == []


class TestTheServiceAccount:
    def test_it_is_magicstick_program_in_the_system_namespace(self):
        (account,) = documents("serviceaccount.yaml")

        assert (account["apiVersion"], account["kind"]) == ("v1", "ServiceAccount")
        assert account["metadata"]["name"] == SERVICE_ACCOUNT
        assert account["metadata"]["namespace"] == SYSTEM_NAMESPACE


class TestTheRbac:
    def test_it_holds_one_cluster_role_one_role_per_appliance_namespace_and_the_realtime_runtime_role_each_bound_to_the_service_account(
        self, rbac
    ):
        assert {obj["apiVersion"] for obj in rbac} == {RBAC_API_VERSION}
        roles = {
            (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
            for obj in rbac
            if obj["kind"].endswith("Role")
        }
        bindings = [obj for obj in rbac if obj["kind"].endswith("Binding")]

        assert roles == {("ClusterRole", None, "magicstick-program"), ("Role", "ai", "magicstick-realtime-runtime")} | {
            ("Role", namespace, "magicstick-program") for namespace in APPLIANCE_NAMESPACES
        }
        for binding in bindings:
            assert binding["subjects"] == [
                {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": SYSTEM_NAMESPACE}
            ]
            ref = binding["roleRef"]
            namespace = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
            assert (ref["kind"], namespace, ref["name"]) in roles or ref["name"] in BUILT_IN_CLUSTER_ROLES

    def test_every_role_is_bound(self, rbac):
        bound = {
            (obj["roleRef"]["kind"], obj["metadata"].get("namespace"), obj["roleRef"]["name"])
            for obj in rbac
            if obj["kind"].endswith("Binding")
        }

        for role in (obj for obj in rbac if obj["kind"] in {"Role", "ClusterRole"}):
            assert (role["kind"], role["metadata"].get("namespace"), role["metadata"]["name"]) in bound

    def test_every_list_of_the_live_reader_is_granted(self, rbac):
        permissions = set(granted(rbac))

        for read in reads(SYSTEM_NAMESPACE):
            assert Permission("list", read.kind.group, read.kind.plural, read.namespace) in permissions, read

    def test_the_status_writer_may_get_and_patch_the_status_of_every_kind_whose_status_the_program_writes(self, rbac):
        permissions = set(granted(rbac))

        for kind in (APPLIANCE_KINDS[name] for name in WRITTEN_STATUS_KINDS):
            assert Permission("get", kind.group, kind.plural, SYSTEM_NAMESPACE) in permissions
            assert Permission("patch", kind.group, f"{kind.plural}/status", SYSTEM_NAMESPACE) in permissions

    def test_no_status_of_host_operations_or_appliance_setups_is_writable(self, rbac):
        writable = {p.resource for p in granted(rbac) if p.verb in {"create", "patch", "update", "delete"}}

        assert not writable & {"hostoperations", "hostoperations/status", "appliancesetups", "appliancesetups/status"}

    @pytest.mark.parametrize(
        "obj", declared_objects(), ids=lambda obj: "/".join(obj["metadata"].get(k, "-") for k in ("namespace", "name"))
    )
    def test_every_object_the_demo_render_declares_may_be_server_side_applied(self, rbac, obj):
        kind = DECLARABLE[(obj["apiVersion"], obj["kind"])]
        permission = Permission("patch", kind.group, kind.plural, obj["metadata"].get("namespace"))

        assert allows(rbac, permission, obj["metadata"]["name"]), permission

    def test_the_named_crd_rule_names_exactly_the_programs_own_crds(self, rbac):
        named = [
            rule
            for rule, _ in bound_rules(rbac)
            if rule.get("resourceNames") and "customresourcedefinitions" in rule["resources"]
        ]

        assert [rule["resources"] for rule in named] == [["customresourcedefinitions"]]
        assert sorted(named[0]["resourceNames"]) == sorted(crd["metadata"]["name"] for crd in load_committed_crds())
        assert set(named[0]["verbs"]) == {"patch", "update", "delete"}

    def test_unnamed_cluster_wide_writes_are_only_those_that_cannot_be_named(self, rbac):
        writes = {p for p in granted(rbac) if p.namespace is None and p.verb not in {"get", "list", "watch"}}

        assert writes == UNNAMED_CLUSTER_WIDE_WRITES

    @pytest.mark.parametrize("store", ["magicstick-runtime-profiles", "magicstick-offloading-profiles"])
    def test_each_profile_store_may_be_read_and_patched_by_name_in_flux_system(self, rbac, store):
        for verb in ("get", "patch"):
            assert allows(rbac, Permission(verb, "", "configmaps", "flux-system"), store)

    def test_the_offloading_store_grant_names_only_the_offloading_store(self, rbac):
        named = [
            rule for rule, _ in bound_rules(rbac) if "magicstick-offloading-profiles" in rule.get("resourceNames", [])
        ]

        assert [(rule["resourceNames"], sorted(rule["verbs"])) for rule in named] == [
            (["magicstick-offloading-profiles"], ["get", "patch"])
        ]

    def test_the_device_config_rule_names_only_the_managed_device_config(self, rbac):
        named = [
            rule
            for rule, _ in bound_rules(rbac)
            if "deviceconfigs" in rule.get("resources", []) and rule.get("resourceNames")
        ]

        assert [rule["resourceNames"] for rule in named] == [["magicstick-amd-gpu"]]

    def test_no_rule_grants_secrets_wildcards_or_escalation(self, rbac):
        for rule, _ in bound_rules(rbac):
            assert "secrets" not in rule.get("resources", [])
            assert "*" not in [*rule.get("resources", []), *rule.get("verbs", []), *rule.get("apiGroups", [])]
            assert not {"escalate", "bind", "impersonate"} & set(rule.get("verbs", []))
            assert "nonResourceURLs" not in rule

    def test_the_pko_workspace_agent_gets_auth_delegation_and_nothing_else_built_in(self, rbac):
        built_in = [
            obj
            for obj in rbac
            if obj["kind"] == "ClusterRoleBinding" and obj["roleRef"]["name"] in BUILT_IN_CLUSTER_ROLES
        ]

        assert [binding["roleRef"]["name"] for binding in built_in] == ["system:auth-delegator"]


class TestTheStack:
    def test_it_conforms_to_the_upstream_pko_stack_crd(self, stack):
        upstream_registry().assert_valid(stack)

    def test_it_is_a_pko_v2_stack_in_the_system_namespace(self, stack):
        assert stack["apiVersion"] == "pulumi.com/v1"
        assert stack["metadata"]["namespace"] == SYSTEM_NAMESPACE
        assert stack["spec"]["stack"].split("/")[1:] == ["magicstick", "appliance"]

    def test_it_reruns_on_an_unchanged_commit_with_a_refresh_and_never_destroys(self, stack):
        spec = stack["spec"]

        assert spec["continueResyncOnCommitMatch"] is True
        assert spec["resyncFrequencySeconds"] >= 60
        assert spec["refresh"] is True
        assert spec["destroyOnFinalize"] is False

    def test_the_workspace_runs_as_the_service_account_with_the_workspace_image_and_resources(self, stack):
        spec = stack["spec"]
        workspace = spec["workspaceTemplate"]["spec"]

        assert spec["serviceAccountName"] == SERVICE_ACCOUNT
        assert workspace["serviceAccountName"] == SERVICE_ACCOUNT
        assert workspace["image"] == WORKSPACE_IMAGE
        assert workspace["resources"]["requests"] and workspace["resources"]["limits"]

    def test_its_one_program_source_is_the_project_inside_the_workspace_image(self, stack):
        sources = [key for key in ("projectRepo", "fluxSource", "programRef") if key in stack["spec"]]

        assert sources == []
        assert stack["spec"]["workspaceTemplate"]["spec"]["local"]["dir"].startswith("/")

    def test_its_config_keys_are_keys_pulumi_yaml_declares_and_none_points_away_from_the_cluster(self, stack):
        declared = set(yaml.safe_load((REPO_ROOT / "Pulumi.yaml").read_text())["config"])
        config = stack["spec"]["config"]

        assert set(config) <= declared
        assert config["magicstick:systemNamespace"] == SYSTEM_NAMESPACE
        assert not {"magicstick:kubeconfig", "magicstick:snapshotFile", "magicstick:now"} & set(config)

    def test_its_domains_are_placeholders(self, stack):
        config = stack["spec"]["config"]

        assert config["magicstick:domain"].endswith(PLACEHOLDER_DOMAINS)
        assert config["magicstick:localDomain"].endswith(PLACEHOLDER_DOMAINS)


class TestTheState:
    """State on the appliance: a file backend on a claim deploy/ creates, a passphrase from a Secret."""

    def test_the_claim_is_magicstick_state_in_the_system_namespace_read_write_once_1gi(self, claim):
        assert (claim["apiVersion"], claim["metadata"]["name"], claim["metadata"]["namespace"]) == (
            "v1",
            STATE_CLAIM,
            SYSTEM_NAMESPACE,
        )
        assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
        assert claim["spec"]["resources"]["requests"]["storage"] == "1Gi"

    def test_the_backend_is_a_file_backend_at_the_mount_path(self, stack):
        assert stack["spec"]["backend"] == f"file://{STATE_MOUNT}"

    def test_the_claim_is_mounted_at_the_mount_path_in_the_container_the_operator_runs_pulumi_in(self, stack, claim):
        pod = stack["spec"]["workspaceTemplate"]["spec"]["podTemplate"]["spec"]
        (volume,) = [volume for volume in pod["volumes"] if "persistentVolumeClaim" in volume]
        (container,) = [container for container in pod["containers"] if container["name"] == "pulumi"]

        assert volume["persistentVolumeClaim"] == {"claimName": claim["metadata"]["name"]}
        assert [mount for mount in container["volumeMounts"] if mount["name"] == volume["name"]] == [
            {"name": volume["name"], "mountPath": STATE_MOUNT}
        ]

    def test_secrets_are_encrypted_with_a_passphrase_read_from_a_secret_and_no_cloud_token_is_needed(self, stack):
        spec = stack["spec"]

        assert spec["secretsProvider"] == "passphrase"
        assert spec["envRefs"]["PULUMI_CONFIG_PASSPHRASE"] == {
            "type": "Secret",
            "secret": {"name": STATE_PASSPHRASE_SECRET, "key": "passphrase"},
        }
        assert "PULUMI_ACCESS_TOKEN" not in spec["envRefs"]
        assert "accessTokenSecret" not in spec


class TestNoSecretValue:
    def test_every_credential_is_a_reference_to_a_placeholder_or_documented_secret_in_the_stacks_namespace(self, stack):
        references = [value for path, value in walk(stack) if path and path[-1] == "secret"]

        assert references
        for reference in references:
            assert set(reference) == {"name", "key"}
            assert reference["name"].startswith("changeme-") or reference["name"] in NAMED_SECRETS
            assert reference["name"] in (DEPLOY_DIR / "README.md").read_text()

    def test_every_env_ref_reads_a_secret(self, stack):
        for name, reference in stack["spec"]["envRefs"].items():
            assert reference["type"] == "Secret", name

    @pytest.mark.parametrize("name", kubernetes_files())
    def test_no_manifest_holds_a_literal_an_inline_secret_or_a_secret_object(self, name):
        for obj in documents(name):
            assert obj["kind"] != "Secret"
            for path, _ in walk(obj):
                assert not path or path[-1] not in INLINE_VALUE_FIELDS, path

    @pytest.mark.parametrize("path", DEPLOY_FILES, ids=lambda path: str(path.relative_to(DEPLOY_DIR)))
    def test_no_file_holds_anything_shaped_like_a_credential(self, path):
        text = path.read_text()

        assert not re.search(r"pul-[0-9a-f]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|-----BEGIN|eyJ[A-Za-z0-9_-]{20,}", text)
        assert not re.search(r"(?i)(token|password|passphrase)\s*:\s*['\"]?[A-Za-z0-9+/=_-]{12,}", text)


class TestTheCiWorkflow:
    def test_it_runs_on_pull_requests_with_read_only_repository_access(self, workflow):
        triggers = workflow.get("on", workflow.get(True))

        assert "pull_request" in triggers
        assert workflow["permissions"] == {"contents": "read"}

    def test_it_renders_offline_from_a_venv_built_from_requirements_then_previews_with_a_diff(self, workflow):
        commands = "\n".join(step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"])

        assert "python -m venv venv" in commands
        assert "venv/bin/pip install -r requirements.txt" in commands
        assert "venv/bin/magicstick render --snapshot examples/demo/snapshot.yaml" in commands
        assert "pulumi preview --diff" in commands
        assert workflow["jobs"]["preview"]["needs"] == "offline"

    def test_its_credentials_come_from_placeholder_repository_secrets(self, workflow):
        text = (DEPLOY_DIR / WORKFLOW_FILE).read_text()
        secrets_used = set(re.findall(r"\$\{\{\s*secrets\.([A-Za-z0-9_]+)\s*\}\}", text))

        assert secrets_used
        assert all(name.startswith("CHANGEME_") for name in secrets_used)
