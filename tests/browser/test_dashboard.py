"""The dashboard in real Chromium, against the test API server, as its users meet it.

Envoy's part (signing the user in and forwarding the ID token) is played by the browser
context: every request it sends carries a token the test issuer signed, in the header Envoy
would set. The controllers' part (the program and KubeAI writing statuses) is played by the
test through the API server's /status subresource, with observedGeneration as the program
writes it. Every wait is Playwright's own (a locator's expectation), bounded, never a sleep.
Each main page is saved as a screenshot (harness.save_screenshot) and checked by axe-core.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from providers.kinds import APP_INSTANCE, MODEL_ACTIVATION
from providers.kube import ResourceKind
from tests.browser.harness import assert_accessible, save_screenshot
from tests.cluster.apiserver import ClusterInfo
from tests.services.dashboard.world import NAMESPACE, TOKEN_HEADER, World, running_world

WAIT_MS = 15_000
"""The longest any expectation waits for the page (a status reaches an open page well within a second)."""


@pytest.fixture(scope="module")
def world(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield from running_world(cluster, tmp_path_factory.mktemp("dashboard-browser"))


def signed_in(browser: Browser, world: World, role: str) -> Iterator[Page]:
    context = browser.new_context(
        base_url=world.dashboard.url, extra_http_headers={TOKEN_HEADER: world.dashboard.token(role)}
    )
    context.set_default_timeout(WAIT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def operator(browser: Browser, world: World) -> Iterator[Page]:
    yield from signed_in(browser, world, "operator")


@pytest.fixture
def viewer(browser: Browser, world: World) -> Iterator[Page]:
    yield from signed_in(browser, world, "viewer")


def write_status(
    world: World, kind: ResourceKind, name: str, phase: str, *, ready: bool, extra: dict[str, Any] | None = None
) -> None:
    """What the program writes: phase, Ready of the current generation, observedGeneration."""
    obj = world.admin.get(kind, name, NAMESPACE)
    generation = obj["metadata"]["generation"]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": phase,
        "message": f"{phase} (written by the test's stand-in for the program)",
        "lastTransitionTime": now,
        "observedGeneration": generation,
    }
    status = {"phase": phase, "observedGeneration": generation, "conditions": [condition], **(extra or {})}
    body = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"name": name, "namespace": NAMESPACE},
        "status": status,
    }
    world.admin.apply(kind, body, field_manager="magicstick-status-stand-in", subresource="status")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def add_cpu_model(page: Page, name: str, *, memory_mi: int | None = None) -> None:
    page.goto("/models/new")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Model, engine, hardware and artifact").select_option("qwen2505bcpu|VLLM|cpu|bf16")
    if memory_mi is not None:
        page.get_by_label("RAM budget (MiB)").fill(str(memory_mi))
    page.get_by_role("button", name="Estimate memory").click()
    expect(page.get_by_role("heading", name="Memory estimate")).to_be_visible()


def test_an_operator_adds_a_cpu_model_and_sees_it_go_pending_starting_ready(operator: Page, world: World) -> None:
    name = unique("chat")
    add_cpu_model(operator, name)
    assert_accessible(operator, context="the add-a-local-model page with its estimate")
    save_screenshot(operator, "model-new")
    operator.get_by_role("button", name="Add model").click()
    expect(operator).to_have_url(f"{world.dashboard.url}/objects/modelactivations/{name}")
    expect(operator.locator("[data-live-status]")).to_have_text("Status updates: live.")
    phase = operator.locator(f'dd[data-key="ModelActivation/{name}"][data-field="phase"]')
    for step, ready in (("Pending", False), ("Starting", False), ("Ready", True)):
        write_status(world, MODEL_ACTIVATION, name, step, ready=ready)
        expect(phase).to_have_text(step)
    expect(operator.locator(f'dd[data-key="ModelActivation/{name}"][data-field="ready"]')).to_have_text("True")
    save_screenshot(operator, "model")
    assert_accessible(operator, context="a model's page")
    stored = world.admin.get(MODEL_ACTIVATION, name, NAMESPACE)
    assert stored["spec"]["local"]["kvCacheMemoryBytes"] > 0


def test_the_model_list_says_whether_a_model_is_in_the_model_cache(operator: Page, world: World) -> None:
    name = unique("cached")
    add_cpu_model(operator, name)
    operator.get_by_role("button", name="Add model").click()
    expect(operator).to_have_url(f"{world.dashboard.url}/objects/modelactivations/{name}")
    loaded = {"state": "Loaded", "message": "KubeAI has loaded the weights into cache profile magicstick-model-cache."}
    write_status(world, MODEL_ACTIVATION, name, "Ready", ready=True, extra={"modelCache": loaded})
    operator.goto("/models")
    row = operator.get_by_role("row").filter(has=operator.get_by_role("rowheader", name=name))
    expect(operator.get_by_role("columnheader", name="Model cache")).to_be_visible()
    expect(row.get_by_role("cell").nth(2)).to_contain_text("Loaded")
    expect(row.get_by_role("cell").nth(2)).to_contain_text(loaded["message"])


def test_an_oversized_model_is_added_only_through_the_warning_button(operator: Page, world: World) -> None:
    name = unique("tight")
    add_cpu_model(operator, name, memory_mi=512)
    expect(operator.locator("[data-risk]")).to_contain_text("spec.local.memoryRequiredMi")
    assert operator.get_by_role("button", name="Add model").count() == 0
    warning = operator.get_by_role("button", name="Add anyway, accepting the memory risk")
    expect(warning).to_have_class("warning")
    save_screenshot(operator, "model-new-warning")
    warning.click()
    expect(operator).to_have_url(f"{world.dashboard.url}/objects/modelactivations/{name}")
    assert world.admin.get(MODEL_ACTIVATION, name, NAMESPACE)["spec"]["local"]["allowMemoryRisk"] is True


@pytest.fixture
def application_server() -> Iterator[str]:
    """A stand-in for an instance's application, where its URL leads."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><html lang='en'><title>OpenClaw</title><h1>OpenClaw stand-in</h1></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_an_operator_creates_an_instance_and_opens_its_url_once_ready(
    operator: Page, world: World, application_server: str
) -> None:
    name = unique("claw")
    operator.goto("/instances")
    assert_accessible(operator, context="the instances page")
    operator.get_by_label("Name").fill(name)
    operator.get_by_label("Application").select_option("openclaw")
    operator.get_by_label("Exposure").select_option("local")
    operator.get_by_role("button", name="Create instance").click()
    expect(operator).to_have_url(f"{world.dashboard.url}/objects/appinstances/{name}")
    expect(operator.locator("[data-live-status]")).to_have_text("Status updates: live.")
    write_status(
        world, APP_INSTANCE, name, "Ready", ready=True, extra={"url": application_server, "accessGuardReady": True}
    )
    expect(operator.locator(f'dd[data-key="AppInstance/{name}"][data-field="ready"]')).to_have_text("True")
    operator.reload()
    link = operator.locator("[data-instance-url]")
    expect(link).to_have_attribute("href", application_server)
    save_screenshot(operator, "instance")
    link.click()
    expect(operator.get_by_role("heading", name="OpenClaw stand-in")).to_be_visible()
    operator.goto("/instances")
    save_screenshot(operator, "instances")


