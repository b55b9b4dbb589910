"""The dashboard's JSON API against the test API server, as an admin, an operator and a viewer.

The dashboard's ServiceAccount may only impersonate; every allow and refusal here is the API
server's RBAC, its admission policy or its CRD validation, reached through the dashboard.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from providers.kinds import MODEL_ACTIVATION, MODULE_ACTIVATION, STACK
from providers.kube import KubeClient
from tests.services.dashboard.world import (
    NAMESPACE,
    World,
    registered_node,
    service_account_kubeconfig,
    start_dashboard,
)

pytestmark = pytest.mark.usefixtures("world")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def managers(obj: dict[str, Any]) -> set[str]:
    return {entry["manager"] for entry in obj["metadata"].get("managedFields", [])}


def cpu_fields(**fields: Any) -> dict[str, Any]:
    return {"preset": "qwen2505bcpu", "engine": "VLLM", "computeTarget": "cpu", **fields}


def cpu_model(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **cpu_fields(**fields)}


@pytest.fixture(scope="module")
def node(world: World) -> dict[str, Any]:
    """A Node as a kubelet registers it: its UID, and a boot ID in its status."""
    return registered_node(world.admin, "gpu-node-1")


class TestSignIn:
    def test_a_request_without_a_token_is_answered_401(self, world: World) -> None:
        with world.dashboard.client() as client:
            answer = client.get("/api/v1/overview")
        assert answer.status_code == 401
        assert answer.json()["error"] == "missing-token"

    def test_a_token_of_another_issuers_key_is_answered_401(self, world: World) -> None:
        from tests.services.access_guard.issuer import IssuerKeys

        forged = IssuerKeys().token(sub="mallory", roles=["admin"])
        with world.dashboard.client() as client:
            answer = client.get("/api/v1/overview", headers={"X-Magicstick-Id-Token": forged})
        assert answer.status_code == 401

    def test_a_token_without_a_dashboard_role_is_answered_403(self, world: World) -> None:
        token = world.dashboard.keys.token(sub="nobody", roles=["something-else"])
        with world.dashboard.client() as client:
            answer = client.get("/api/v1/overview", headers={"X-Magicstick-Id-Token": token})
        assert answer.status_code == 403
        assert answer.json()["error"] == "no-role"

    @pytest.mark.parametrize(
        ("role", "groups"),
        [
            ("admin", ["magicstick:administrators", "magicstick:operators", "magicstick:users", "magicstick:viewers"]),
            ("operator", ["magicstick:operators", "magicstick:users", "magicstick:viewers"]),
            ("viewer", ["magicstick:viewers"]),
        ],
    )
    def test_each_role_is_impersonated_with_its_group_and_the_groups_below(
        self, world: World, role: str, groups: list[str]
    ) -> None:
        with world.dashboard.client(role) as client:
            me = client.get("/api/v1/me").json()
            overview = client.get("/api/v1/overview")
        assert me["kubernetesGroups"] == groups
        assert me["kubernetesUser"].startswith("oidc:")
        assert overview.status_code == 200


def test_the_overview_shows_the_operators_last_update_to_a_viewer(world: World) -> None:
    """PKO's Stack status, as the operator writes it (tests play PKO; its CRD is the vendored one)."""
    admin: KubeClient = world.admin
    if admin.get_or_none(STACK, "magicstick", NAMESPACE) is None:
        stack = {
            "apiVersion": "pulumi.com/v1",
            "kind": "Stack",
            "metadata": {"name": "magicstick", "namespace": NAMESPACE},
            "spec": {"stack": "organization/magicstick/local"},
        }
        admin.create(STACK, stack, field_manager="pulumi-kubernetes-operator")
    last = {
        "state": "succeeded",
        "type": "up",
        "lastSuccessfulCommit": "0123456789abcdef",
        "lastResyncTime": "2026-12-02T10:00:00Z",
    }
    status = {
        "apiVersion": "pulumi.com/v1",
        "kind": "Stack",
        "metadata": {"name": "magicstick", "namespace": NAMESPACE},
        "status": {"lastUpdate": last},
    }
    admin.apply(STACK, status, field_manager="pulumi-kubernetes-operator", subresource="status")
    with world.dashboard.client("viewer") as client:
        overview = client.get("/api/v1/overview").json()
        page = client.get("/")
    assert overview["stack"]["status"]["lastUpdate"]["state"] == "succeeded"
    assert "up succeeded at 2026-12-02T10:00:00Z, commit 0123456789ab" in page.text


