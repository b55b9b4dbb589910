"""The dashboard's API as it publishes itself: schemathesis, from /api/v1/openapi.json, against
the running dashboard (world.py), as an operator.

Rules:

- The tests are made at collection from the document the dashboard's application builds, and
  run only against a dashboard that publishes exactly that document at /api/v1/openapi.json:
  what clients read is what is tested. (schemathesis' fixture loader, which would read it from
  the running dashboard, does not run on pytest 9.2: it sets `Node._nodeid`, which pytest no
  longer has.) Every operation is called with inputs generated from the document, valid and
  invalid (schemathesis' positive and negative modes), with the operator's ID token in the
  header Envoy would set, on every call.
- Each answer must pass CHECKS: no 5xx; a status code the operation documents (every route
  documents 401, 403, 404, 409, 422 and 503 with a `Problem` body); a content type it
  documents; a body and headers that match the documented schema; and input that breaks the
  schema is refused, never accepted.
- Not checked: `positive_data_acceptance`. The document gives the bodies' types only; the rules
  of the runtime kinds (catalogued modules and presets, objects that exist, the CRDs' own
  validation) stay with the API server (forms.py), so input that is valid by the document is
  rightly refused with 404, 409 or 422.
- Excluded: `GET /api/v1/stream`. It is a server-sent event stream that lasts as long as the
  client stays, so a call never returns an answer to check.
- Bounded and reproducible: each operation gets the document's examples, schemathesis'
  coverage cases (each field's boundaries and each way to break it, a fixed set) and
  MAX_EXAMPLES generated inputs, from a fixed seed, derandomized, with no shrinking and no
  example database.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from fastapi.routing import iter_route_contexts
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.generation.case import Case
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from services.dashboard.app import create_app
from tests.services.dashboard.world import World

API = "/api/v1"
OPENAPI = f"{API}/openapi.json"
STREAM = f"{API}/stream"
SEED = 29
MAX_EXAMPLES = 25
REQUEST_TIMEOUT_SECONDS = 15
PROBLEM_STATUSES = ("401", "403", "404", "409", "422", "503")
"""What every route documents, each with a `Problem` body (api.PROBLEMS)."""
WRITE_METHODS = frozenset({"post", "put", "patch", "delete"})
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
]
DOCUMENT: dict[str, Any] = create_app(None).openapi()  # type: ignore[arg-type]  # the document needs no state
"""What the dashboard publishes at OPENAPI (the `dashboard_url` fixture holds it to that): the
tests are made at collection, before any dashboard runs."""
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": SEED,
        "request-timeout": REQUEST_TIMEOUT_SECONDS,
        "generation": {
            "mode": "all",
            "max-examples": MAX_EXAMPLES,
            "deterministic": True,
            "no-shrink": True,
            "database": "none",
        },
        "phases": {
            "examples": {"enabled": True},
            "coverage": {"enabled": True},
            "fuzzing": {"enabled": True},
            "stateful": {"enabled": False},
        },
    }
)
schema = schemathesis.openapi.from_dict(DOCUMENT, config=CONFIG).exclude(method="GET", path=STREAM)


@pytest.fixture(scope="module")
def published(world: World) -> dict[str, Any]:
    """The OpenAPI document the running dashboard serves."""
    with httpx.Client(base_url=world.dashboard.url, timeout=REQUEST_TIMEOUT_SECONDS) as client:
        answer = client.get(OPENAPI)
    assert answer.status_code == 200, answer.text
    document: dict[str, Any] = answer.json()
    return document


@pytest.fixture(scope="module")
def dashboard_url(world: World, published: dict[str, Any]) -> str:
    """The running dashboard, once it is known to publish the document the tests are made of."""
    assert published == DOCUMENT, "the running dashboard publishes another document than its application builds"
    return world.dashboard.url


@pytest.fixture
def operator_headers(world: World) -> dict[str, str]:
    """The operator's ID token, in the header Envoy sets, fresh for each operation's run."""
    return world.dashboard.headers("operator")


@schema.parametrize()
@settings(
    suppress_health_check=list(HealthCheck)
)  # a live server behind strict bodies: slow, heavily filtered data is expected
def test_every_operation_answers_as_it_documents(
    case: Case, dashboard_url: str, operator_headers: dict[str, str]
) -> None:
    case.call_and_validate(base_url=dashboard_url, headers=operator_headers, checks=CHECKS)


def served_api_routes() -> set[tuple[str, str]]:
    """Every (method, path) the dashboard's application serves under /api/v1, but the document itself."""
    app = create_app(None)  # type: ignore[arg-type]  # the routes need no state
    routes: set[tuple[str, str]] = set()
    for route in iter_route_contexts(app.routes):
        path = route.path or ""
        if not path.startswith(API + "/") or path == app.openapi_url:
            continue
        assert route.methods, f"{path} is not an HTTP route, so it cannot be documented"
        routes |= {(method.lower(), path) for method in route.methods - {"HEAD"}}
    return routes


def documented_operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(method, path): operation for path, item in document["paths"].items() for method, operation in item.items()}


def test_the_document_lists_every_api_route(published: dict[str, Any]) -> None:
    assert set(documented_operations(published)) == served_api_routes()


def test_every_write_documents_409_and_422_with_a_problem_body(published: dict[str, Any]) -> None:
    writes = {key: operation for key, operation in documented_operations(published).items() if key[0] in WRITE_METHODS}
    assert writes
    for (method, path), operation in writes.items():
        for status in ("409", "422"):
            assert status in operation["responses"], f"{method.upper()} {path} does not document {status}"
            body = operation["responses"][status]["content"]["application/json"]["schema"]
            assert body == {"$ref": "#/components/schemas/Problem"}, f"{method.upper()} {path} {status}"


def test_every_operation_documents_each_refusal_with_a_problem_body(published: dict[str, Any]) -> None:
    assert set(published["components"]["schemas"]["Problem"]["required"]) == {"error", "message"}
    for (method, path), operation in documented_operations(published).items():
        for status in PROBLEM_STATUSES:
            content = operation["responses"].get(status, {}).get("content", {})
            assert content.get("application/json", {}).get("schema") == {"$ref": "#/components/schemas/Problem"}, (
                f"{method.upper()} {path} {status}"
            )
