"""Errors of the Kubernetes API, one class per HTTP status, each keeping the server's Status.

The server answers a failed request with a `Status` object (code, reason, message). That
object is the most precise explanation there is, so it travels with the error unchanged.

A request that gets no answer at all raises KubeConnectionError, which names the server's URL
and what failed in words (`cannot reach https://127.0.0.1:6443: connection refused`); its
`reason` is a ConnectionFailure, its `code` 0 (no status came back).

One status is told apart by its cause rather than by its code alone: a 504 `Timeout` whose
`details.causes` name `ResourceVersionTooLarge` (the class ResourceVersionTooLarge) means the
server has not reached the resourceVersion asked for (its watch cache lags after a restart, or
etcd was restored from an older copy): waiting on that resourceVersion may never end, listing
again does.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator, Mapping
from enum import StrEnum
from typing import Any

import httpx


class CauseType(StrEnum):
    """The `reason` of an entry of a Status's `details.causes` (metav1.CauseType), those told apart here."""

    RESOURCE_VERSION_TOO_LARGE = "ResourceVersionTooLarge"


class KubeError(Exception):
    """A request failed. `code`, `reason` and `message` come from the server's Status when it sent
    one; `status` is that Status as it came (empty when there was none)."""

    code: int = 0

    def __init__(
        self, *, method: str, path: str, code: int, reason: str, message: str, status: Mapping[str, Any] | None = None
    ) -> None:
        self.method = method
        self.path = path
        self.code = code
        self.reason = reason
        self.message = message
        self.status: Mapping[str, Any] = dict(status or {})
        super().__init__(f"{method} {path}: {self.detail}")

    @property
    def causes(self) -> tuple[str, ...]:
        """The `reason` of each entry of the Status's `details.causes`, in order."""
        return _cause_reasons(self.status)

    @property
    def detail(self) -> str:
        """The failure without the request: `code reason: message`, as the server said it."""
        return f"{self.code} {self.reason}: {self.message}" if self.message else f"{self.code} {self.reason}"


class KubeConfigError(Exception):
    """The kubeconfig or the in-cluster service account cannot be used."""


class ConnectionFailure(StrEnum):
    """Why no answer came back; the `reason` of a KubeConnectionError."""

    REFUSED = "ConnectionRefused"
    NAME_NOT_RESOLVED = "NameNotResolved"
    CERTIFICATE_REJECTED = "CertificateRejected"
    """The server's certificate does not chain to the trusted CA: never retried."""
    TLS_FAILED = "TLSHandshakeFailed"
    TIMEOUT = "Timeout"
    PROTOCOL_ERROR = "RemoteProtocolError"
    NETWORK = "NetworkError"
    """Anything else below HTTP: a reset connection, an unreachable network."""


class KubeConnectionError(KubeError):
    """The server could not be reached (after the retries the policy allows).

    `url` is the server the configuration names; `cause` says in words what failed
    (`connection refused`, `TLS certificate verify failed: self-signed certificate`,
    `timed out after 10 s (connecting)`); `failure` (also `reason`) is its ConnectionFailure.
    The transport error is chained as `__cause__`.
    """

    def __init__(self, *, method: str, path: str, url: str, failure: ConnectionFailure, cause: str) -> None:
        self.url = url
        self.failure = failure
        self.cause = cause
        super().__init__(method=method, path=path, code=0, reason=failure.value, message=f"cannot reach {url}: {cause}")

    @property
    def detail(self) -> str:
        return self.message


class Unauthorized(KubeError):
    code = 401


class Forbidden(KubeError):
    code = 403


class NotFound(KubeError):
    code = 404


class Conflict(KubeError):
    code = 409


class Gone(KubeError):
    code = 410


class Invalid(KubeError):
    code = 422


class TooManyRequests(KubeError):
    code = 429


class ServerError(KubeError):
    code = 500


class ResourceVersionTooLarge(ServerError):
    """504 Timeout with the cause ResourceVersionTooLarge: the resourceVersion asked for is newer
    than anything the server holds. Like Gone, it asks the caller to list again."""

    code = 504


_BY_CODE: dict[int, type[KubeError]] = {
    cls.code: cls for cls in (Unauthorized, Forbidden, NotFound, Conflict, Gone, Invalid, TooManyRequests)
}


