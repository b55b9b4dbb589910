"""Changes from other sites, against the running dashboard and the test API server.

Every write of the dashboard, its page forms and its JSON API, is sent as a browser on another
site would send it (a foreign `Origin`, `Origin: null`, no `Origin` at all, `Sec-Fetch-Site:
cross-site` or `same-site`), by an administrator whose sign-in the request carries. Each must be
refused with 403, and the API server must hold exactly what it held before: every runtime
request of the system namespace keeps its resourceVersion. The same requests from the
dashboard's own pages, with their form token, are accepted: the refusals are not a door shut on
everyone.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest

from providers.kinds import APP_INSTANCE
from services.dashboard.protection import CONTENT_SECURITY_POLICY, FORM_TOKEN_FIELD
from tests.services.dashboard.world import NAMESPACE, World, held, registered_node

pytestmark = pytest.mark.usefixtures("world")

FOREIGN = "https://evil.example.com"
FORM_TOKEN = re.compile(rf'name="{FORM_TOKEN_FIELD}" value="([^"]*)"')
NODE_NAME = "cross-site-node"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def node(world: World) -> dict[str, Any]:
    """A Node with a boot ID, so that a reboot request names a real target."""
    return registered_node(world.admin, NODE_NAME)


@pytest.fixture(scope="module")
def model(world: World) -> dict[str, Any]:
    """An existing local model, for the edit and restart forms."""
    with world.dashboard.client("operator") as client:
        created = client.post(
            "/api/v1/models/local",
            json={"name": unique("xs-model"), "preset": "qwen2505bcpu", "engine": "VLLM", "computeTarget": "cpu"},
        )
    assert created.status_code == 201, created.text
    return dict(created.json())


@pytest.fixture(scope="module")
def instance(world: World) -> dict[str, Any]:
    with world.dashboard.client("operator") as client:
        created = client.post("/api/v1/instances", json={"name": unique("xs-instance"), "application": "openclaw"})
    assert created.status_code == 201, created.text
    return dict(created.json())


def form_writes(
    node: dict[str, Any], model: dict[str, Any], instance: dict[str, Any]
) -> list[tuple[str, dict[str, str]]]:
    """Every page form, filled as its user would fill it."""
    model_name, model_version = model["metadata"]["name"], model["metadata"]["resourceVersion"]
    instance_name, instance_version = instance["metadata"]["name"], instance["metadata"]["resourceVersion"]
    return [
        ("/host-operations", {"operation": "reboot", "node": node["metadata"]["name"], "acknowledgeDisruption": "on"}),
        ("/modules/litellm", {"enabled": "on"}),
        (
            "/modules/gpu/gpu-sharing",
            {"resourceVersion": "1", "mode": "shared", "node": node["metadata"]["name"], "slots": "4"},
        ),
        ("/instances", {"name": unique("xs-new"), "application": "openclaw", "role": "user"}),
        ("/models/new", {"name": unique("xs-new"), "variant": "qwen2505bcpu|VLLM|cpu|", "allowMemoryRisk": "on"}),
        (
            "/models/external/new",
            {"name": unique("xs-ext"), "model": "gpt-4o", "apiBase": "https://llm.example.com/v1"},
        ),
        (f"/models/{model_name}/edit", {"resourceVersion": model_version, "enabled": "", "contextWindow": "2048"}),
        (f"/models/{model_name}/restart", {"resourceVersion": model_version}),
        (f"/instances/{instance_name}/edit", {"resourceVersion": instance_version, "enabled": "", "role": "admin"}),
    ]


def api_writes(
    node: dict[str, Any], model: dict[str, Any], instance: dict[str, Any]
) -> list[tuple[str, str, dict[str, Any]]]:
    """Every write of the JSON API, with a body it would accept."""
    model_name, model_version = model["metadata"]["name"], model["metadata"]["resourceVersion"]
    instance_name, instance_version = instance["metadata"]["name"], instance["metadata"]["resourceVersion"]
    return [
        (
            "POST",
            "/api/v1/host-operations",
            {"action": "reboot", "nodeName": node["metadata"]["name"], "acknowledgeDisruption": True},
        ),
        ("PUT", "/api/v1/modules/litellm", {"enabled": True}),
        (
            "PUT",
            "/api/v1/modules/gpu/gpu-sharing",
            {"resourceVersion": "1", "mode": "exclusive", "nodeName": node["metadata"]["name"]},
        ),
        ("POST", "/api/v1/instances", {"name": unique("xs-new"), "application": "openclaw"}),
        ("POST", "/api/v1/models/local", {"name": unique("xs-new"), "preset": "qwen2505bcpu", "allowMemoryRisk": True}),
        ("POST", "/api/v1/models/external", {"name": unique("xs-ext"), "model": "gpt-4o"}),
        ("PUT", f"/api/v1/models/{model_name}", {"resourceVersion": model_version, "enabled": False}),
        ("PUT", f"/api/v1/models/{model_name}/restart", {"resourceVersion": model_version}),
        (
            "PUT",
            f"/api/v1/instances/{instance_name}",
            {"resourceVersion": instance_version, "access": {"role": "admin"}},
        ),
    ]


SOURCES: dict[str, dict[str, str]] = {
    "a foreign Origin": {"Origin": FOREIGN},
    "Origin null": {"Origin": "null"},
    "Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": "cross-site", "Origin": FOREIGN},
    "Sec-Fetch-Site same-site": {"Sec-Fetch-Site": "same-site", "Origin": "https://openclaw.example.local"},
    "a foreign Referer": {"Referer": f"{FOREIGN}/page.html"},
}
"""How a browser on another site sends a request (a form post, or `fetch` in no-cors mode)."""


def form_token(client: httpx.Client, page: str) -> str:
    answer = client.get(page)
    assert answer.status_code == 200, answer.text
    found = FORM_TOKEN.search(answer.text)
    assert found, f"{page} has no form token"
    return found.group(1)


class TestChangesFromAnotherSite:
    @pytest.mark.parametrize("source", [*SOURCES, "no Origin or Referer"])
    def test_no_page_form_posted_from_another_site_changes_anything(
        self, world: World, node: dict[str, Any], model: dict[str, Any], instance: dict[str, Any], source: str
    ) -> None:
        before = held(world)
        with world.dashboard.client("admin") as client:
            token = form_token(client, "/host-operations")
            for path, data in form_writes(node, model, instance):
                answer = client.post(path, data={**data, FORM_TOKEN_FIELD: token}, headers=SOURCES.get(source, {}))
                assert answer.status_code == 403, f"POST {path} with {source}: {answer.status_code}"
                assert "did not come from one of its own pages" in answer.text
        assert held(world) == before

    @pytest.mark.parametrize("source", list(SOURCES))
    def test_no_api_write_sent_from_another_site_changes_anything(
        self, world: World, node: dict[str, Any], model: dict[str, Any], instance: dict[str, Any], source: str
    ) -> None:
        before = held(world)
        with world.dashboard.client("admin") as client:
            for method, path, body in api_writes(node, model, instance):
                answer = client.request(method, path, json=body, headers=SOURCES[source])
                assert answer.status_code == 403, f"{method} {path} with {source}: {answer.status_code}"
                assert answer.json()["error"] == "CrossSiteRequest"
        assert held(world) == before

    @pytest.mark.parametrize(
        "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"]
    )
    def test_no_api_write_with_a_body_other_than_json_changes_anything(
        self, world: World, node: dict[str, Any], model: dict[str, Any], instance: dict[str, Any], content_type: str
    ) -> None:
        before = held(world)
        with world.dashboard.client("admin") as client:
            for method, path, body in api_writes(node, model, instance):
                answer = client.request(
                    method,
                    path,
                    content=httpx.Request("POST", "/", json=body).content,
                    headers={"Content-Type": content_type},
                )
                assert answer.status_code == 415, f"{method} {path} as {content_type}: {answer.status_code}"
        assert held(world) == before


class TestFormTokens:
    def test_a_form_from_the_dashboards_own_page_without_its_token_changes_nothing(
        self, world: World, node: dict[str, Any], model: dict[str, Any], instance: dict[str, Any]
    ) -> None:
        before = held(world)
        with world.dashboard.client("admin") as client:
            for path, data in form_writes(node, model, instance):
                answer = client.post(path, data=data, headers={"Origin": world.dashboard.url})
                assert answer.status_code == 403, f"POST {path}: {answer.status_code}"
                assert "Reload the page" in answer.text
        assert held(world) == before

    def test_a_token_issued_to_another_user_changes_nothing(self, world: World) -> None:
        before = held(world)
        with world.dashboard.client("viewer") as viewer:
            stolen = form_token(viewer, "/instances")
        with world.dashboard.client("admin") as client:
            answer = client.post(
                "/instances",
                data={"name": unique("xs-stolen"), "application": "openclaw", FORM_TOKEN_FIELD: stolen},
                headers={"Origin": world.dashboard.url},
            )
        assert answer.status_code == 403
        assert held(world) == before

    def test_a_form_of_the_dashboards_own_page_with_its_token_is_accepted(self, world: World) -> None:
        name = unique("xs-own")
        with world.dashboard.client("operator") as client:
            token = form_token(client, "/instances")
            answer = client.post(
                "/instances",
                data={"name": name, "application": "openclaw", "role": "user", FORM_TOKEN_FIELD: token},
                headers={"Origin": world.dashboard.url, "Sec-Fetch-Site": "same-origin"},
            )
        assert answer.status_code == 303, answer.text
        assert world.admin.get_or_none(APP_INSTANCE, name, NAMESPACE) is not None

    def test_an_api_client_that_is_not_a_browser_still_writes(self, world: World) -> None:
        name = unique("xs-api")
        with world.dashboard.client("operator") as client:
            answer = client.post("/api/v1/instances", json={"name": name, "application": "openclaw"})
        assert answer.status_code == 201, answer.text


class TestProtectiveHeaders:
    @pytest.mark.parametrize(
        "path",
        [
            "/",
            "/modules",
            "/models/new",
            "/instances",
            "/host-operations",
            "/api/v1/overview",
            "/api/v1/me",
            "/no-such-page",
        ],
    )
    def test_every_page_and_answer_carries_them_and_names_no_server_software(self, world: World, path: str) -> None:
        with world.dashboard.client("admin") as client:
            answer = client.get(path)
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "same-origin"
        assert answer.headers["cache-control"] == "no-store"
        assert "server" not in answer.headers

    def test_an_unsigned_request_gets_them_too(self, world: World) -> None:
        with world.dashboard.client() as client:
            answer = client.get("/")
        assert answer.status_code == 401
        assert answer.headers["x-frame-options"] == "DENY" and "server" not in answer.headers