class TestModels:
    def test_an_operator_adds_a_cpu_model_with_its_cache_derived_by_the_server(self, world: World) -> None:
        name = unique("chat")
        with world.dashboard.client("operator") as client:
            estimate = client.post("/api/v1/models/estimate", json=cpu_fields(contextWindow=8192, maxNumSeqs=2)).json()
            created = client.post("/api/v1/models/local", json=cpu_model(name, contextWindow=8192, maxNumSeqs=2))
        assert created.status_code == 201, created.text
        local = created.json()["spec"]["local"]
        assert local["kvCacheMemoryBytes"] == estimate["kvCacheMemoryBytes"] > 0
        assert "allowMemoryRisk" not in local
        assert "magicstick-dashboard" in managers(created.json())

    def test_a_client_cannot_supply_the_derived_cache_size(self, world: World) -> None:
        with world.dashboard.client("operator") as client:
            answer = client.post("/api/v1/models/local", json=cpu_model(unique("chat"), kvCacheMemoryBytes=1))
        assert answer.status_code == 422
        assert [problem["field"] for problem in answer.json()["fields"]] == ["kvCacheMemoryBytes"]

    def test_an_oversized_model_needs_the_memory_risk_accepted(self, world: World) -> None:
        name = unique("tight")
        with world.dashboard.client("operator") as client:
            estimate = client.post("/api/v1/models/estimate", json=cpu_fields(memoryRequiredMi=512)).json()
            refused = client.post("/api/v1/models/local", json=cpu_model(name, memoryRequiredMi=512))
            accepted = client.post(
                "/api/v1/models/local", json=cpu_model(name, memoryRequiredMi=512, allowMemoryRisk=True)
            )
        assert estimate["risk"]["kind"] == "insufficient"
        assert estimate["ramMinimumMi"] > 512
        assert refused.status_code == 422
        assert refused.json()["error"] == "MemoryRisk"
        assert refused.json()["fields"][0]["field"] == "spec.local.memoryRequiredMi"
        assert accepted.status_code == 201, accepted.text
        assert accepted.json()["spec"]["local"]["allowMemoryRisk"] is True

    def test_an_estimate_shows_an_unknown_maximum_as_null(self, world: World) -> None:
        with world.dashboard.client("viewer") as client:
            estimate = client.post("/api/v1/models/estimate", json=cpu_fields()).json()
        assert "ramMaximumMi" in estimate
        assert estimate["ramMaximumMi"] is None or estimate["ramMaximumMi"] > 0

    def test_a_viewer_is_refused_with_the_missing_permission_named(self, world: World) -> None:
        with world.dashboard.client("viewer") as client:
            answer = client.post("/api/v1/models/local", json=cpu_model(unique("chat")))
        assert answer.status_code == 403
        message = answer.json()["message"]
        assert 'cannot create resource "modelactivations"' in message
        assert "oidc:victor" in message

    def test_a_stale_resource_version_is_answered_409_with_the_current_object(self, world: World) -> None:
        name = unique("edited")
        with world.dashboard.client("operator") as client:
            created = client.post("/api/v1/models/local", json=cpu_model(name)).json()
            seen = created["metadata"]["resourceVersion"]
            first = client.put(f"/api/v1/models/{name}", json={"resourceVersion": seen, "contextWindow": 2048})
            second = client.put(f"/api/v1/models/{name}", json={"resourceVersion": seen, "contextWindow": 1024})
        assert first.status_code == 200, first.text
        assert second.status_code == 409
        current = second.json()["current"]
        assert current["spec"]["local"]["contextWindow"] == 2048
        assert current["metadata"]["resourceVersion"] == first.json()["metadata"]["resourceVersion"]

    def test_the_source_is_immutable_in_edit(self, world: World) -> None:
        name = unique("fixed")
        with world.dashboard.client("operator") as client:
            created = client.post("/api/v1/models/local", json=cpu_model(name)).json()
            answer = client.put(
                f"/api/v1/models/{name}",
                json={"resourceVersion": created["metadata"]["resourceVersion"], "preset": "another-preset"},
            )
        assert answer.status_code == 422
        assert answer.json()["fields"][0]["field"] == "spec.local.preset"

    def test_a_freetoken_model_restarts_with_a_new_nonce_and_a_vllm_model_is_told_why_not(self, world: World) -> None:
        name = unique("token")
        body = {
            "apiVersion": "appliance.magicstick.dev/v1alpha1",
            "kind": "ModelActivation",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "type": "local",
                "local": {
                    "preset": "qwen2505bcpu",
                    "engine": "FreeToken",
                    "computeTarget": "nvidia-gpu",
                    "freetoken": {"gpuCount": 1},
                },
            },
        }
        created = world.admin.create(MODEL_ACTIVATION, body, field_manager="kubectl")
        with world.dashboard.client("operator") as client:
            restarted = client.put(
                f"/api/v1/models/{name}/restart", json={"resourceVersion": created["metadata"]["resourceVersion"]}
            )
            again = client.put(
                f"/api/v1/models/{name}/restart", json={"resourceVersion": created["metadata"]["resourceVersion"]}
            )
            vllm = client.post("/api/v1/models/local", json=cpu_model(unique("chat"))).json()
            refused = client.put(
                f"/api/v1/models/{vllm['metadata']['name']}/restart",
                json={"resourceVersion": vllm["metadata"]["resourceVersion"]},
            )
        assert restarted.status_code == 200, restarted.text
        freetoken = restarted.json()["spec"]["local"]["freetoken"]
        assert freetoken["gpuCount"] == 1 and uuid.UUID(freetoken["restartNonce"])
        assert again.status_code == 409
        assert refused.status_code == 422
        assert refused.json()["fields"][0]["field"] == "spec.local.engine"

    def test_an_external_model_breaking_the_crd_is_answered_422_with_the_crds_message(self, world: World) -> None:
        body = {
            "name": unique("ext"),
            "model": "openai/gpt-4o-mini",
            "apiBase": "ftp://api.example.com",
            "apiKeySecretRef": {"name": "llm-keys", "key": "CHANGEME"},
        }
        with world.dashboard.client("operator") as client:
            answer = client.post("/api/v1/models/external", json=body)
        assert answer.status_code == 422
        assert [problem["field"] for problem in answer.json()["fields"]] == ["spec.external.apiBase"]
        assert world.admin.get_or_none(MODEL_ACTIVATION, body["name"], NAMESPACE) is None


