"""What the API server's answers become for the dashboard's user: one typed refusal each.

| The API server (or its absence)            | The dashboard | Body                                   |
|--------------------------------------------|---------------|----------------------------------------|
| 401 Unauthorized (its own credentials)     | 503           | the dashboard cannot reach the API     |
| 403 Forbidden (RBAC or admission policy)   | 403           | the server's message: which permission |
| 404 Not Found                              | 404           | which object                           |
| 409 Conflict / AlreadyExists               | 409           | the object as it is now                |
| 422 Invalid                                | 422           | each field and the rule it broke       |
| 429, 5xx, no answer                        | 503           | nothing was written                    |

The dashboard's own input checks (an immutable field changed, an acknowledgement missing)
raise the same 422 with the field named, so a client handles one shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from providers.kube import Conflict, Forbidden, Invalid, KubeConnectionError, KubeError, NotFound


@dataclass(frozen=True)
class FieldProblem:
    field: str
    """The field's path as the API server names it (`spec.local.kvCacheType`)."""
    message: str


@dataclass(eq=False)
class Refusal(Exception):
    status: int
    reason: str
    message: str
    fields: tuple[FieldProblem, ...] = ()
    current: dict[str, Any] | None = field(default=None, compare=False)
    """For a 409: the object as the API server holds it now."""
    headers: dict[str, str] = field(default_factory=dict, compare=False)
    """Headers the answer carries (a 429's or 503's Retry-After)."""

    def __str__(self) -> str:
        return f"{self.status} {self.reason}: {self.message}"

    def body(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"error": self.reason, "message": self.message}
        if self.fields:
            answer["fields"] = [{"field": problem.field, "message": problem.message} for problem in self.fields]
        if self.current is not None:
            answer["current"] = self.current
        return answer


def invalid(field_path: str, rule: str) -> Refusal:
    """A 422 of the dashboard's own checks, for one field."""
    return Refusal(422, "Invalid", f"{field_path}: {rule}", (FieldProblem(field_path, rule),))


def http_refusal(status: int, detail: str, *, json_body: bool = True) -> Refusal:
    """The refusal of an HTTP error the web framework raises before any operation runs. Pure.

    Its 400, a body it cannot decode (not UTF-8), is bad input as much as a body that is not
    JSON, which it answers 422: so it is a 422 naming `body` (a JSON document under /api, a
    form elsewhere: `json_body`), one of the statuses the API documents. Any other keeps its status (404 no such route, 405 no such method, 413 a body
    too large), in the one shape of every refusal.
    """
    if status == HTTPStatus.BAD_REQUEST:
        return invalid("body", f"is not a {'JSON document' if json_body else 'form'} in UTF-8 ({detail})")
    try:
        reason = HTTPStatus(status).phrase.replace(" ", "").replace("-", "")
    except ValueError:
        reason = "Failed"
    return Refusal(status, reason, detail)


def refusal_of(error: KubeError, *, current: dict[str, Any] | None = None) -> Refusal:
    """The refusal an API server failure becomes (the table above). Pure."""
    if isinstance(error, KubeConnectionError):
        return Refusal(
            503, "ApiServerUnavailable", f"the API server did not answer ({error.detail}); nothing was written"
        )
    if isinstance(error, Forbidden):
        return Refusal(403, "Forbidden", error.message or error.detail)
    if isinstance(error, NotFound):
        return Refusal(404, "NotFound", error.message or error.detail)
    if isinstance(error, Conflict):
        return Refusal(409, error.reason or "Conflict", error.message or error.detail, current=current)
    if isinstance(error, Invalid):
        return Refusal(422, "Invalid", error.message or error.detail, _field_problems(error.status))
    if error.code in (401, 429) or error.code >= 500:
        return Refusal(
            503, "ApiServerUnavailable", f"the API server refused the dashboard ({error.detail}); nothing was written"
        )
    return Refusal(error.code or 500, error.reason or "Failed", error.message or error.detail)


def _field_problems(status: Any) -> tuple[FieldProblem, ...]:
    details = status.get("details") if isinstance(status, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    problems = []
    for cause in causes or ():
        if isinstance(cause, dict):
            problems.append(
                FieldProblem(str(cause.get("field") or ""), str(cause.get("message") or cause.get("reason") or ""))
            )
    return tuple(problems)
