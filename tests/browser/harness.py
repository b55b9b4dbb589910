"""The browser suite's harness: where Chromium and axe-core are, how Chromium is launched, the
accessibility check and the screenshots.

Chromium is Debian's package (`/usr/bin/chromium`), driven by Playwright's Python package through
`executable_path`: Playwright never downloads a browser here. axe-core comes from the npm
registry at the version pinned in `scripts/browser/versions.env`, the file
`scripts/browser/setup.sh` installs from, so the tests and the setup never disagree. Both are
found, never installed here: `$MAGICSTICK_CHROMIUM` and `$MAGICSTICK_AXE_CORE` name them
explicitly, else the defaults below. A missing one is an error naming the command that installs
it, never a skip.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from playwright.sync_api import Page

from tests.toolchain import REPO_ROOT, parse_versions

SETUP_SCRIPT: Final = REPO_ROOT / "scripts" / "browser" / "setup.sh"
VERSIONS_FILE: Final = REPO_ROOT / "scripts" / "browser" / "versions.env"
CHROMIUM_ENV: Final = "MAGICSTICK_CHROMIUM"
AXE_CORE_ENV: Final = "MAGICSTICK_AXE_CORE"
BROWSER_CACHE_ENV: Final = "MAGICSTICK_BROWSER_CACHE"
ARTIFACTS_ENV: Final = "MAGICSTICK_ARTIFACTS_DIR"
DEFAULT_CHROMIUM: Final = Path("/usr/bin/chromium")

LAUNCH_FLAGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Chromium's flags on this machine. Without the background-networking ones Chromium keeps
dialling Google's hosts, which the closed network refuses. The new empty `--user-data-dir` is
Playwright's own: `launch()` gives every browser a fresh temporary profile (and refuses the flag
in `args`)."""

WCAG_TAGS: Final = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa")
"""The axe-core rules run: every WCAG 2 rule at level A or AA (2.0, 2.1 and 2.2). axe's
best-practice and experimental rules are not run."""

SCREENSHOT_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class BrowserToolMissing(Exception):
    """Chromium or axe-core is not where the suite looks; the message says how to install it."""


@dataclass(frozen=True)
class Violation:
    """One axe-core rule a page breaks, with the CSS selectors of the offending nodes (a node
    inside a frame or a shadow root has one selector per level, joined with ` >> `)."""

    id: str
    impact: str
    help: str
    help_url: str
    targets: tuple[str, ...]


@dataclass(frozen=True)
class AxeReport:
    """What one axe-core run found: the violations, and how many rules passed or need a
    person's review (axe's `incomplete`, which the check does not fail on)."""

    violations: tuple[Violation, ...]
    passes: int
    incomplete: int


def _setup_hint(env: str) -> str:
    return (
        f"Install Debian's package chromium (as root), then run {SETUP_SCRIPT.relative_to(REPO_ROOT)} "
        f"(axe-core into ${BROWSER_CACHE_ENV} or ~/.cache/magicstick/browser/), or point ${env} at it."
    )


@cache
def axe_core_version() -> str:
    """The pinned axe-core version of scripts/browser/versions.env."""
    return parse_versions(VERSIONS_FILE.read_text())["AXE_CORE_VERSION"]


def browser_cache_dir() -> Path:
    override = os.environ.get(BROWSER_CACHE_ENV)
    return Path(override) if override else Path.home() / ".cache" / "magicstick" / "browser"


def chromium_path() -> Path:
    """Debian's chromium, or `$MAGICSTICK_CHROMIUM` when set; it must be an executable file."""
    explicit = os.environ.get(CHROMIUM_ENV)
    path = Path(explicit) if explicit else DEFAULT_CHROMIUM
    if not (path.is_file() and os.access(path, os.X_OK)):
        origin = f"${CHROMIUM_ENV}" if explicit else "Debian's package chromium"
        raise BrowserToolMissing(f"chromium not found at {path} ({origin}). {_setup_hint(CHROMIUM_ENV)}")
    return path


