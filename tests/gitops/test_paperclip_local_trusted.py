"""Paperclip behind the shared sign-on: local_trusted, bound to loopback, reachable from the
Service only through a TCP proxy in the Pod that listens on the Pod IP."""

from __future__ import annotations

from typing import Any

import helm_python
import pytest

from tests.gitops.tree import in_repository, render_chart
from tests.support.crd_schema import upstream_registry

CHART = in_repository("./magic-cluster/apps/instances/paperclip")
PORT = 3100


def instance(**values: Any) -> dict:
    objects = render_chart(CHART, {"name": "default", **values}, release="paperclip-default", namespace="ai")
    (found,) = [o for o in objects if o["kind"] == "Instance"]
    assert upstream_registry().errors(found) == []
    return found


def env(container: dict) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_by_default_paperclip_trusts_its_callers_and_binds_to_loopback_only() -> None:
    spec = instance()["spec"]
    # The operator lists these after its own HOST and mode, so they are the ones Paperclip reads.
    assert {k: v for k, v in env(spec).items() if k in ("PAPERCLIP_DEPLOYMENT_MODE", "HOST")} == {
        "PAPERCLIP_DEPLOYMENT_MODE": "local_trusted",
        "HOST": "127.0.0.1",
    }
    assert spec["deployment"]["exposure"] == "private"


def test_a_proxy_in_the_pod_exposes_the_loopback_listener_on_the_pod_ip_only() -> None:
    spec = instance()["spec"]
    (proxy,) = [s for s in spec["sidecars"] if s["name"] == "loopback-proxy"]
    settings = env(proxy)
    assert settings["LISTEN_HOST"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert (settings["LISTEN_PORT"], settings["TARGET_HOST"], settings["TARGET_PORT"]) == (
        str(PORT),
        "127.0.0.1",
        str(PORT),
    )
    assert proxy["securityContext"]["allowPrivilegeEscalation"] is False
    assert proxy["securityContext"]["readOnlyRootFilesystem"] is True
    assert "ports" not in proxy, "the main container already declares the Service's port"
    assert spec["networking"]["service"]["port"] == PORT


def test_the_proxy_runs_the_same_image_as_paperclip() -> None:
    spec = instance(image={"repository": "registry.example.com/paperclip", "tag": "1.2.3"})["spec"]
    (proxy,) = spec["sidecars"]
    assert proxy["image"] == "registry.example.com/paperclip:1.2.3"
    (default,) = instance()["spec"]["sidecars"]
    assert default["image"] == "ghcr.io/paperclipinc/paperclip:latest"


def test_an_authenticated_instance_keeps_the_upstream_network_bind_and_no_proxy() -> None:
    spec = instance(deploymentMode="authenticated")["spec"]
    assert spec["deployment"]["mode"] == "authenticated"
    assert "HOST" not in env(spec) and "PAPERCLIP_DEPLOYMENT_MODE" not in env(spec)
    assert not spec.get("sidecars")


def test_an_unknown_deployment_mode_is_refused_by_the_values_schema() -> None:
    with pytest.raises(helm_python.HelmValuesError, match="deploymentMode"):
        instance(deploymentMode="open")
