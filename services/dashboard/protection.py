"""What protects a signed-in user's browser from other sites: the same-origin rule for every
change, the form token of the pages, and the headers of every answer.

Behind the Gateway's OIDC filter the browser holds a session cookie for the dashboard's host,
so any page the user visits could send a request to it that the cookie signs in. The rules:

1. **Same origin for every change.** A request of any method but GET, HEAD and OPTIONS is
   refused (403 `CrossSiteRequest`) unless it comes from the dashboard's own pages:
   `Sec-Fetch-Site` must be `same-origin` when the browser sends it (`same-site` is refused:
   the applications on sibling hosts of the same domain are other sites here); without it,
   `Origin`, else `Referer`, must name one of the dashboard's own hosts (`--hosts`, or the
   request's own `Host` when none is set). `Origin: null` is refused. A request with none of
   the three is a client other than a browser: allowed under /api (where the body must be
   JSON, which no cross-site form can send), refused for the pages' forms.
2. **JSON bodies only under /api.** A change under /api must say `Content-Type:
   application/json` (else 415 `UnsupportedMediaType`).
3. **A form token on every page form.** Each page carries a token signed by the dashboard
   (HMAC-SHA256 under a key made at start) that binds the signed-in user and their sign-in
   session (the ID token's `sid` claim) to the time it was issued; a form post without a valid
   one of the same user is refused (403 `FormTokenInvalid`). A token lives FORM_TOKEN_SECONDS,
   and none survives a restart of the dashboard: the refusal says to reload the page.
4. **Headers on every answer.** PROTECTIVE_HEADERS (a strict Content-Security-Policy with no
   inline script or style and `frame-ancestors 'none'`, `X-Frame-Options: DENY`, `nosniff`,
   `Referrer-Policy: same-origin`), and `Cache-Control: no-store` on everything but /static
   (pages and answers carry the user's data). The server does not name its software
   (main.py turns uvicorn's `Server` header off).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.dashboard.identity import Identity
from services.dashboard.refusals import Refusal

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
API_PREFIX = "/api/"
STATIC_PREFIX = "/static/"
FORM_TOKEN_FIELD = "csrf_token"
FORM_TOKEN_SECONDS = 12 * 3600
"""How long a rendered form may be submitted: a working day, so a page left open still works."""
FORM_TOKEN_KEY_BYTES = 32
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
PROTECTIVE_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
NO_STORE = "no-store"


@dataclass(frozen=True)
class SameOriginRule:
    """Rule 1 of the module docstring. `hosts`: the dashboard's own `host[:port]`s, lower case;
    empty: the request's own Host header is the dashboard's host."""

    hosts: tuple[str, ...] = ()

    def refusal(self, *, method: str, path: str, headers: Headers) -> Refusal | None:
        """None when the request may go on, else the 403 to answer. Pure."""
        if method.upper() in SAFE_METHODS:
            return None
        fetch_site = headers.get("sec-fetch-site")
        if fetch_site is not None:
            if fetch_site.strip().lower() == "same-origin":
                return None
            return _cross_site(f"Sec-Fetch-Site is {fetch_site.strip()!r}")
        own = self.hosts or tuple(host.strip().lower() for host in headers.getlist("host")[:1])
        for header, shown in (("origin", "Origin"), ("referer", "Referer")):
            values = headers.getlist(header)
            if values:
                source = _host_of(values[0]) if len(values) == 1 else None
                if source is not None and source in own:
                    return None
                return _cross_site(f"{shown} is {', '.join(repr(value) for value in values)}")
        if path.startswith(API_PREFIX):
            return None
        return _cross_site("the form post names no Origin or Referer")


def _host_of(url: str) -> str | None:
    """The `host[:port]` of an http(s) URL, lower case; None for `null` or anything else."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
        return None
    return parts.netloc.lower()


