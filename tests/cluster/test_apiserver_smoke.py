"""The test cluster is a real Kubernetes API server: versions, concurrency, CRDs, validation, RBAC."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from tests import toolchain
from tests.cluster.apiserver import (
    KUBE_VERSION,
    READER_USER,
    ApiError,
    ClusterInfo,
    TestIdentity,
    install_crds,
    token_auth_file,
    upstream_crd_paths,
    wait_until_allowed,
)
from tests.cluster.conftest_plugin import namespace_name

FIELD_MANAGER = "magicstick-tests"
CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NO_FIELD = "<nil>"
"""The field of a cause that names none: the server's summary of the CEL rules it did not run."""
KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
APPLY = {"Content-Type": "application/apply-patch+yaml"}


def upstream_crd_path(relative: str) -> Path:
    (path,) = [path for path in upstream_crd_paths() if path.as_posix().endswith(relative)]
    return path


def kustomization(name: str, *, source_kind: str = "GitRepository") -> dict:
    return {
        "apiVersion": f"{KUSTOMIZE_GROUP}/v1",
        "kind": "Kustomization",
        "metadata": {"name": name},
        "spec": {
            "interval": "10m0s",
            "path": "./modules/example",
            "prune": True,
            "sourceRef": {"kind": source_kind, "name": "flux-system", "namespace": "flux-system"},
        },
    }


def kubeai_model(name: str, **spec: object) -> dict:
    """A KubeAI Model as the program declares one (tests/golden/demo), with `spec` overrides."""
    return {
        "apiVersion": "kubeai.org/v1",
        "kind": "Model",
        "metadata": {"name": name},
        "spec": {
            "engine": "VLLM",
            "features": ["TextGeneration"],
            "url": "hf://Qwen/Qwen2.5-0.5B-Instruct",
            "resourceProfile": "cpu:1",
            "minReplicas": 1,
            "maxReplicas": 1,
            **spec,
        },
    }


def dry_run_apply(client: httpx.Client, namespace: str, body: dict) -> httpx.Response:
    name = body["metadata"]["name"]
    return client.patch(
        f"/apis/{KUSTOMIZE_GROUP}/v1/namespaces/{namespace}/kustomizations/{name}",
        params={"fieldManager": FIELD_MANAGER, "dryRun": "All"},
        headers=APPLY,
        content=json.dumps(body),
    )


class TestTheServer:
    def test_it_answers_version_with_the_kube_version_the_toolchain_pins(self, admin_client):
        response = admin_client.get("/version")
        assert response.status_code == 200
        assert toolchain.versions().kube == KUBE_VERSION
        assert response.json()["gitVersion"] == KUBE_VERSION

    def test_it_refuses_a_request_without_a_token(self, cluster: ClusterInfo):
        with httpx.Client(base_url=cluster.url, verify=cluster.ssl_context()) as anonymous:
            assert anonymous.get("/api/v1/namespaces").status_code == 401


class TestOptimisticConcurrency:
    def test_a_created_configmap_reads_back_with_a_resource_version_and_a_stale_update_gets_409(
        self, admin_client, namespace
    ):
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        created = admin_client.post(
            path, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "store"}, "data": {"a": "1"}}
        )
        assert created.status_code == 201
        read = admin_client.get(f"{path}/store").json()
        stale_version = read["metadata"]["resourceVersion"]
        assert stale_version
        assert read["data"] == {"a": "1"}

        updated = admin_client.put(f"{path}/store", json={**read, "data": {"a": "2"}})
        assert updated.status_code == 200
        assert updated.json()["metadata"]["resourceVersion"] != stale_version

        stale = admin_client.put(f"{path}/store", json={**read, "data": {"a": "3"}})
        assert stale.status_code == 409
        assert stale.json()["reason"] == "Conflict"
        assert admin_client.get(f"{path}/store").json()["data"] == {"a": "2"}


