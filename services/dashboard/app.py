"""The dashboard's ASGI application: the JSON API, the pages, the static files, /healthz.

Refusals have one meaning everywhere and two shapes: JSON (`api.Problem`) under /api, an HTML
page elsewhere, with the same status code. A request the sign-in refuses never reaches the
API server, nor does a change from another site or a form without its token (protection.py).
"""

from __future__ import annotations

import time
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.dashboard import api, pages
from services.dashboard.identity import IdentityRefused
from services.dashboard.protection import (
    FORM_TOKEN_FIELD,
    SAFE_METHODS,
    CrossSiteGuard,
    FormTokens,
    ProtectiveHeaders,
    SameOriginRule,
)
from services.dashboard.refusals import FieldProblem, Refusal, http_refusal
from services.dashboard.requesting import DashboardState, current_identity

STATIC = Path(__file__).parent / "static"


def create_app(state: DashboardState, *, hosts: tuple[str, ...] = (), form_tokens: FormTokens | None = None) -> FastAPI:
    """The application. `hosts`: the dashboard's own `host[:port]`s (settings.hosts);
    `form_tokens`: the pages' form tokens (a new key when None)."""
    app = FastAPI(
        title="Magic Stick dashboard",
        version="v1",
        description="Runtime requests of the appliance, read and written as the signed-in user.",
        openapi_url="/api/v1/openapi.json",
        docs_url=None,
        redoc_url=None,
    )
    app.state.dashboard = state
    tokens = form_tokens or FormTokens.generated()

    async def form_token(request: Request) -> None:
        """Issues the form token of a page (request.state.form_token, read by the templates)
        and checks the one a form post carries, before the route reads anything else."""
        identity = await current_identity(request)
        request.state.form_token = tokens.issue(identity)
        if request.method.upper() in SAFE_METHODS:
            return
        form = await request.form()
        refusal = tokens.refusal(identity, [str(value) for value in form.getlist(FORM_TOKEN_FIELD)])
        if refusal is not None:
            raise refusal

    app.include_router(api.router)
    app.include_router(pages.router, dependencies=[Depends(form_token)])
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok\n")

    app.add_exception_handler(Refusal, _refused)
    app.add_exception_handler(IdentityRefused, _identity_refused)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(HTTPException, _http_refused)
    app.add_middleware(CrossSiteGuard, rule=SameOriginRule(hosts=hosts), render=pages.refusal_page)
    app.add_middleware(ProtectiveHeaders)
    app.add_middleware(ServerTiming)
    return app


class ServerTiming:
    """Sets `Server-Timing: app;dur=<ms>` on every HTTP response: the time from the request's
    arrival to the start of its response (its headers), so for a page everything the dashboard
    did for it (sign-in, API reads, rendering). For a stream, only until it starts. A plain ASGI
    middleware: it never buffers a body, so server-sent events pass through as they are."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append(
                    "Server-Timing", f"app;dur={(time.perf_counter() - started) * 1000:.2f}"
                )
            await send(message)

        await self.app(scope, receive, timed)


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


async def _refused(request: Request, error: Exception) -> Response:
    assert isinstance(error, Refusal)
    if _wants_json(request):
        return JSONResponse(error.body(), status_code=error.status, headers=error.headers)
    page = pages.refusal_page(request, error)
    page.headers.update(error.headers)
    return page


async def _identity_refused(request: Request, error: Exception) -> Response:
    assert isinstance(error, IdentityRefused)
    refusal = Refusal(error.status, error.reason, error.detail)
    if _wants_json(request):
        return JSONResponse(refusal.body(), status_code=refusal.status)
    return pages.refusal_page(request, refusal)


async def _http_refused(request: Request, error: Exception) -> Response:
    """What the framework itself refuses (a body it cannot read, a path or method no route serves)."""
    assert isinstance(error, HTTPException)
    refusal = http_refusal(error.status_code, str(error.detail), json_body=_wants_json(request))
    if _wants_json(request):
        return JSONResponse(refusal.body(), status_code=refusal.status, headers=error.headers)
    return pages.refusal_page(request, refusal)


async def _invalid_request(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestValidationError)
    problems = tuple(
        FieldProblem(".".join(str(part) for part in problem["loc"] if part != "body"), str(problem["msg"]))
        for problem in error.errors()
    )
    refusal = Refusal(422, "Invalid", "; ".join(f"{p.field}: {p.message}" for p in problems), problems)
    if _wants_json(request):
        return JSONResponse(refusal.body(), status_code=422)
    return pages.refusal_page(request, refusal)


__all__ = ["create_app", "HTMLResponse"]
