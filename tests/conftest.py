"""Shared pytest configuration: the real kube-apiserver fixtures."""

pytest_plugins = ["tests.cluster.conftest_plugin"]