def _cross_site(detail: str) -> Refusal:
    return Refusal(
        403,
        "CrossSiteRequest",
        f"The dashboard refused this change because it did not come from one of its own pages ({detail}); nothing was changed.",
    )


def json_body_refusal(*, method: str, path: str, headers: Headers) -> Refusal | None:
    """Rule 2: a change under /api whose body is not declared JSON gets a 415. Pure."""
    if method.upper() in SAFE_METHODS or not path.startswith(API_PREFIX):
        return None
    media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type == "application/json":
        return None
    shown = media_type or "none"
    return Refusal(
        415,
        "UnsupportedMediaType",
        f"Content-Type: the API accepts only application/json bodies (got {shown}); nothing was changed.",
    )


@dataclass(frozen=True)
class FormTokens:
    """Rule 3: issues and checks the pages' form tokens. The key lives only in this process."""

    key: bytes = field(repr=False)
    lifetime_seconds: int = FORM_TOKEN_SECONDS
    clock: Callable[[], float] = time.time

    @classmethod
    def generated(cls) -> FormTokens:
        return cls(key=secrets.token_bytes(FORM_TOKEN_KEY_BYTES))

    def issue(self, identity: Identity) -> str:
        issued = int(self.clock())
        return f"{issued}.{self._mac(identity, issued)}"

    def refusal(self, identity: Identity, submitted: Iterable[str]) -> Refusal | None:
        """None when exactly one token was submitted and it is valid for `identity` now."""
        tokens = list(submitted)
        if len(tokens) != 1:
            return _form_token_refused(f"the form carried {len(tokens)} {FORM_TOKEN_FIELD} fields, not one")
        issued_text, _, mac = tokens[0].partition(".")
        if not (issued_text.isascii() and issued_text.isdigit() and len(issued_text) <= 12):
            return _form_token_refused("its form token is malformed")
        issued = int(issued_text)
        if not hmac.compare_digest(mac.encode("ascii", "replace"), self._mac(identity, issued).encode("ascii")):
            return _form_token_refused("its form token was not issued to this sign-in by this dashboard")
        age = self.clock() - issued
        if age < 0 or age > self.lifetime_seconds:
            return _form_token_refused("its form token has expired")
        return None

    def _mac(self, identity: Identity, issued: int) -> str:
        message = "\x00".join((identity.kubernetes_user, identity.session or "", str(issued))).encode("utf-8")
        digest = hmac.new(self.key, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def _form_token_refused(detail: str) -> Refusal:
    return Refusal(
        403,
        "FormTokenInvalid",
        f"The dashboard refused this form because {detail}; nothing was changed. Reload the page and submit it again.",
    )


Render = Callable[[Request, Refusal], Response]


class CrossSiteGuard:
    """Rules 1 and 2, before any route runs: a plain ASGI middleware, so a refused request's
    body is never read and nothing reaches the API server. `render` makes the page of a
    refusal outside /api (under /api the JSON Problem shape)."""

    def __init__(self, app: ASGIApp, *, rule: SameOriginRule, render: Render) -> None:
        self.app = app
        self.rule = rule
        self.render = render

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        method, path = scope["method"], scope["path"]
        refusal = self.rule.refusal(method=method, path=path, headers=headers) or json_body_refusal(
            method=method, path=path, headers=headers
        )
        if refusal is None:
            await self.app(scope, receive, send)
            return
        if path.startswith(API_PREFIX):
            response: Response = JSONResponse(refusal.body(), status_code=refusal.status)
        else:
            response = self.render(Request(scope, receive), refusal)
        await response(scope, receive, send)


class ProtectiveHeaders:
    """Rule 4 on every HTTP answer, set when its headers start (no body is buffered, so the
    server-sent events pass as they are)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope["path"].startswith(STATIC_PREFIX)

        async def protected(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in PROTECTIVE_HEADERS.items():
                    headers[name] = value
                if not static:
                    headers["Cache-Control"] = NO_STORE
            await send(message)

        await self.app(scope, receive, protected)
