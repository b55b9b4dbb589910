"""The HTML pages under hostile input, against the running dashboard (world.py): no input is a
500.

Three parts:

- **The reported inputs** (issue 42): four inputs that answered 500 before form_fields.py; each
  is now a 422 whose page names the field.
- **The sweep**: every form and query field of every page, and every path parameter, given
  Unicode digits, signs, huge and negative numbers, empty strings, NUL bytes, very long strings
  and repeated parameters, as a viewer, an operator and an admin. Each answer must be one of
  PAGE_STATUSES.
- **schemathesis** over DOCUMENT, an OpenAPI document of the pages written here (the pages are
  not in the dashboard's own document: their routes are `include_in_schema=False`). Every field
  is a free string, or repeated, so schemathesis sends what it likes; it checks CHECKS on every
  answer, as each role. Configured as test_openapi.py's run (CONFIG): examples, coverage cases
  and MAX_EXAMPLES generated inputs, from a fixed seed, derandomized, without shrinking.

Every POST carries what the same-origin rule asks of a browser's form (`Origin` the dashboard's
own, `Sec-Fetch-Site: same-origin`) and the form token of the page that renders the form, read
from its hidden `csrf_token` field (`form_token`; none yet where a page carries none).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.generation.case import Case
from schemathesis.specs.openapi.checks import content_type_conformance, status_code_conformance

from tests.services.dashboard.world import World

ROLES = ("viewer", "operator", "admin")
PAGE_STATUSES = (200, 303, 401, 403, 404, 409, 422, 503)
"""What a page may answer: rendered, redirected after a change, or a refusal's page (refusals.py)."""
FORM_TOKEN_FIELD = "csrf_token"
SEED = 42
MAX_EXAMPLES = 25
REQUEST_TIMEOUT_SECONDS = 30
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance]
VARIANT = "qwen2505bcpu|VLLM|cpu|"
"""An offer of the add-a-model form: a CPU preset, its default artifact."""
MODEL_FIGURES = (
    "contextWindow",
    "maxNumSeqs",
    "kvCacheType",
    "memoryRequiredMi",
    "vramMi",
    "cpuOffloading",
    "allowMemoryRisk",
)
ACCESS = ("role", "exposure", "sharingMode", "sharingUsers", "sharingGroups")
EXAMPLES = {
    "name": "fuzz-model",
    "variant": VARIANT,
    "contextWindow": "4096",
    "maxNumSeqs": "2",
    "kvCacheType": "auto",
    "memoryRequiredMi": "8192",
    "vramMi": "1024",
    "cpuOffloading": "true",
    "allowMemoryRisk": "true",
    "step": "estimate",
    "resourceVersion": "1",
    "enabled": "true",
    "hasParameters": "true",
    "param.postgresStorage": "5Gi",
    "mode": "shared",
    "node": "fuzz-node",
    "slots": "4",
    "model": "openai/gpt-4o-mini",
    "apiBase": "https://api.example.com/v1",
    "modelType": "chat",
    "secretName": "fuzz-key",
    "secretKey": "key",
    "application": "openclaw",
    "role": "user",
    "exposure": "local",
    "sharingMode": "selected",
    "sharingUsers": "u-1, u-2",
    "sharingGroups": "g-1",
    "operation": "clear-model-cache",
    "planId": "plan-1",
    "acknowledgeDisruption": "true",
    "seen.contextWindow": "4096",
    "module": "litellm",
    "plural": "modelactivations",
}
"""A value each field or path parameter may well have; the node exists nowhere, so no host
operation or GPU sharing is ever written."""


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    fields: tuple[str, ...] = ()
    """The form's fields (a POST), or the query's (a GET)."""
    form_page: str = "/"
    """The page that renders the form: where its form token is."""

    @property
    def key(self) -> str:
        return f"{self.method.upper()} {self.path}"

    @property
    def path_parameters(self) -> tuple[str, ...]:
        return tuple(part[1:-1] for part in self.path.split("/") if part.startswith("{"))