class TestModulesAndGpuParameters:
    def test_an_operator_enables_a_module(self, world: World) -> None:
        with world.dashboard.client("operator") as client:
            answer = client.put("/api/v1/modules/litellm", json={"enabled": True})
        assert answer.status_code in (200, 409), answer.text
        assert world.admin.get(MODULE_ACTIVATION, "litellm", NAMESPACE)["spec"]["enabled"] is True

    def test_an_operator_may_not_set_gpu_parameters_but_an_admin_may(self, world: World) -> None:
        with world.dashboard.client("operator") as client:
            enabled = client.put("/api/v1/modules/amd-gpu", json={"enabled": True})
            assert enabled.status_code == 200 or enabled.status_code == 201 or enabled.status_code == 409, enabled.text
            current = client.get("/api/v1/modules").json()
            amd = next(item for item in current if item["spec"]["module"] == "amd-gpu")
            refused = client.put(
                "/api/v1/modules/amd-gpu",
                json={
                    "resourceVersion": amd["metadata"]["resourceVersion"],
                    "enabled": True,
                    "parameters": {"allowExperimental": "true"},
                },
            )
        assert refused.status_code == 403
        assert "spec.parameters" in refused.json()["message"]
        with world.dashboard.client("admin") as client:
            allowed = client.put(
                "/api/v1/modules/amd-gpu",
                json={
                    "resourceVersion": amd["metadata"]["resourceVersion"],
                    "enabled": True,
                    "parameters": {"allowExperimental": "true"},
                },
            )
        assert allowed.status_code == 200, allowed.text
        assert allowed.json()["spec"]["parameters"] == {"allowExperimental": "true"}

    def test_gpu_sharing_changes_only_through_its_own_api_and_profile_edits_keep_it(
        self, world: World, node: dict[str, Any]
    ) -> None:
        with world.dashboard.client("admin") as client:
            client.put("/api/v1/modules/gpu", json={"enabled": True})
            gpu = next(item for item in client.get("/api/v1/modules").json() if item["spec"]["module"] == "gpu")
            shared = client.put(
                "/api/v1/modules/gpu/gpu-sharing",
                json={
                    "resourceVersion": gpu["metadata"]["resourceVersion"],
                    "mode": "shared",
                    "nodeName": node["metadata"]["name"],
                    "slots": 4,
                },
            )
            assert shared.status_code == 200, shared.text
            sharing = shared.json()["spec"]["parameters"]["gpuSharing"]
            edited = client.put(
                "/api/v1/modules/gpu",
                json={
                    "resourceVersion": shared.json()["metadata"]["resourceVersion"],
                    "enabled": True,
                    "parameters": {"gpuSharing": "{}"},
                },
            )
        assert '"time-slicing"' in sharing and node["metadata"]["uid"] in sharing and '"slots": 4' in sharing
        assert edited.status_code == 200, edited.text
        assert edited.json()["spec"]["parameters"]["gpuSharing"] == sharing

    def test_an_operator_may_not_change_gpu_sharing(self, world: World, node: dict[str, Any]) -> None:
        with world.dashboard.client("admin") as client:
            client.put("/api/v1/modules/gpu", json={"enabled": True})
        with world.dashboard.client("operator") as client:
            gpu = next(item for item in client.get("/api/v1/modules").json() if item["spec"]["module"] == "gpu")
            answer = client.put(
                "/api/v1/modules/gpu/gpu-sharing",
                json={
                    "resourceVersion": gpu["metadata"]["resourceVersion"],
                    "mode": "exclusive",
                    "nodeName": node["metadata"]["name"],
                },
            )
        assert answer.status_code == 403