def axe_core_path() -> Path:
    """axe.min.js of the pinned axe-core in the setup's cache, or `$MAGICSTICK_AXE_CORE` when set."""
    explicit = os.environ.get(AXE_CORE_ENV)
    if explicit:
        path = Path(explicit)
    else:
        path = browser_cache_dir() / f"axe-core-{axe_core_version()}" / "node_modules" / "axe-core" / "axe.min.js"
    if not path.is_file():
        origin = f"${AXE_CORE_ENV}" if explicit else f"axe-core {axe_core_version()} in the browser cache"
        raise BrowserToolMissing(f"axe.min.js not found at {path} ({origin}). {_setup_hint(AXE_CORE_ENV)}")
    return path


def artifacts_dir() -> Path:
    """Where the browser suite's screenshots go: `<artifacts>/browser/`, the artifacts directory
    being `$MAGICSTICK_ARTIFACTS_DIR`, else ~/.cache/magicstick/artifacts (outside the
    repository, so a test run never dirties the tree)."""
    override = os.environ.get(ARTIFACTS_ENV)
    root = Path(override) if override else Path.home() / ".cache" / "magicstick" / "artifacts"
    return root / "browser"


_RUN_AXE: Final = """async (tags) => {
    const results = await axe.run(document, { runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] });
    return {
        violations: results.violations.map((rule) => ({
            id: rule.id,
            impact: rule.impact || "unknown",
            help: rule.help,
            helpUrl: rule.helpUrl,
            targets: rule.nodes.map((node) => node.target.flat().join(" >> ")),
        })),
        passes: results.passes.length,
        incomplete: results.incomplete.length,
    };
}"""
"""Runs axe-core on the whole document. `resultTypes` only trims the nodes axe lists for passes
and review items; the counts stay whole."""


def _report(raw: Any) -> AxeReport:
    """The axe run's answer as typed values. Pure."""
    violations = tuple(
        Violation(id=v["id"], impact=v["impact"], help=v["help"], help_url=v["helpUrl"], targets=tuple(v["targets"]))
        for v in raw["violations"]
    )
    return AxeReport(violations=violations, passes=int(raw["passes"]), incomplete=int(raw["incomplete"]))


def run_axe(page: Page) -> AxeReport:
    """Injects the pinned axe-core into the page's main frame (once per document) and runs the
    WCAG 2 A/AA rules. The script is evaluated through the DevTools protocol, so a page whose
    Content-Security-Policy forbids inline or foreign scripts is checked as it is served."""
    if not page.evaluate("() => typeof window.axe === 'object' && typeof window.axe.run === 'function'"):
        page.evaluate(_axe_source(axe_core_path()))
    return _report(page.evaluate(_RUN_AXE, list(WCAG_TAGS)))


@cache
def _axe_source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def describe_violations(violations: tuple[Violation, ...]) -> str:
    """One paragraph per violation: id, impact, help, the rule's page and each offending node's
    selector. Pure."""
    lines = []
    for violation in violations:
        lines.append(f"- {violation.id} ({violation.impact}): {violation.help} [{violation.help_url}]")
        lines.extend(f"    {target}" for target in violation.targets)
    return "\n".join(lines)


def assert_accessible(page: Page, *, context: str) -> AxeReport:
    """Fails (AssertionError) when axe-core finds any WCAG 2 A/AA violation on the page as it is
    now; `context` names the page and state in the message ("overview as a viewer"). Returns the
    report when there is none."""
    report = run_axe(page)
    if report.violations:
        raise AssertionError(
            f"axe-core {axe_core_version()} found {len(report.violations)} WCAG 2 A/AA violation(s) "
            f"on {context} ({page.url}):\n{describe_violations(report.violations)}"
        )
    return report


def screenshot_path(name: str) -> Path:
    """Where `save_screenshot(page, name)` writes: `<artifacts>/browser/<name>.png`. The name is
    one path component (letters, digits, `.`, `_`, `-`), so no screenshot lands outside the
    directory."""
    if not SCREENSHOT_NAME.fullmatch(name):
        raise ValueError(
            f"screenshot name {name!r}: letters, digits, '.', '_' and '-' only, starting with a letter or digit"
        )
    return artifacts_dir() / f"{name}.png"


def save_screenshot(page: Page, name: str) -> Path:
    """Writes a full-page PNG of the page as it is now and returns its path (an existing one is
    replaced)."""
    path = screenshot_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=path, full_page=True, type="png")
    return path
