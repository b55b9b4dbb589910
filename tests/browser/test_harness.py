"""The browser harness itself, on pages served on 127.0.0.1 by a small HTTP server in a thread.

These prove that the harness the dashboard's browser suite stands on judges for real: axe-core,
run in Debian's chromium, finds an unlabelled input and passes the same page once it is labelled
(also under a Content-Security-Policy that forbids inline scripts, as the dashboard's may); a
screenshot is a full-page PNG in the artifacts directory; a click runs the page's script, which
asks the server, and the page changes.
"""

from __future__ import annotations

import struct
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import harness

STRICT_CSP = "default-src 'self'; script-src 'self'; style-src 'self'"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GREETING = "Hello from the server"


def _form_page(field_markup: str) -> str:
    return f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Add a model</title></head>
<body>
<main>
<h1>Add a model</h1>
<form action="/models" method="post">
{field_markup}
<button type="submit">Add</button>
</form>
</main>
</body>
</html>"""


UNLABELLED_FORM = _form_page('<input id="model-name" name="name" type="text">')
LABELLED_FORM = _form_page('<label for="model-name">Name</label>\n<input id="model-name" name="name" type="text">')

TALL_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Tall</title><link rel="stylesheet" href="/tall.css"></head>
<body><main><h1>Top</h1><div class="filler"></div><p>Bottom</p></main></body>
</html>"""
TALL_CSS = "body { margin: 0; } .filler { height: 2600px; background: #dfe7ef; }"