class TestUpstreamCrds:
    def test_the_flux_kustomization_crd_is_served_and_discovery_lists_its_v1(self, admin_client):
        groups = {group["name"]: group for group in admin_client.get("/apis").json()["groups"]}
        assert "v1" in {version["version"] for version in groups[KUSTOMIZE_GROUP]["versions"]}
        resources = admin_client.get(f"/apis/{KUSTOMIZE_GROUP}/v1").json()["resources"]
        assert {"name": "kustomizations", "kind": "Kustomization", "namespaced": True}.items() <= next(
            resource for resource in resources if resource["name"] == "kustomizations"
        ).items()

    def test_installing_them_again_replaces_each_one_and_all_stay_established(self, cluster, admin_client):
        installed = install_crds(cluster, upstream_crd_paths())
        assert {crd.plural for crd in installed} >= {
            "kustomizations",
            "helmreleases",
            "gitrepositories",
            "helmrepositories",
            "ocirepositories",
            "models",
            "httproutes",
            "referencegrants",
            "securitypolicies",
            "nodefeaturerules",
            "clusterpolicies",
            "deviceconfigs",
            "gpudeviceplugins",
        }
        for crd in installed:
            served = admin_client.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd.name}").json()
            assert {"type": "Established", "status": "True"}.items() <= next(
                c for c in served["status"]["conditions"] if c["type"] == "Established"
            ).items()

    def test_an_upstream_crd_with_an_empty_string_default_is_installed_unmodified_and_its_default_applied(
        self, cluster, admin_client, namespace
    ):
        source = upstream_crd_path("kubeai/kubeai.org_models.yaml")
        (installed,) = install_crds(cluster, [source])
        served = admin_client.get(f"{CRD_API}/{installed.name}").json()
        (upstream,) = [d for d in yaml.safe_load_all(source.read_text()) if d]
        assert [v["schema"] for v in served["spec"]["versions"]] == [v["schema"] for v in upstream["spec"]["versions"]]
        env_from = served["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
            "envFrom"
        ]
        assert env_from["items"]["properties"]["configMapRef"]["properties"]["name"]["default"] == ""

        body = kubeai_model("with-env-from", envFrom=[{"configMapRef": {}, "secretRef": {"name": "keys"}}])
        created = admin_client.post(f"/apis/kubeai.org/v1/namespaces/{namespace}/models", json=body)
        assert created.status_code == 201, created.text
        assert created.json()["spec"]["envFrom"] == [{"configMapRef": {"name": ""}, "secretRef": {"name": "keys"}}]

    def test_the_cel_rules_of_an_upstream_crd_are_enforced(self, cluster, admin_client, namespace):
        (installed,) = install_crds(cluster, [upstream_crd_path("kubeai/kubeai.org_models.yaml")])
        assert installed.cel_rules > 0
        models = f"/apis/kubeai.org/v1/namespaces/{namespace}/models"

        refused = admin_client.post(models, json=kubeai_model("from-the-web", url="https://example.com/model"))
        assert refused.status_code == 422, refused.text
        assert [cause["field"] for cause in refused.json()["details"]["causes"]] == ["spec.url"]
        assert 'url must start with "hf://"' in refused.json()["details"]["causes"][0]["message"]

        too_long = admin_client.post(models, json=kubeai_model("m" * 41))
        assert too_long.status_code == 422, too_long.text
        assert "name must not exceed 40 characters." in too_long.json()["message"]

        assert admin_client.post(models, json=kubeai_model("m" * 40)).status_code == 201

    def test_a_crd_the_server_refuses_fails_the_install_with_the_servers_422(self, cluster, tmp_path):
        broken = tmp_path / "broken.yaml"
        broken.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "CustomResourceDefinition",
                    "metadata": {"name": "widgets.example.com"},
                    "spec": {
                        "group": "example.com",
                        "scope": "Namespaced",
                        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                        "versions": [
                            {
                                "name": "v1",
                                "served": True,
                                "storage": True,
                                "schema": {"openAPIV3Schema": {"type": "object"}},
                            }
                        ],
                    },
                }
            )
        )
        with pytest.raises(ApiError) as refused:
            install_crds(cluster, [broken])
        assert refused.value.status_code == 422

    def test_a_dry_run_apply_of_a_valid_kustomization_is_accepted_and_stores_nothing(self, admin_client, namespace):
        response = dry_run_apply(admin_client, namespace, kustomization("example"))
        assert response.status_code == 201, response.text
        assert response.json()["spec"]["sourceRef"]["kind"] == "GitRepository"
        stored = admin_client.get(f"/apis/{KUSTOMIZE_GROUP}/v1/namespaces/{namespace}/kustomizations/example")
        assert stored.status_code == 404

    def test_a_dry_run_apply_of_a_kustomization_with_an_unknown_source_kind_is_rejected_with_422(
        self, admin_client, namespace
    ):
        response = dry_run_apply(admin_client, namespace, kustomization("example", source_kind="Nope"))
        assert response.status_code == 422
        status = response.json()
        assert status["reason"] == "Invalid"
        causes = {cause["field"]: cause for cause in status["details"]["causes"]}
        assert causes["spec.sourceRef.kind"]["reason"] == "FieldValueNotSupported"
        # Beside the field, the server names no other field; it may add a summary (field
        # "<nil>") saying the CRD's CEL rules were not run on an object already invalid.
        assert set(causes) <= {"spec.sourceRef.kind", NO_FIELD}
        if NO_FIELD in causes:
            assert "validation rules were not checked" in causes[NO_FIELD]["message"]


