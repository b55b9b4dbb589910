"""providers.kube against the real test kube-apiserver: configuration, authentication, TLS,
errors, retries, timeouts and the REST verbs. Unreachable servers (refusing, silent, hanging
up, presenting an untrusted certificate) are loopback sockets and need no API server.
Helpers shared by those tests live here."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from providers.kube import KubeAccess
from tests.cluster.apiserver import ADMIN_USER, ClusterInfo


def admin_access(cluster: ClusterInfo, **options: Any) -> KubeAccess:
    return KubeAccess(kubeconfig=str(cluster.kubeconfig_path(ADMIN_USER)), **options)


def kubeconfig(*, name: str, server: str, user: Mapping[str, Any], ca_file: Path | None = None) -> dict[str, Any]:
    """A one-context kubeconfig document whose cluster, user and context are all called `name`."""
    cluster: dict[str, Any] = {"server": server}
    if ca_file is not None:
        cluster["certificate-authority"] = str(ca_file)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": dict(user)}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


def merged(*documents: Mapping[str, Any], current: str) -> dict[str, Any]:
    """One kubeconfig holding the clusters, users and contexts of every document."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [entry for document in documents for entry in document["clusters"]],
        "users": [entry for document in documents for entry in document["users"]],
        "contexts": [entry for document in documents for entry in document["contexts"]],
        "current-context": current,
    }


def as_yaml(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(document), sort_keys=False)


def exec_plugin(directory: Path, *, stdout: str, stderr: str = "", exit_code: int = 0) -> Path:
    """An executable that prints `stdout` and `stderr` and exits with `exit_code`."""
    script = directory / "credential-plugin"
    script.write_text(
        f"#!/bin/sh\nprintf '%s' {_shell_quote(stdout)}\nprintf '%s' {_shell_quote(stderr)} >&2\nexit {exit_code}\n"
    )
    script.chmod(0o755)
    return script


def exec_credential(token: str, *, api_version: str) -> str:
    return json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "status": {"token": token}})


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port that is bound but not listening: every connection is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bound:
        bound.bind(("127.0.0.1", 0))
        yield int(bound.getsockname()[1])


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A loopback port that accepts TCP connections (the kernel's backlog) and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(4)
        yield int(listening.getsockname()[1])


def self_signed_certificate(directory: Path, common_name: str = "unrelated-ca.example.local") -> Path:
    """A CA certificate that signed nothing the test server presents."""
    cert, key = directory / f"{common_name}.crt", directory / f"{common_name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", f"/CN={common_name}", "-keyout", str(key), "-out", str(cert)],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )  # fmt: skip
    return cert


@contextlib.contextmanager
def one_connection_server(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A loopback port whose server accepts one connection, runs `handle` on it and closes it.

    Leaving the block stops the server, whether or not a client came.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        thread = threading.Thread(target=_serve_once, args=(listening, handle), daemon=True)
        thread.start()
        try:
            yield int(listening.getsockname()[1])
        finally:
            with contextlib.suppress(OSError):
                listening.shutdown(socket.SHUT_RDWR)
            thread.join()


def _serve_once(listening: socket.socket, handle: Callable[[socket.socket], None]) -> None:
    try:
        connection, _ = listening.accept()
    except OSError:
        return
    with connection, contextlib.suppress(OSError):
        handle(connection)


def tls_handshake(certificate: Path) -> Callable[[socket.socket], None]:
    """A connection handler that presents `certificate` (its key beside it, `.key`) in a TLS handshake."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, certificate.with_suffix(".key"))

    def handshake(connection: socket.socket) -> None:
        with context.wrap_socket(connection, server_side=True):
            pass

    return handshake


def hang_up_after_the_request(connection: socket.socket) -> None:
    """A connection handler that reads one HTTP request head and closes without answering."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(4096)
        if not chunk:
            return
        received += chunk