def test_a_viewer_is_refused_and_told_which_permission_is_missing(viewer: Page, world: World) -> None:
    add_cpu_model(viewer, unique("nope"))
    viewer.get_by_role("button", name="Add model").click()
    alert = viewer.get_by_role("alert")
    expect(alert).to_contain_text("403 Forbidden")
    expect(alert).to_contain_text('cannot create resource "modelactivations"')
    assert_accessible(viewer, context="a refusal")
    save_screenshot(viewer, "refused-as-viewer")


def test_a_concurrent_edit_gives_409_and_the_user_resolves_it(operator: Page, world: World) -> None:
    name = unique("edited")
    add_cpu_model(operator, name)
    operator.get_by_role("button", name="Add model").click()
    expect(operator).to_have_url(f"{world.dashboard.url}/objects/modelactivations/{name}")
    operator.get_by_label("Context window (tokens)").fill("2048")
    concurrent = world.admin.get(MODEL_ACTIVATION, name, NAMESPACE)
    concurrent["spec"]["local"]["maxNumSeqs"] = 3
    world.admin.request(
        "PUT", MODEL_ACTIVATION.object_path(name, NAMESPACE), body=concurrent, content_type="application/json"
    )
    operator.get_by_role("button", name="Save").click()
    expect(operator.get_by_role("alert")).to_contain_text("409")
    expect(operator.get_by_label("Context window (tokens)")).to_have_value("2048")
    expect(operator.get_by_label("Maximum sequences")).to_have_value("3")
    save_screenshot(operator, "conflict")
    operator.get_by_role("button", name="Save").click()
    expect(operator).to_have_url(f"{world.dashboard.url}/objects/modelactivations/{name}")
    local = world.admin.get(MODEL_ACTIVATION, name, NAMESPACE)["spec"]["local"]
    assert (local["contextWindow"], local["maxNumSeqs"]) == (2048, 3)


@pytest.mark.parametrize(
    "path, name",
    [("/", "overview"), ("/modules", "modules"), ("/models", "models"), ("/host-operations", "host-operations")],
)
def test_each_main_page_passes_axe_and_is_saved(operator: Page, path: str, name: str) -> None:
    operator.goto(path)
    expect(operator.locator("[data-live-status]")).to_have_text("Status updates: live.")
    assert_accessible(operator, context=f"the {name} page")
    save_screenshot(operator, name)


def test_screenshots_are_written_where_the_harness_keeps_artifacts(operator: Page) -> None:
    operator.goto("/")
    path: Path = save_screenshot(operator, "overview-check")
    assert path.read_bytes().startswith(b"\x89PNG")