ENDPOINTS = (
    Endpoint("get", "/"),
    Endpoint("get", "/objects/{plural}/{name}"),
    Endpoint("get", "/modules"),
    Endpoint(
        "post",
        "/modules/{module}",
        ("resourceVersion", "enabled", "hasParameters", "param.postgresStorage"),
        "/modules",
    ),
    Endpoint("post", "/modules/{module}/gpu-sharing", ("resourceVersion", "mode", "node", "slots"), "/modules"),
    Endpoint("get", "/models"),
    Endpoint("get", "/models/new", ("name", "variant", *MODEL_FIGURES)),
    Endpoint("post", "/models/new", ("name", "variant", *MODEL_FIGURES, "step"), "/models/new"),
    Endpoint("get", "/models/external/new"),
    Endpoint(
        "post",
        "/models/external/new",
        ("name", "model", "apiBase", "modelType", "secretName", "secretKey"),
        "/models/external/new",
    ),
    Endpoint(
        "post",
        "/models/{name}/edit",
        ("resourceVersion", "enabled", *MODEL_FIGURES, "seen.contextWindow"),
        "/models/new",
    ),
    Endpoint("post", "/models/{name}/restart", ("resourceVersion",), "/models/new"),
    Endpoint("get", "/instances"),
    Endpoint("post", "/instances", ("name", "application", *ACCESS), "/instances"),
    Endpoint("post", "/instances/{name}/edit", ("resourceVersion", "enabled", *ACCESS), "/instances"),
    Endpoint("get", "/host-operations"),
    Endpoint("post", "/host-operations", ("operation", "node", "planId", "acknowledgeDisruption"), "/host-operations"),
)


# The document ----------------------------------------------------------------------------------

FREE = {"type": "string"}
REPEATABLE = {"anyOf": [FREE, {"type": "array", "items": FREE, "minItems": 2, "maxItems": 3}]}
"""A field as schemathesis may send it: any string, or two or three of them (a repeated field)."""


def _responses(method: str) -> dict[str, Any]:
    html = {"content": {"text/html": {"schema": FREE}}}
    answers: dict[str, Any] = {
        str(status): {"description": "the page, or the refusal's page", **html}
        for status in PAGE_STATUSES
        if status != 303
    }
    if method == "post":
        answers["303"] = {"description": "changed: to the object's page", "headers": {"Location": {"schema": FREE}}}
    return answers


def _operation(endpoint: Endpoint) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": FREE, "example": EXAMPLES[name]}
        for name in endpoint.path_parameters
    ]
    operation: dict[str, Any] = {"operationId": endpoint.key, "responses": _responses(endpoint.method)}
    if endpoint.method == "get":
        parameters += [
            {
                "name": name,
                "in": "query",
                "style": "form",
                "explode": True,
                "schema": REPEATABLE,
                "example": EXAMPLES[name],
            }
            for name in endpoint.fields
        ]
    else:
        schema = {
            "type": "object",
            "properties": {name: REPEATABLE for name in endpoint.fields},
            "example": {name: EXAMPLES[name] for name in endpoint.fields},
        }
        operation["requestBody"] = {
            "required": True,
            "content": {"application/x-www-form-urlencoded": {"schema": schema}},
        }
    if parameters:
        operation["parameters"] = parameters
    return operation


def pages_document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in ENDPOINTS:
        paths.setdefault(endpoint.path, {})[endpoint.method] = _operation(endpoint)
    return {"openapi": "3.0.3", "info": {"title": "Magic Stick dashboard pages", "version": "v1"}, "paths": paths}


DOCUMENT = pages_document()
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
schema = schemathesis.openapi.from_dict(DOCUMENT, config=CONFIG)


# Browser-like requests -------------------------------------------------------------------------


