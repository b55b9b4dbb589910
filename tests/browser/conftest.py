"""Fixtures of the browser suite, and its marker.

Every test under tests/browser is marked `browser` at collection (tests/conftest.py): the suite
needs Debian's chromium and axe-core (scripts/browser/setup.sh), which the pure suite must not. One
Chromium runs per test module (`browser`), not per session: Playwright's sync API keeps an event
loop running on the test thread while it is open, and the suites that run after the browser's
in the same process (the dashboard's stream tests) start event loops of their own. Each test
gets its own context and page (`page`), so no cookie, storage or open page leaks from one test
into the next.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.browser import harness


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's chromium, headless, launched by Playwright through `executable_path` with
    harness.LAUNCH_FLAGS. A missing chromium fails the test with the command that installs it."""
    try:
        executable = harness.chromium_path()
    except harness.BrowserToolMissing as error:
        pytest.fail(str(error), pytrace=False)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, headless=True, args=list(harness.LAUNCH_FLAGS)
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page in a new browser context of its own, closed (with the context) after the test."""
    context = browser.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()
