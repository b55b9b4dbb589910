"""How the program reaches the cluster: kubeconfig or in-cluster service account, TLS, retries.

Client library: lightkube. It is an httpx-based, maintained Kubernetes client whose
configuration layer understands everything a kubeconfig can say (file, context, token,
client certificates, exec credential plugins, and the in-cluster service account with token
rotation) and turns it into a configured `httpx.Client` with TLS verification. The program
keeps raw JSON bodies from there on (see client.py), because the snapshot must hold objects
exactly as the server stored them, not as a typed model reinterprets them. lightkube 1.x moved
to a fork of httpx; the 0.x line stays on httpx itself, which the rest of the project uses.

Where the configuration comes from when no kubeconfig is given follows client-go's loading
rules, so the observer and pulumi-kubernetes always talk to the same cluster: the file named
by KUBECONFIG, else ~/.kube/config, else the in-cluster service account.

Every way the configuration can be unusable (a malformed document, an unknown context, a
missing certificate file, an exec plugin that fails) raises KubeConfigError. Messages never
quote the kubeconfig's text: it may hold a token.
"""

from __future__ import annotations

import os
import ssl
import time
from collections.abc import AsyncGenerator, Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import httpx
import yaml
from lightkube.config.client_adapter import ConnectionParams, ExecAuth
from lightkube.config.kubeconfig import DEFAULT_KUBECONFIG, SERVICE_ACCOUNT, KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError

from providers.kube.client import KubeClient
from providers.kube.errors import KubeConfigError
from providers.kube.retry import RetryPolicy

EXEC_API_V1: Final = "client.authentication.k8s.io/v1"
EXEC_API_V1BETA1: Final = "client.authentication.k8s.io/v1beta1"

_PRIMING_KUBECONFIG: Final = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "priming", "cluster": {"server": "https://kubernetes.example.local"}}],
    "users": [
        {
            "name": "priming",
            "user": {
                "exec": {
                    "apiVersion": EXEC_API_V1,
                    "command": "CHANGEME",
                    "env": [{"name": "CHANGEME", "value": "CHANGEME"}],
                }
            },
        }
    ],
    "contexts": [{"name": "priming", "context": {"cluster": "priming", "user": "priming"}}],
    "current-context": "priming",
}
"""A kubeconfig holding one of each kind of entry lightkube reads (cluster, user, exec plugin
with its environment, context), parsed once when this module is imported.

Why: lightkube builds each configuration class's field tables on the first parse, in several
steps, with no lock, so two threads parsing their first kubeconfig at once can see a half-built
table and fail with a TypeError or AttributeError. The dynamic providers' process serves the
engine's calls on threads, and a `pulumi up --refresh` reads many resources at once: this is
how a read failed with "kubeconfig ... malformed (TypeError)". Importing happens on one thread,
before any call is served, so every table is complete before the first concurrent parse
(tests/kube/test_configuration.py reproduces the race in a fresh process)."""
KubeConfig.from_dict(_PRIMING_KUBECONFIG)


@dataclass(frozen=True)
class KubeAccess:
    """Where and how to connect. No value here is a secret unless `kubeconfig` holds contents.

    kubeconfig: a path, or the kubeconfig document itself; None means KUBECONFIG, then
    ~/.kube/config, then the in-cluster service account.
    context: the kubeconfig context to use; None means its current-context.
    timeout_seconds: the bound of every connect, read and write of one request.
    service_account_dir: where the in-cluster service account is mounted (token, ca.crt,
    namespace); only read when no kubeconfig is found. Its server is
    https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT.
    """

    kubeconfig: str | None = None
    context: str | None = None
    timeout_seconds: float = 10.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    service_account_dir: str = SERVICE_ACCOUNT


def load_config(access: KubeAccess) -> KubeConfig:
    """The whole kubeconfig `access` designates. Raises KubeConfigError."""
    if access.kubeconfig is None:
        return _default_config(access.service_account_dir)
    source = access.kubeconfig
    if "\n" not in source and _is_file(source):
        return _config_file(Path(source).expanduser())
    document = _parse_yaml(source)
    if not isinstance(document, dict):
        if "\n" not in source:
            raise KubeConfigError(f"kubeconfig file '{source}' not found")
        raise KubeConfigError("kubeconfig contents are not a YAML mapping")
    return _config_document(document, fname=None)


def _default_config(service_account_dir: str) -> KubeConfig:
    listed = [entry for entry in os.environ.get("KUBECONFIG", "").split(os.pathsep) if entry]
    candidates = listed or [DEFAULT_KUBECONFIG]
    existing = [Path(entry).expanduser() for entry in candidates if _is_file(entry)]
    if len(existing) > 1:
        raise KubeConfigError(
            f"KUBECONFIG names several files; merging them is not supported: {os.pathsep.join(listed)}"
        )
    if existing:
        return _config_file(existing[0])
    try:
        return KubeConfig.from_service_account(service_account=service_account_dir)
    except ConfigError as error:
        reason = f"{error}"
    except OSError as error:
        reason = f"{error.filename}: {error.strerror}"
    except KeyError as error:
        reason = f"{error.args[0]} is not set"
    raise KubeConfigError(
        f"no kubeconfig ({' or '.join(candidates)}) and no in-cluster service account ({service_account_dir}): {reason}"
    )


def _config_file(path: Path) -> KubeConfig:
    try:
        text = path.read_text()
    except OSError as error:
        raise KubeConfigError(f"kubeconfig file '{path}' cannot be read: {error.strerror}") from error
    document = _parse_yaml(text, origin=f"kubeconfig file '{path}'")
    if not isinstance(document, dict):
        raise KubeConfigError(f"kubeconfig file '{path}' is not a YAML mapping")
    return _config_document(document, fname=path)


