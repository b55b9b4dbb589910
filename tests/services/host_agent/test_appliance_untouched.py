"""Host actions never mutate the Git-owned Appliance: its spec is what Flux applies from Git
(magic-cluster/platform/magicstick-operator/default-appliance.yaml), and no HostOperation may
change it.

Two independent guards, each tested against the test API server:

- the identity as deployed (magic-cluster/platform/host-agent/rbac.yaml, applied unmodified):
  every token of the agent's ServiceAccount is refused every write of Appliances, by the API
  server's own authorizer and by an actual write;
- the agent's code: the console script runs every action it can run here through a recording
  proxy in front of the API server (tests/faults/proxy.py, forwarding every request unchanged),
  and no request it makes names the appliances resource; every write it makes is one of the
  writes its README lists; Appliance/local keeps its resourceVersion.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from api.host_evidence import HOST_PLANS_ANNOTATION
from api.meta import GROUP
from providers.kinds import APPLIANCE
from providers.kube import Forbidden, KubeAccess, KubeClient, NotFound, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.faults.proxy import FaultProxy, self_signed_certificate, write_kubeconfig
from tests.services.host_agent.world import NAMESPACE, REPO_ROOT, SERVICE_ACCOUNT, AgentWorld, new_world

DEFAULT_APPLIANCE: Final = REPO_ROOT / "magic-cluster/platform/magicstick-operator/default-appliance.yaml"
APPLIANCES: Final = re.compile(rf"/apis/{re.escape(GROUP)}/[^/]+/(namespaces/[^/]+/)?appliances(/|$)")
WRITES: Final = ("create", "update", "patch", "delete", "deletecollection")


def _allowed_writes(world: AgentWorld) -> tuple[re.Pattern[str], ...]:
    """Every write the agent's README lists: its Node's annotations, the status of
    HostOperations, ApplianceSetup/local and its first status, its own next token."""
    operations = rf"/apis/{re.escape(GROUP)}/v1alpha1/namespaces/{NAMESPACE}/hostoperations/[^/]+/status"
    setups = rf"/apis/{re.escape(GROUP)}/v1alpha1/namespaces/identity-system/appliancesetups"
    return tuple(
        re.compile(pattern)
        for pattern in (
            rf"PATCH /api/v1/nodes/{re.escape(world.node_name)}",
            rf"PATCH {operations}",
            rf"POST {setups}",
            rf"PATCH {setups}/local/status",
            rf"POST /api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token",
        )
    )


@contextlib.contextmanager
def _appliance(admin: KubeClient) -> Iterator[dict[str, Any]]:
    """Appliance/local as Flux applies it from Git (kept as it is when another test made it)."""
    existing = admin.get_or_none(APPLIANCE, "local", NAMESPACE)
    if existing is not None:
        yield existing
        return
    body = yaml.safe_load(DEFAULT_APPLIANCE.read_text())
    yield admin.create(APPLIANCE, body, field_manager="kustomize-controller")
    with contextlib.suppress(NotFound):
        admin.delete(APPLIANCE, "local", NAMESPACE)


@pytest.fixture
def appliance(admin: KubeClient) -> Iterator[dict[str, Any]]:
    with _appliance(admin) as obj:
        yield obj


@contextlib.contextmanager
def _agent_client(world: AgentWorld) -> Iterator[KubeClient]:
    with open_client(KubeAccess(kubeconfig=str(world.kubeconfig))) as client:
        yield client


def _can_i(client: KubeClient, verb: str, resource: str, namespace: str | None) -> bool:
    attributes = {"verb": verb, "group": GROUP, "resource": resource}
    if namespace is not None:
        attributes["namespace"] = namespace
    review = client.request(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        },
        content_type="application/json",
    )
    return bool(review["status"].get("allowed"))


def test_the_agents_identity_as_deployed_may_write_no_appliance_anywhere(world: AgentWorld) -> None:
    with _agent_client(world) as agent:
        allowed = [
            (verb, resource, namespace)
            for verb in WRITES
            for resource in ("appliances", "appliances/status")
            for namespace in (None, NAMESPACE, "identity-system", "flux-system")
            if _can_i(agent, verb, resource, namespace)
        ]
        assert _can_i(agent, "patch", "hostoperations/status", NAMESPACE)
    assert allowed == []


def test_the_agents_token_is_refused_a_change_of_the_appliance_spec(
    world: AgentWorld, admin: KubeClient, appliance: dict[str, Any]
) -> None:
    with _agent_client(world) as agent, pytest.raises(Forbidden):
        agent.request(
            "PATCH",
            APPLIANCE.object_path("local", NAMESPACE),
            params={"fieldManager": "magicstick-host-agent"},
            body={"spec": {"modules": {"litellm": {"enabled": False}}}},
            content_type="application/merge-patch+json",
        )
    after = admin.get(APPLIANCE, "local", NAMESPACE)
    assert after["metadata"]["resourceVersion"] == appliance["metadata"]["resourceVersion"]


HOSTILE_FREE_SCAN: Final = "BSS 02:00:00:00:00:01(on wlan0)\n\tsignal: -41.00 dBm\n\tSSID: Example\n"


def _wireless(world: AgentWorld) -> None:
    wlan = world.host.root / "sys/class/net/wlan0"
    (wlan / "wireless").mkdir(parents=True)
    (wlan / "operstate").write_text("dormant\n")
    (world.tools / "iw").write_text(f"#!/bin/sh\ncat <<'SCAN'\n{HOSTILE_FREE_SCAN}SCAN\n")
    (world.tools / "iw").chmod(0o755)


def _phase(*phases: str) -> Any:
    return lambda status: status.get("phase") in phases


@dataclass(frozen=True)
class AuditedRun:
    """Every request the agent made while it ran every action it can run here, and Appliance/local
    before and after."""

    requests: tuple[str, ...]
    """`METHOD /path` of each request, in order."""
    allowed_writes: tuple[re.Pattern[str], ...]
    appliance_before: dict[str, Any]
    appliance_after: dict[str, Any]


def _run_every_action(world: AgentWorld, workdir: Path) -> tuple[str, ...]:
    """The agent's evidence command, then `serve` with one operation of each action it can run
    here (configure-network up to its Secret check: netplan needs the machine suite), each
    waited for; everything through a recording proxy."""
    _wireless(world)
    token = yaml.safe_load(world.kubeconfig.read_text())["users"][0]["user"]["token"]
    cert, key = self_signed_certificate(workdir)
    with FaultProxy(
        upstream=world.cluster.url, upstream_tls=world.cluster.ssl_context(), cert_file=cert, key_file=key
    ) as proxy:
        world.kubeconfig = write_kubeconfig(
            workdir / "through-the-proxy", server=proxy.url, ca_file=cert, user=SERVICE_ACCOUNT, token=token
        )
        published = world.publish_evidence()
        assert published.returncode == 0, published.stderr
        plans = json.loads(world.node_now()["metadata"]["annotations"][HOST_PLANS_ANNOTATION])
        agent = world.start()
        expected = {
            "reboot": ("reboot", {}, ("Running",)),
            "poweroff-stale": ("poweroff", {"bootID": "an-earlier-boot"}, ("Failed",)),
            "clear-cache": ("clear-model-cache", {"planId": plans["modelCache"]["planId"]}, ("Succeeded",)),
            "scan": ("scan-wifi", {}, ("Succeeded",)),
            "prepare": (
                "prepare-gpu",
                {"planId": plans["gpuPreparation"]["planId"], "experimentConsent": True},
                ("Registering", "Succeeded"),
            ),
            "memory": (
                "configure-gpu-memory",
                {
                    "planId": plans["gpuMemory"]["planId"],
                    "experimentConsent": True,
                    "gpuMemory": {"carveoutIndex": 0, "dynamicLimitMi": 65536},
                },
                ("Succeeded",),
            ),
            "network": (
                "configure-network",
                {
                    "planId": plans["network"]["planId"],
                    "networkRef": {"name": "no-such-network", "uid": "0f0e7a52-0000-4000-8000-000000000000"},
                },
                ("Failed",),
            ),
            "reboot-again": ("reboot", {"requestID": world.object_name("reboot-request")}, ("Failed",)),
        }
        for name, (action, spec, _) in expected.items():
            world.request(name, action, **spec)
        for name, (_, _, phases) in expected.items():
            world.wait_for(name, _phase(*phases), process=agent)
        world.stop()
    assert proxy.errors == []
    requests = tuple(f"{exchange.method} {exchange.path}" for exchange in proxy.exchanges)
    assert any("/hostoperations/" in request for request in requests), "the agent did not go through the proxy"
    return requests


@pytest.fixture(scope="module")
def audited(host_agent_installed: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuditedRun]:
    workdir = tmp_path_factory.mktemp("audited-agent")
    with open_client(KubeAccess(kubeconfig=str(host_agent_installed.kubeconfig_path(ADMIN_USER)))) as admin:
        with _appliance(admin) as before:
            worlds = new_world(host_agent_installed, admin, workdir, name="audited-node")
            world = next(worlds)
            try:
                requests = _run_every_action(world, workdir)
            finally:
                worlds.close()
            yield AuditedRun(
                requests=requests,
                allowed_writes=_allowed_writes(world),
                appliance_before=before,
                appliance_after=admin.get(APPLIANCE, "local", NAMESPACE),
            )


def test_no_request_of_any_action_names_an_appliance(audited: AuditedRun) -> None:
    assert [request for request in audited.requests if APPLIANCES.search(request)] == []


def test_every_write_of_any_action_is_one_the_agents_readme_lists(audited: AuditedRun) -> None:
    writes = {request for request in audited.requests if not request.startswith("GET ")}
    assert writes
    assert {request for request in writes if not any(p.fullmatch(request) for p in audited.allowed_writes)} == set()


def test_appliance_local_is_unchanged_after_every_action(audited: AuditedRun) -> None:
    before, after = audited.appliance_before, audited.appliance_after
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"] == before["spec"]