def _error_class(code: int, status: Mapping[str, Any]) -> type[KubeError]:
    if code == ResourceVersionTooLarge.code and CauseType.RESOURCE_VERSION_TOO_LARGE in _cause_reasons(status):
        return ResourceVersionTooLarge
    return _BY_CODE.get(code, ServerError if code >= 500 else KubeError)


def _cause_reasons(status: Mapping[str, Any]) -> tuple[str, ...]:
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    if not isinstance(causes, list):
        return ()
    return tuple(str(cause.get("reason") or "") for cause in causes if isinstance(cause, Mapping))


def error_for(response: httpx.Response) -> KubeError:
    """The typed error of a failed response, carrying the server's Status."""
    status = _status_body(response)
    code = response.status_code
    return _error_class(code, status)(
        method=response.request.method,
        path=response.request.url.path,
        code=code,
        reason=str(status.get("reason") or response.reason_phrase),
        message=str(status.get("message") or response.text[:500]),
        status=status,
    )


def error_for_status(status: Any, *, method: str, path: str) -> KubeError:
    """The typed error of a Status the server sent inside an answer: a watch's ERROR event. Pure.

    A watch from a resourceVersion the server no longer holds is answered 200, then an ERROR
    event whose Status has code 410; this gives it the class a 410 response would have (and a
    504 naming ResourceVersionTooLarge its own).
    """
    body = status if isinstance(status, dict) else {}
    raw_code = body.get("code")
    code = raw_code if isinstance(raw_code, int) and not isinstance(raw_code, bool) else 500
    return _error_class(code, body)(
        method=method,
        path=path,
        code=code,
        reason=str(body.get("reason") or "Unknown"),
        message=str(body.get("message") or ""),
        status=body,
    )


def _status_body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) and body.get("kind") == "Status" else {}


def connection_error(
    error: httpx.TransportError, *, method: str, path: str, url: str, timeout: httpx.Timeout
) -> KubeConnectionError:
    """The KubeConnectionError of a request to `url` that failed with `error`. Pure.

    `timeout` is the client's, so that a timeout names the bound it hit.
    """
    failure, cause = _explain(error, timeout)
    return KubeConnectionError(method=method, path=path, url=url, failure=failure, cause=cause)


_TIMEOUT_PHASES: tuple[tuple[type[httpx.TimeoutException], str, str], ...] = (
    (httpx.ConnectTimeout, "connect", "connecting"),
    (httpx.ReadTimeout, "read", "waiting for the answer"),
    (httpx.WriteTimeout, "write", "sending the request"),
    (httpx.PoolTimeout, "pool", "waiting for a free connection"),
)


def _explain(error: httpx.TransportError, timeout: httpx.Timeout) -> tuple[ConnectionFailure, str]:
    if isinstance(error, httpx.TimeoutException):
        return ConnectionFailure.TIMEOUT, _timed_out(error, timeout)
    if isinstance(error, httpx.RemoteProtocolError):
        return ConnectionFailure.PROTOCOL_ERROR, f"HTTP protocol error: {error}"
    for cause in _chain(error):
        if isinstance(cause, ssl.SSLCertVerificationError):
            why = cause.verify_message or cause.reason
            return ConnectionFailure.CERTIFICATE_REJECTED, f"TLS certificate verify failed: {why}"
        if isinstance(cause, ssl.SSLError):
            return ConnectionFailure.TLS_FAILED, f"TLS handshake failed: {cause.strerror or cause}"
        if isinstance(cause, socket.gaierror):
            return ConnectionFailure.NAME_NOT_RESOLVED, f"host name not resolved: {cause.strerror or cause}"
        if isinstance(cause, ConnectionRefusedError):
            return ConnectionFailure.REFUSED, "connection refused"
    for cause in _chain(error):
        if isinstance(cause, OSError) and cause.strerror:
            return ConnectionFailure.NETWORK, cause.strerror[:1].lower() + cause.strerror[1:]
    return ConnectionFailure.NETWORK, f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _timed_out(error: httpx.TimeoutException, timeout: httpx.Timeout) -> str:
    for kind, field, phase in _TIMEOUT_PHASES:
        if isinstance(error, kind):
            bound = getattr(timeout, field)
            return f"timed out after {bound:g} s ({phase})" if bound is not None else f"timed out ({phase})"
    return "timed out"


def _chain(error: BaseException) -> Iterator[BaseException]:
    """`error`, then what caused it, down to the first exception."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
