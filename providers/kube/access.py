"""How the program reaches the cluster: kubeconfig or in-cluster service account, TLS, retries.

Client library: lightkube. It is an httpx-based, maintained Kubernetes client whose
configuration layer understands everything a kubeconfig can say (file, context, token,
client certificates, exec credential plugins, and the in-cluster service account with token
rotation) and turns it into a configured `httpx.Client` with TLS verification. The program
keeps raw JSON bodies from there on (see client.py), because the snapshot must hold objects
exactly as the server stored them, not as a typed model reinterprets them. lightkube 1.x moved
to a fork of httpx; the 0.x line stays on httpx itself, which the rest of the project uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml
from lightkube.config.client_adapter import Client as configured_httpx_client
from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import KubeConfig
from lightkube.core.exceptions import ConfigError

from providers.kube.client import KubeClient
from providers.kube.retry import RetryPolicy
from providers.kube.errors import KubeConfigError


@dataclass(frozen=True)
class KubeAccess:
    """Where and how to connect. No value here is a secret unless `kubeconfig` holds contents.

    kubeconfig: a path, or the kubeconfig document itself; None means KUBECONFIG, then
    ~/.kube/config, then the in-cluster service account.
    """

    kubeconfig: str | None = None
    context: str | None = None
    timeout_seconds: float = 10.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)


def load_config(access: KubeAccess) -> KubeConfig:
    try:
        if access.kubeconfig is None:
            return KubeConfig.from_env()
        source = access.kubeconfig
        if "\n" not in source and Path(source).expanduser().is_file():
            return KubeConfig.from_file(Path(source).expanduser())
        document = yaml.safe_load(source)
        if not isinstance(document, dict):
            raise KubeConfigError(f"magicstick:kubeconfig: '{source[:80]}' is neither a kubeconfig file nor kubeconfig contents")
        return KubeConfig.from_dict(document)
    except ConfigError as error:
        raise KubeConfigError(f"kubeconfig: {error}") from error
    except yaml.YAMLError as error:
        raise KubeConfigError(f"magicstick:kubeconfig: not valid YAML: {error}") from error


def _httpx_client(access: KubeAccess) -> httpx.Client:
    config = load_config(access)
    try:
        single = config.get(access.context)
    except ConfigError as error:
        raise KubeConfigError(f"kubeconfig context '{access.context}': {error}") from error
    if single is None:
        raise KubeConfigError(f"kubeconfig has no context '{access.context or '(current)'}'")
    return configured_httpx_client(single, ConnectionParams(timeout=httpx.Timeout(access.timeout_seconds)))


@contextmanager
def open_client(access: KubeAccess) -> Iterator[KubeClient]:
    """A client for one unit of work; closed on exit. Never cached: callers build their own."""
    with _httpx_client(access) as http:
        yield KubeClient(http, retry=access.retry)
