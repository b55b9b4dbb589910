"""Another site against a signed-in administrator's dashboard, in real Chromium.

The browser context plays the signed-in user as test_dashboard.py does: every request it sends
carries the administrator's ID token, as Envoy's session cookie would sign in any request the
browser sends to the dashboard's host, whichever page made it. The other site is a page served
from another origin: `localhost` (another site for a dashboard at 127.0.0.1) and 127.0.0.1 on
another port (the same site, as an application on a sibling host of the dashboard's domain is).
Its forms post by themselves and its frames load the dashboard; the API server must hold
exactly what it held before. Under the dashboard's Content-Security-Policy, its own pages must
report no violation, stay accessible (axe-core) and keep their live updates.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from providers.kinds import MODEL_ACTIVATION
from tests.browser.harness import assert_accessible
from tests.browser.test_dashboard import WAIT_MS, signed_in, unique, write_status
from tests.cluster.apiserver import ClusterInfo
from tests.services.dashboard.world import World, held, registered_node, running_world

NODE_NAME = "cross-site-browser-node"
VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""
"""Collects the page's Content-Security-Policy violations (an init script, run before the page's own)."""


@pytest.fixture(scope="module")
def world(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield from running_world(cluster, tmp_path_factory.mktemp("dashboard-cross-site"))


@pytest.fixture
def admin(browser: Browser, world: World) -> Iterator[Page]:
    yield from signed_in(browser, world, "admin")


@pytest.fixture
def operator(browser: Browser, world: World) -> Iterator[Page]:
    yield from signed_in(browser, world, "operator")


@pytest.fixture(scope="module")
def node(world: World) -> dict[str, Any]:
    return registered_node(world.admin, NODE_NAME)


class OtherSite:
    """A page of another origin, serving whatever HTML the test gives it at /."""

    def __init__(self, host: str) -> None:
        self.html = b""
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(site.html)))
                self.end_headers()
                self.wfile.write(site.html)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def serve(self, html: str) -> str:
        self.html = html.encode()
        return self.url


@pytest.fixture(params=["localhost", "127.0.0.1"], ids=["another-site", "the-same-site-another-origin"])
def other_site(request: pytest.FixtureRequest) -> Iterator[OtherSite]:
    site = OtherSite(request.param)
    site.thread.start()
    try:
        yield site
    finally:
        site.server.shutdown()
        site.server.server_close()


def self_posting_form(action: str, fields: dict[str, str]) -> str:
    inputs = "".join(f'<input type="hidden" name="{name}" value="{value}">' for name, value in fields.items())
    return f"""<!doctype html><html lang="en"><title>Win a prize</title>
<form id="f" method="post" action="{action}">{inputs}</form>
<script>document.getElementById("f").submit();</script></html>"""


@pytest.mark.parametrize(
    ("path", "fields"),
    [
        ("/host-operations", {"operation": "reboot", "node": NODE_NAME, "acknowledgeDisruption": "on"}),
        ("/modules/litellm", {"enabled": "on"}),
        ("/instances", {"name": "won-a-prize", "application": "openclaw"}),
    ],
)
def test_a_form_another_site_posts_is_refused_and_changes_nothing(
    admin: Page, world: World, node: dict[str, Any], other_site: OtherSite, path: str, fields: dict[str, str]
) -> None:
    before = held(world)
    admin.goto(other_site.serve(self_posting_form(f"{world.dashboard.url}{path}", fields)))
    expect(admin).to_have_url(f"{world.dashboard.url}{path}")
    expect(admin.get_by_role("heading", name="Not allowed")).to_be_visible()
    expect(admin.get_by_role("alert")).to_contain_text("did not come from one of its own pages")
    assert held(world) == before


def test_another_site_cannot_frame_the_dashboard(admin: Page, world: World, other_site: OtherSite) -> None:
    page = f"""<!doctype html><html lang="en"><title>Framed</title>
<iframe title="framed" src="{world.dashboard.url}/host-operations"></iframe></html>"""
    admin.goto(other_site.serve(page))
    admin.wait_for_load_state("load")
    frames = [frame for frame in admin.frames if frame is not admin.main_frame]
    assert len(frames) == 1
    framed = admin.frame_locator("iframe")
    expect(framed.get_by_role("heading", name="Host operations")).to_have_count(0)
    expect(framed.get_by_role("button")).to_have_count(0)


def test_the_pages_report_no_policy_violation_keep_live_updates_and_pass_axe(operator: Page, world: World) -> None:
    operator.add_init_script(VIOLATIONS)
    name = unique("csp")
    with world.dashboard.client("operator") as client:
        created = client.post(
            "/api/v1/models/local", json={"name": name, "preset": "qwen2505bcpu", "allowMemoryRisk": True}
        )
    assert created.status_code == 201, created.text
    for path in (
        "/",
        "/modules",
        "/models",
        "/models/new",
        "/instances",
        "/host-operations",
        f"/objects/modelactivations/{name}",
    ):
        operator.goto(path)
        expect(operator.locator("[data-live-status]")).to_have_text("Status updates: live.")
        assert_accessible(operator, context=f"{path} under the Content-Security-Policy")
        assert operator.evaluate("window.__cspViolations") == [], path
    write_status(world, MODEL_ACTIVATION, name, "Ready", ready=True)
    expect(operator.locator(f'dd[data-key="ModelActivation/{name}"][data-field="phase"]')).to_have_text(
        "Ready", timeout=WAIT_MS
    )
    assert operator.evaluate("window.__cspViolations") == []