class TestRbac:
    def test_the_reader_gets_403_until_a_role_binding_grants_it_list_on_configmaps(
        self, cluster: ClusterInfo, admin_client, namespace
    ):
        with cluster.client(READER_USER) as reader:
            assert reader.get(f"/api/v1/namespaces/{namespace}/configmaps").status_code == 403

            rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
            role = {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "configmap-lister"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
            }
            binding = {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "configmap-lister"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-lister"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": READER_USER}],
            }
            assert admin_client.post(f"{rbac}/roles", json=role).status_code == 201
            assert admin_client.post(f"{rbac}/rolebindings", json=binding).status_code == 201
            wait_until_allowed(cluster, READER_USER, verb="list", resource="configmaps", namespace=namespace)

            assert reader.get(f"/api/v1/namespaces/{namespace}/configmaps").status_code == 200
            assert reader.get(f"/api/v1/namespaces/{namespace}/secrets").status_code == 403


class TestIdentitiesAndNames:
    def test_a_kubeconfig_names_the_server_its_certificate_and_the_identity_token(self, cluster: ClusterInfo):
        config = yaml.safe_load(cluster.kubeconfig_path(READER_USER).read_text())
        (entry,) = config["clusters"]
        assert entry["cluster"] == {"server": cluster.url, "certificate-authority": str(cluster.ca_file)}
        (user,) = config["users"]
        assert user == {"name": READER_USER, "user": {"token": cluster.identity(READER_USER).token}}
        assert config["current-context"] == READER_USER

    def test_the_token_file_lists_groups_in_quotes_and_omits_them_when_there_are_none(self):
        content = token_auth_file(
            [TestIdentity("admin", "t1", ("system:masters", "extra")), TestIdentity("reader", "t2")]
        )
        assert content == 't1,admin,admin,"system:masters,extra"\nt2,reader,reader\n'

    def test_the_token_file_refuses_a_duplicate_token(self):
        with pytest.raises(ValueError, match="unique"):
            token_auth_file([TestIdentity("a", "same"), TestIdentity("b", "same")])

    @pytest.mark.parametrize(
        ("test_name", "expected"),
        [
            ("test_reads_back[GitRepository-v1]", "reads-back-gitrepository-v1-7"),
            ("test_" + "x" * 80, "x" * 61 + "-7"),
            ("test___", "test-7"),
        ],
    )
    def test_a_namespace_name_is_a_dns_label_of_at_most_63_characters(self, test_name, expected):
        assert namespace_name(test_name, 7) == expected
