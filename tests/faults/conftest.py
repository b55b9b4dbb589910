"""Fixtures of the fault tests: a fault proxy per test, in front of the session's API server.

`faulty` is a `Faulty`: the proxy, an access through it whose retry policy waits no time, and
a client on that access whose waits are recorded instead of slept. The policy's numbers are
the ones the tests hold the code to: ATTEMPTS tries per request, a read timeout of
CLIENT_TIMEOUT seconds (what a `Hold` fault waits out).

The timeout is not smaller because the test server's CRD LIST (about 800 kB) takes up to half
a second to start answering on a loaded machine; a slow answer is retried like a held one, so
tests count attempts only on the small paths they fault.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import pytest

from providers.cluster_access import ClusterResourceProvider
from providers.kube import KubeAccess, KubeClient, RetryPolicy, open_client
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo
from tests.faults.proxy import FaultProxy, self_signed_certificate, write_kubeconfig
from tests.live.conftest import admin, admin_access, clean_shared_namespaces, own_crds  # noqa: F401 - fixtures used by name
from tests.live.world import load
from tests.planning.builders import activation, appliance
from tests.providers.engine import configured, kubeconfig_config

ATTEMPTS = 3
CLIENT_TIMEOUT = 1.0
INSTANT = RetryPolicy(attempts=ATTEMPTS, first_delay_seconds=0.0, max_delay_seconds=5.0)
"""Bounded like the default policy, but the backoff is zero: the tests never sleep."""


@dataclass
class Faulty:
    proxy: FaultProxy
    access: KubeAccess
    client: KubeClient
    sleeps: list[float] = field(default_factory=list)
    """What `client` would have slept between attempts, in order."""


@pytest.fixture(scope="session")
def proxy_certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path_factory.mktemp("fault-proxy"))


@pytest.fixture
def faulty(cluster: ClusterInfo, proxy_certificate: tuple[Path, Path], tmp_path: Path) -> Iterator[Faulty]:
    cert_file, key_file = proxy_certificate
    with FaultProxy(
        upstream=cluster.url, upstream_tls=cluster.ssl_context(), cert_file=cert_file, key_file=key_file
    ) as proxy:
        kubeconfig = write_kubeconfig(
            tmp_path / "proxy-kubeconfig.yaml",
            server=proxy.url,
            ca_file=cert_file,
            user=ADMIN_USER,
            token=cluster.admin_token,
        )
        access = KubeAccess(kubeconfig=str(kubeconfig), timeout_seconds=CLIENT_TIMEOUT, retry=INSTANT)
        sleeps: list[float] = []
        with open_client(access, sleep=sleeps.append) as client:
            yield Faulty(proxy=proxy, access=access, client=client, sleeps=sleeps)
    assert proxy.errors == [], "the proxy itself failed"


def in_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}


@pytest.fixture
def world(clean_shared_namespaces: None, admin: KubeClient, namespace: str) -> str:
    """The program's system namespace, holding an Appliance and a ModuleActivation; returned by name."""
    load(admin, [in_namespace(appliance({"basis": True}), namespace), in_namespace(activation("kubeai"), namespace)])
    return namespace


P = TypeVar("P", bound=ClusterResourceProvider)


def instant(access: KubeAccess) -> KubeAccess:
    """`access` with the tests' policy: ATTEMPTS tries, no wait between them, CLIENT_TIMEOUT per request."""
    return replace(access, retry=INSTANT, timeout_seconds=CLIENT_TIMEOUT)


@pytest.fixture
def through_proxy(faulty: Faulty, monkeypatch: pytest.MonkeyPatch) -> Callable[[P], P]:
    """Configure a provider as the engine does, with stack config naming the proxy's kubeconfig;
    its access keeps what that config says and takes the tests' instant retry policy."""

    def configure(provider: P) -> P:
        assert faulty.access.kubeconfig is not None
        configured(provider, kubeconfig_config(faulty.access.kubeconfig))
        access = instant(provider.cluster_access())
        monkeypatch.setattr(provider, "cluster_access", lambda: access)
        return provider

    return configure


def reported(call: Callable[[], Any]) -> str:
    """What a provider call said about a failure: the error it raised, or the `problem` (or
    `message`) of its outputs. Either is allowed here; silence is not."""
    try:
        result = call()
    except Exception as error:  # noqa: BLE001 - raising and returning a problem are both acceptable outcomes
        return f"{type(error).__name__}: {error}"
    outputs = result.outs
    return str(outputs.get("problem") or outputs.get("message") or "")