CLICK_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Greeting</title><script src="/greet.js" defer></script></head>
<body><main>
<h1>Greeting</h1>
<button type="button" id="greet">Greet</button>
<p id="greeting" role="status">Not greeted yet</p>
</main></body>
</html>"""
GREET_JS = """document.getElementById("greet").addEventListener("click", async () => {
    const answer = await fetch("/greeting", { method: "POST" });
    document.getElementById("greeting").textContent = await answer.text();
});"""


@dataclass(frozen=True)
class Resource:
    body: str
    content_type: str = "text/html; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Site:
    """Pages served on 127.0.0.1 (GET by path; POST /greeting answers with a greeting), and the
    requests the server received, in order."""

    base_url: str
    resources: dict[str, Resource]
    requests: list[tuple[str, str]]

    def url(self, path: str) -> str:
        return self.base_url + path


@pytest.fixture
def site() -> Iterator[Site]:
    resources: dict[str, Resource] = {}
    requests: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, resource: Resource) -> None:
            body = resource.body.encode()
            self.send_response(status)
            self.send_header("Content-Type", resource.content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in resource.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            requests.append(("GET", self.path))
            resource = resources.get(self.path)
            if resource is None:
                self._answer(404, Resource("not found", "text/plain"))
            else:
                self._answer(200, resource)

        def do_POST(self) -> None:
            requests.append(("POST", self.path))
            if self.path == "/greeting":
                self._answer(200, Resource(GREETING, "text/plain"))
            else:
                self._answer(404, Resource("not found", "text/plain"))

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="browser-harness-site", daemon=True)
    thread.start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}", resources, requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk; fails unless the file is a PNG."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert data[12:16] == b"IHDR", f"{path} has no IHDR chunk first"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# --- axe-core ----------------------------------------------------------------------------------


def test_axe_finds_the_unlabelled_input_and_the_check_fails_listing_it(site: Site, page: Page) -> None:
    site.resources["/form"] = Resource(UNLABELLED_FORM)
    page.goto(site.url("/form"))

    with pytest.raises(AssertionError) as failure:
        harness.assert_accessible(page, context="the add-model form without a label")

    message = str(failure.value)
    assert "on the add-model form without a label" in message
    assert "- label (critical): Form elements must have labels" in message
    assert "\n    #model-name" in message
    report = harness.run_axe(page)
    assert [(v.id, v.impact, v.targets) for v in report.violations] == [("label", "critical", ("#model-name",))]


def test_the_same_page_with_a_label_passes_the_check(site: Site, page: Page) -> None:
    site.resources["/form"] = Resource(LABELLED_FORM)
    page.goto(site.url("/form"))

    report = harness.assert_accessible(page, context="the add-model form with a label")

    assert report.violations == ()
    assert report.passes > 0, "axe ran no rule that passed: it did not check the page"
    assert page.evaluate("() => axe.version") == harness.axe_core_version()


def test_axe_runs_on_a_page_whose_content_security_policy_forbids_inline_scripts(site: Site, page: Page) -> None:
    site.resources["/form"] = Resource(UNLABELLED_FORM, headers={"Content-Security-Policy": STRICT_CSP})
    page.goto(site.url("/form"))
    # The policy holds in this page: an inline script added now is refused.
    page.evaluate("""() => {
        const script = document.createElement("script");
        script.textContent = "window.inlineScriptRan = true";
        document.head.append(script);
    }""")
    assert page.evaluate("() => window.inlineScriptRan === true") is False

    assert [v.id for v in harness.run_axe(page).violations] == ["label"]


# --- screenshots -------------------------------------------------------------------------------


def test_a_screenshot_is_a_full_page_png_in_the_artifacts_directory(
    site: Site, page: Page, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(harness.ARTIFACTS_ENV, str(tmp_path / "artifacts"))
    site.resources["/tall"] = Resource(TALL_PAGE)
    site.resources["/tall.css"] = Resource(TALL_CSS, "text/css")
    page.goto(site.url("/tall"))
    document_height = page.evaluate("() => document.documentElement.scrollHeight")
    viewport = page.viewport_size
    assert viewport is not None and document_height > viewport["height"]

    path = harness.save_screenshot(page, "tall-page")

    assert path == tmp_path / "artifacts" / "browser" / "tall-page.png"
    assert _png_size(path) == (viewport["width"], document_height)


def test_artifacts_go_under_the_cache_unless_the_environment_names_a_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(harness.ARTIFACTS_ENV, raising=False)

    assert (
        harness.screenshot_path("overview")
        == Path.home() / ".cache" / "magicstick" / "artifacts" / "browser" / "overview.png"
    )


@pytest.mark.parametrize("name", ["../overview", "pages/overview", ".hidden", ""])
def test_a_screenshot_name_is_one_plain_path_component(name: str) -> None:
    with pytest.raises(ValueError, match="screenshot name"):
        harness.screenshot_path(name)


# --- driving the browser -----------------------------------------------------------------------


def test_a_click_on_a_button_runs_the_page_script_which_asks_the_server(site: Site, page: Page) -> None:
    site.resources["/greet"] = Resource(CLICK_PAGE)
    site.resources["/greet.js"] = Resource(GREET_JS, "text/javascript")
    page.goto(site.url("/greet"))
    greeting = page.get_by_role("status")
    expect(greeting).to_have_text("Not greeted yet")

    page.get_by_role("button", name="Greet").click()

    expect(greeting).to_have_text(GREETING)
    assert ("POST", "/greeting") in site.requests


def test_the_browser_is_the_located_chromium_launched_with_the_harness_flags(browser: Browser, page: Page) -> None:
    answer = subprocess.run([harness.chromium_path(), "--version"], capture_output=True, text=True, check=True).stdout
    assert answer.startswith(f"Chromium {browser.version} ")

    page.goto("chrome://version")
    command_line = page.locator("#command_line").inner_text().split()
    assert set(harness.LAUNCH_FLAGS) <= set(command_line)
    profiles = [flag for flag in command_line if flag.startswith("--user-data-dir=")]
    assert len(profiles) == 1 and "playwright" in profiles[0], f"not a fresh Playwright profile: {profiles}"


# --- locating the tools and the marker ---------------------------------------------------------


def test_a_missing_chromium_fails_naming_the_setup_script(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(harness.CHROMIUM_ENV, str(tmp_path / "no-chromium"))

    with pytest.raises(
        harness.BrowserToolMissing, match=r"chromium not found at .*no-chromium .*scripts/browser/setup\.sh"
    ):
        harness.chromium_path()


def test_a_missing_axe_core_fails_naming_the_setup_script(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(harness.AXE_CORE_ENV, raising=False)
    monkeypatch.setenv(harness.BROWSER_CACHE_ENV, str(tmp_path / "empty-cache"))
    expected = (
        tmp_path / "empty-cache" / f"axe-core-{harness.axe_core_version()}" / "node_modules" / "axe-core" / "axe.min.js"
    )

    with pytest.raises(harness.BrowserToolMissing) as missing:
        harness.axe_core_path()

    assert f"axe.min.js not found at {expected}" in str(missing.value)
    assert "scripts/browser/setup.sh" in str(missing.value)


def test_every_test_in_this_directory_is_marked_browser(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("browser") is not None