def _parse_yaml(text: str, *, origin: str = "kubeconfig contents") -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise KubeConfigError(f"{origin}: not valid YAML{where}: {error.problem}") from error
    except yaml.YAMLError as error:
        raise KubeConfigError(f"{origin}: not valid YAML") from error


def _config_document(document: dict[str, Any], *, fname: Path | None) -> KubeConfig:
    origin = f"kubeconfig file '{fname}'" if fname else "kubeconfig contents"
    try:
        return KubeConfig.from_dict(document, fname=fname)
    except KeyError as error:
        raise KubeConfigError(f"{origin}: missing field {error}") from error
    except (TypeError, AttributeError, ValueError) as error:
        raise KubeConfigError(f"{origin}: malformed ({type(error).__name__})") from error


def select_context(config: KubeConfig, context: str | None) -> SingleConfig:
    """The cluster and user of `context` (None: the current context). Raises KubeConfigError."""
    name = context if context is not None else config.current_context
    if name is None:
        raise KubeConfigError("kubeconfig has no current-context and no context was chosen")
    if name not in config.contexts:
        raise KubeConfigError(
            f"kubeconfig has no context '{name}'; it has: {', '.join(sorted(config.contexts)) or 'none'}"
        )
    chosen = config.contexts[name]
    if chosen.cluster not in config.clusters:
        raise KubeConfigError(f"kubeconfig context '{name}' names cluster '{chosen.cluster}', which is not defined")
    if chosen.user and chosen.user not in config.users:
        raise KubeConfigError(f"kubeconfig context '{name}' names user '{chosen.user}', which is not defined")
    single = config.get(name)
    if single is None:
        raise KubeConfigError(f"kubeconfig has no context '{name}'")
    return single


def _httpx_client(access: KubeAccess) -> httpx.Client:
    return httpx.Client(**httpx_params(access))


def httpx_params(access: KubeAccess) -> dict[str, Any]:
    """The keyword arguments of an httpx client (sync or async) configured as `access` says:
    server, TLS, credentials, timeouts. Raises KubeConfigError."""
    single = select_context(load_config(access), access.context)
    if single.user is not None and single.user.exec is not None and single.user.exec.apiVersion == EXEC_API_V1:
        single = single._replace(user=replace(single.user, exec=replace(single.user.exec, apiVersion=EXEC_API_V1BETA1)))
    try:
        _check_files(single)
        params = ConnectionParams(timeout=httpx.Timeout(access.timeout_seconds)).httpx_params(single)
    except ConfigError as error:
        raise KubeConfigError(f"kubeconfig context '{single.context_name}': {error}") from error
    except ssl.SSLError as error:
        raise KubeConfigError(
            f"kubeconfig context '{single.context_name}': unusable certificate or key: {error}"
        ) from error
    except OSError as error:
        raise KubeConfigError(
            f"kubeconfig context '{single.context_name}': {error.filename or 'a file'}: {error.strerror}"
        ) from error
    if isinstance(params["auth"], ExecAuth):
        params["auth"] = _ExecCredentialAuth(params["auth"], context=single.context_name)
    return params


def _check_files(single: SingleConfig) -> None:
    """Raise KubeConfigError naming the first file the context refers to that does not exist."""
    user = single.user
    named = {
        "certificate-authority": single.cluster.certificate_auth,
        "client-certificate": None if user is None or user.client_cert_data else user.client_cert,
        "client-key": None if user is None or user.client_key_data else user.client_key,
    }
    for key, name in named.items():
        if name and not _is_file(str(single.abs_file(name))):
            raise KubeConfigError(
                f"kubeconfig context '{single.context_name}': {key} file '{single.abs_file(name)}' not found"
            )


class _ExecCredentialAuth(httpx.Auth):
    """lightkube's exec credential plugin auth, whose failures become KubeConfigError.

    The v1 and v1beta1 ExecCredential carry the token in the same place, `status.token`.
    """

    def __init__(self, inner: ExecAuth, *, context: str) -> None:
        self._inner = inner
        self._context = context

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        flow = self._inner.sync_auth_flow(request)
        try:
            outgoing = next(flow)
            while True:
                response = yield outgoing
                outgoing = flow.send(response)
        except StopIteration:
            return
        except (ConfigError, OSError, ValueError, KeyError, TypeError) as error:
            raise self._config_error(error) from error

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """The same flow for an async client: the plugin runs as a subprocess of the event loop."""
        flow = self._inner.async_auth_flow(request)
        try:
            outgoing = await anext(flow)
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except (ConfigError, OSError, ValueError, KeyError, TypeError) as error:
            raise self._config_error(error) from error

    def _config_error(self, error: Exception) -> KubeConfigError:
        if isinstance(error, ConfigError):
            return KubeConfigError(f"kubeconfig context '{self._context}': exec credential plugin: {error}")
        if isinstance(error, OSError):
            return KubeConfigError(
                f"kubeconfig context '{self._context}': exec credential plugin cannot run: {error.strerror}"
            )
        return KubeConfigError(
            f"kubeconfig context '{self._context}': exec credential plugin printed no ExecCredential with status.token"
        )


def _is_file(candidate: str) -> bool:
    try:
        return Path(candidate).expanduser().is_file()
    except (OSError, ValueError):
        return False


@contextmanager
def open_client(access: KubeAccess, *, sleep: Callable[[float], object] = time.sleep) -> Iterator[KubeClient]:
    """A client for one unit of work; closed on exit. Never cached: callers build their own.

    `sleep` waits between retries; tests pass a recorder.
    """
    with _httpx_client(access) as http:
        yield KubeClient(http, retry=access.retry, sleep=sleep)
