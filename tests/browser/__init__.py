"""The browser suite (marker `browser`): pages in Debian's chromium driven by Playwright, with
axe-core's accessibility check and screenshots as artifacts (tests/browser/harness.py)."""
