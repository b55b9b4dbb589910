"""Errors of the Kubernetes API, one class per HTTP status, each keeping the server's Status.

The server answers a failed request with a `Status` object (code, reason, message). That
object is the most precise explanation there is, so it travels with the error unchanged.
"""

from __future__ import annotations

from typing import Any

import httpx


class KubeError(Exception):
    """A request failed. `code`, `reason` and `message` come from the server's Status when it sent one."""

    code: int = 0

    def __init__(self, *, method: str, path: str, code: int, reason: str, message: str) -> None:
        super().__init__(f"{method} {path}: {code} {reason}: {message}" if message else f"{method} {path}: {code} {reason}")
        self.method = method
        self.path = path
        self.code = code
        self.reason = reason
        self.message = message


class KubeConfigError(Exception):
    """The kubeconfig or the in-cluster service account cannot be used."""


class KubeConnectionError(KubeError):
    """The server could not be reached (after the retries the policy allows)."""


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


_BY_CODE: dict[int, type[KubeError]] = {cls.code: cls for cls in (Unauthorized, Forbidden, NotFound, Conflict, Gone, Invalid, TooManyRequests)}


def error_for(response: httpx.Response) -> KubeError:
    """The typed error of a failed response, carrying the server's Status."""
    status = _status_body(response)
    code = response.status_code
    cls = _BY_CODE.get(code, ServerError if code >= 500 else KubeError)
    return cls(
        method=response.request.method,
        path=response.request.url.path,
        code=code,
        reason=str(status.get("reason") or response.reason_phrase),
        message=str(status.get("message") or response.text[:500]),
    )


def _status_body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) and body.get("kind") == "Status" else {}