class TestInstances:
    def test_an_edit_without_sharing_keeps_the_existing_restriction(self, world: World) -> None:
        name = unique("claw")
        sharing = {"mode": "selected", "users": ["0b8c6f2e-user"], "groups": []}
        with world.dashboard.client("operator") as client:
            created = client.post(
                "/api/v1/instances", json={"name": name, "application": "openclaw", "access": {"sharing": sharing}}
            )
            assert created.status_code == 201, created.text
            edited = client.put(
                f"/api/v1/instances/{name}",
                json={"resourceVersion": created.json()["metadata"]["resourceVersion"], "access": {"role": "operator"}},
            )
        assert edited.status_code == 200, edited.text
        assert edited.json()["spec"]["access"]["role"] == "operator"
        assert edited.json()["spec"]["access"]["sharing"] == sharing


class TestHostOperations:
    def test_an_admin_requests_a_cache_clear_bound_to_the_node_as_it_is(
        self, world: World, node: dict[str, Any]
    ) -> None:
        with world.dashboard.client("admin") as client:
            answer = client.post(
                "/api/v1/host-operations",
                json={
                    "action": "clear-model-cache",
                    "nodeName": node["metadata"]["name"],
                    "acknowledgeDisruption": True,
                    "planId": "cache-plan-1",
                },
            )
        assert answer.status_code == 201, answer.text
        spec = answer.json()["spec"]
        assert (spec["nodeUID"], spec["bootID"]) == (node["metadata"]["uid"], "boot-0001")
        assert uuid.UUID(spec["requestID"])
        assert spec["planId"] == "cache-plan-1"

    def test_a_client_cannot_choose_the_request_id(self, world: World, node: dict[str, Any]) -> None:
        request = {"action": "reboot", "nodeName": node["metadata"]["name"], "acknowledgeDisruption": True}
        with world.dashboard.client("admin") as client:
            chosen = client.post("/api/v1/host-operations", json={**request, "requestID": "one-request"})
        assert chosen.status_code == 422, chosen.text

    def test_each_request_gets_a_request_id_of_its_own(self, world: World, node: dict[str, Any]) -> None:
        request = {"action": "reboot", "nodeName": node["metadata"]["name"], "acknowledgeDisruption": True}
        with world.dashboard.client("admin") as client:
            first = client.post("/api/v1/host-operations", json=request)
            second = client.post("/api/v1/host-operations", json=request)
        assert (first.status_code, second.status_code) == (201, 201), (first.text, second.text)
        assert first.json()["spec"]["requestID"] != second.json()["spec"]["requestID"]

    def test_a_request_without_the_acknowledgement_is_answered_422(self, world: World, node: dict[str, Any]) -> None:
        with world.dashboard.client("admin") as client:
            answer = client.post(
                "/api/v1/host-operations",
                json={"action": "reboot", "nodeName": node["metadata"]["name"], "acknowledgeDisruption": False},
            )
        assert answer.status_code == 422
        assert answer.json()["fields"][0]["field"] == "acknowledgeDisruption"

    def test_an_operator_may_not_reboot_a_node(self, world: World, node: dict[str, Any]) -> None:
        with world.dashboard.client("operator") as client:
            answer = client.post(
                "/api/v1/host-operations",
                json={"action": "reboot", "nodeName": node["metadata"]["name"], "acknowledgeDisruption": True},
            )
        assert answer.status_code == 403


def test_the_api_server_down_gives_503_and_writes_nothing(world: World, tmp_path) -> None:
    kubeconfig = service_account_kubeconfig(world.cluster, world.admin, tmp_path / "down.kubeconfig")
    from tests.services.access_guard.process import free_port

    text = kubeconfig.read_text().replace(world.cluster.url, f"https://127.0.0.1:{free_port()}")
    kubeconfig.write_text(text)
    from tests.services.access_guard.issuer import JwksServer

    jwks = JwksServer(world.dashboard.keys)
    jwks.start()
    down = start_dashboard(kubeconfig=kubeconfig, jwks=jwks, keys=world.dashboard.keys, log=tmp_path / "down.log")
    try:
        with down.client("operator") as client:
            overview = client.get("/api/v1/overview")
            page = client.get("/")
            write = client.post("/api/v1/models/local", json=cpu_model(unique("never")))
    finally:
        down.stop()
        jwks.stop()
    assert overview.status_code == 503
    assert page.status_code == 503 and "API server unavailable" in page.text
    assert write.status_code == 503