class _FormTokens(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.values: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "input" and attributes.get("name") == FORM_TOKEN_FIELD:
            self.values.append(attributes.get("value") or "")


def form_token(client: httpx.Client, page: str) -> str | None:
    """The form token `page` carries for the client's user (its first hidden csrf_token field),
    or None where it carries none."""
    answer = client.get(page)
    finder = _FormTokens()
    finder.feed(answer.text)
    return finder.values[0] if finder.values else None


@dataclass
class Browser:
    """One role's requests as its browser makes them: the ID token Envoy forwards on each, and
    on each POST the same-origin headers and the form token of the form's page."""

    client: httpx.Client
    headers: dict[str, str]
    """The ID token, in the header Envoy sets."""
    origin: str
    tokens: dict[str, str | None]

    def token(self, page: str) -> str | None:
        if page not in self.tokens:
            self.tokens[page] = form_token(self.client, page)
        return self.tokens[page]

    def post_headers(self) -> dict[str, str]:
        return {"Origin": self.origin, "Sec-Fetch-Site": "same-origin"}

    def send(self, endpoint: Endpoint, path: str, values: dict[str, Any]) -> httpx.Response:
        if endpoint.method == "get":
            return self.client.get(path, params=values)
        token = self.token(endpoint.form_page)
        body = {**values, FORM_TOKEN_FIELD: token} if token is not None else values
        return self.client.post(path, data=body, headers=self.post_headers())


@pytest.fixture
def browsers(world: World) -> Iterator[dict[str, Browser]]:
    """A Browser for each role, with ID tokens fresh for each test."""
    headers = {role: world.dashboard.headers(role) for role in ROLES}
    clients = {
        role: httpx.Client(base_url=world.dashboard.url, headers=headers[role], timeout=REQUEST_TIMEOUT_SECONDS)
        for role in ROLES
    }
    try:
        yield {
            role: Browser(client, headers=headers[role], origin=world.dashboard.url, tokens={})
            for role, client in clients.items()
        }
    finally:
        for client in clients.values():
            client.close()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# The reported inputs -------------------------------------------------------------------------

GPU_SHARING = next(endpoint for endpoint in ENDPOINTS if endpoint.key == "POST /modules/{module}/gpu-sharing")
ADD_MODEL = next(endpoint for endpoint in ENDPOINTS if endpoint.key == "POST /models/new")
NEW_MODEL_PAGE = next(endpoint for endpoint in ENDPOINTS if endpoint.key == "GET /models/new")


@pytest.mark.parametrize(
    ("role", "endpoint", "path", "values", "field"),
    [
        pytest.param("operator", ADD_MODEL, "/models/new", {"name": "sup", "variant": VARIANT, "contextWindow": "²⁵⁶"}, "contextWindow", id="a form's contextWindow of superscript digits, as an operator"),
        pytest.param("viewer", NEW_MODEL_PAGE, "/models/new", {"variant": VARIANT, "contextWindow": "9" * 5000}, "contextWindow", id="a query's contextWindow of 5000 digits, as a viewer"),
        pytest.param("viewer", NEW_MODEL_PAGE, "/models/new", {"variant": VARIANT, "contextWindow": "²"}, "contextWindow", id="a query's contextWindow of a superscript two, as a viewer"),
        pytest.param("admin", GPU_SHARING, "/modules/gpu/gpu-sharing", {"resourceVersion": "1", "mode": "shared", "node": "fuzz-node", "slots": "9" * 5000}, "slots", id="gpu sharing slots of 5000 digits, as an admin"),
    ],
)  # fmt: skip
def test_each_reported_input_is_a_422_whose_page_names_the_field(
    browsers: dict[str, Browser], role: str, endpoint: Endpoint, path: str, values: dict[str, str], field: str
) -> None:
    """The queries carry a variant, as the add-a-model form's estimate does: without one, the
    page before the fix ignored the query."""
    answer = browsers[role].send(endpoint, path, values)
    assert answer.status_code == 422, answer.text[:2000]
    assert answer.headers["content-type"].startswith("text/html")
    assert f"<code>{field}</code>" in answer.text
    assert "in the digits 0-9 only" in answer.text


# The sweep ---------------------------------------------------------------------------------------

HOSTILE_VALUES: dict[str, Any] = {
    "superscript digits": "²⁵⁶",
    "an Arabic-Indic digit": "٣",
    "fullwidth digits": "４０９６",
    "a negative number": "-1",
    "a sign": "+4",
    "5000 digits": "9" * 5000,
    "a number beyond int64": "9" * 20,
    "a decimal": "4.5",
    "an empty string": "",
    "a space": " ",
    "a NUL byte": "\x00",
    "a NUL byte inside": "40\x0096",
    "10,000 characters": "x" * 10_000,
    "a line break": "a\nb",
    "the same value twice": "REPEATED",
    "two values": ["1", "2"],
}
"""Each value a field is given in turn (REPEATED: its example, twice), the other fields keeping
theirs."""
HOSTILE_NAMES = {
    "a NUL byte": "\x00",
    "a NUL byte inside": "a\x00b",
    "10,000 characters": "n" * 10_000,
    "dot dot": "..",
    "an encoded slash": "a/b",
    "superscript digits": "²⁵⁶",
    "upper case": "Model",
    "a space": " ",
    "a minus": "-1",
    "another script": "模型",
}


@dataclass(frozen=True)
class Objects:
    """What the edit forms edit: a local model and an instance, made by an operator."""

    model: str
    model_version: str
    instance: str
    instance_version: str


@pytest.fixture(scope="module")
def objects(world: World) -> Objects:
    model, instance = unique("fuzz-model"), unique("fuzz-claw")
    with world.dashboard.client("operator") as client:
        created_model = client.post(
            "/api/v1/models/local",
            json={"name": model, "preset": "qwen2505bcpu", "engine": "VLLM", "computeTarget": "cpu"},
        )
        created_instance = client.post("/api/v1/instances", json={"name": instance, "application": "openclaw"})
        client.put("/api/v1/modules/litellm", json={"enabled": True})
    assert created_model.status_code == 201, created_model.text
    assert created_instance.status_code == 201, created_instance.text
    return Objects(
        model=model,
        model_version=created_model.json()["metadata"]["resourceVersion"],
        instance=instance,
        instance_version=created_instance.json()["metadata"]["resourceVersion"],
    )


def _filled(endpoint: Endpoint, objects: Objects) -> tuple[str, dict[str, Any]]:
    """The endpoint's path and form with the examples, naming the objects it edits."""
    names = {"module": "litellm", "plural": "modelactivations", "name": objects.model}
    values = {name: EXAMPLES[name] for name in endpoint.fields}
    if endpoint.path.startswith("/models/{name}"):
        values["resourceVersion"] = objects.model_version
    if endpoint.path.startswith("/instances/{name}"):
        names["name"], values["resourceVersion"] = objects.instance, objects.instance_version
    if endpoint.path == "/modules/{module}/gpu-sharing":
        names["module"] = "gpu"
    if "name" in values:
        values["name"] = unique("fuzz")
    path = endpoint.path.format(**names)
    return path, values


def _answers_outside_the_pages_statuses(
    browsers: dict[str, Browser], endpoint: Endpoint, path: str, variations: dict[str, dict[str, Any]]
) -> list[str]:
    wrong = []
    for role, browser in browsers.items():
        for label, values in variations.items():
            status = browser.send(endpoint, path, values).status_code
            if status not in PAGE_STATUSES:
                wrong.append(f"{role}, {label}: {status}")
    return wrong


FIELDS = [
    pytest.param(endpoint, field, id=f"{endpoint.key} {field}") for endpoint in ENDPOINTS for field in endpoint.fields
]


@pytest.mark.parametrize(("endpoint", "field"), FIELDS)
def test_no_hostile_value_of_a_field_is_a_server_error(
    browsers: dict[str, Browser], objects: Objects, endpoint: Endpoint, field: str
) -> None:
    path, values = _filled(endpoint, objects)
    variations = {}
    for label, value in HOSTILE_VALUES.items():
        given = [values[field], values[field]] if value == "REPEATED" else value
        variations[label] = {**values, field: given}
    assert _answers_outside_the_pages_statuses(browsers, endpoint, path, variations) == []


PATHS = [
    pytest.param(endpoint, parameter, id=f"{endpoint.key} {parameter}")
    for endpoint in ENDPOINTS
    for parameter in endpoint.path_parameters
]


@pytest.mark.parametrize(("endpoint", "parameter"), PATHS)
def test_no_hostile_path_parameter_is_a_server_error(
    browsers: dict[str, Browser], objects: Objects, endpoint: Endpoint, parameter: str
) -> None:
    path, values = _filled(endpoint, objects)
    wrong = []
    for label, name in HOSTILE_NAMES.items():
        encoded = quote(name, safe="").replace(".", "%2E")
        names = {key: quote(EXAMPLES[key], safe="") for key in endpoint.path_parameters}
        hostile_path = endpoint.path.format(**{**names, parameter: encoded})
        wrong += [
            f"{label}: {problem}"
            for problem in _answers_outside_the_pages_statuses(
                browsers, endpoint, hostile_path, {"the examples": values}
            )
        ]
    assert wrong == []


def test_every_page_form_is_swept() -> None:
    """The endpoints here are the pages' routes (pages.py), each with a method and path."""
    from services.dashboard.pages import router

    served = {
        (method.lower(), route.path)
        for route in router.routes
        for method in getattr(route, "methods", set()) - {"HEAD"}
    }
    assert {(endpoint.method, endpoint.path) for endpoint in ENDPOINTS} == served


# schemathesis --------------------------------------------------------------------------------------


@pytest.fixture
def dashboard_url(world: World) -> str:
    return world.dashboard.url


@pytest.mark.parametrize("role", ROLES)
@schema.parametrize()
@settings(suppress_health_check=list(HealthCheck))  # a live server: slow, and heavily filtered data is expected
def test_no_generated_input_is_a_server_error(
    case: Case, role: str, browsers: dict[str, Browser], dashboard_url: str
) -> None:
    browser = browsers[role]
    headers = dict(browser.headers)
    if case.method.upper() == "POST":
        headers.update(browser.post_headers())
        # The coverage phase also sends methods a path does not serve (a POST to a page).
        endpoint = next(
            (endpoint for endpoint in ENDPOINTS if endpoint.method == "post" and endpoint.path == case.path), None
        )
        token = browser.token(endpoint.form_page if endpoint is not None else "/models/new")
        if token is not None and isinstance(case.body, dict):
            case.body = {**case.body, FORM_TOKEN_FIELD: token}
    case.call_and_validate(base_url=dashboard_url, headers=headers, checks=CHECKS)
