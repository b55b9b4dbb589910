"""Helpers shared by the test suites (schema conformance, fixtures)."""
