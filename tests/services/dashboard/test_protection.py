"""The same-origin rule, the form tokens and the protective headers (protection.py), without a
cluster: the rules as pure functions, and the application refusing before any route runs.

What the API server then holds (nothing written) is checked in test_cross_site.py, against the
test API server, and in the browser suite from a page of another site.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import Headers

from services.dashboard.app import create_app
from services.dashboard.identity import Identity
from services.dashboard.protection import CONTENT_SECURITY_POLICY, FormTokens, SameOriginRule, json_body_refusal

DASHBOARD = "dashboard.example.local"
RULE = SameOriginRule(hosts=(DASHBOARD, "dashboard.example.com"))
ALICE = Identity(
    subject="alice",
    role="admin",
    groups=(),
    kubernetes_user="oidc:alice",
    kubernetes_groups=("magicstick:administrators",),
    session="s-1",
)


def headers(**values: str) -> Headers:
    return Headers({name.replace("_", "-"): value for name, value in values.items()})


def refused(method: str, path: str, **values: str) -> bool:
    return RULE.refusal(method=method, path=path, headers=headers(**values)) is not None


class TestTheSameOriginRule:
    @pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS", "get"])
    def test_a_read_is_never_refused(self, method: str) -> None:
        assert not refused(method, "/modules", sec_fetch_site="cross-site", origin="https://evil.example.com")

    @pytest.mark.parametrize("site", ["cross-site", "same-site", "none", "", "SAME-SITE"])
    def test_a_change_whose_browser_says_it_is_not_same_origin_is_refused(self, site: str) -> None:
        assert refused("POST", "/host-operations", sec_fetch_site=site, origin=f"https://{DASHBOARD}")

    def test_sec_fetch_site_same_origin_is_enough(self) -> None:
        assert not refused("POST", "/host-operations", sec_fetch_site="same-origin")

    @pytest.mark.parametrize(
        "origin",
        [
            "https://evil.example.com",
            "null",
            f"https://{DASHBOARD}.evil.example.com",
            f"https://user@{DASHBOARD}",
            f"ftp://{DASHBOARD}",
            "https://openclaw.example.local",
            f"https://{DASHBOARD}:8443",
            "",
        ],
    )
    def test_a_change_from_another_origin_is_refused(self, origin: str) -> None:
        assert refused("POST", "/instances", origin=origin)
        assert refused("PUT", "/api/v1/modules/litellm", origin=origin)

    @pytest.mark.parametrize("origin", [f"https://{DASHBOARD}", f"http://{DASHBOARD}", "https://DASHBOARD.example.COM"])
    def test_a_change_from_one_of_the_dashboards_own_hosts_goes_on(self, origin: str) -> None:
        assert not refused("POST", "/instances", origin=origin)

    def test_the_referer_is_the_fallback_when_there_is_no_origin(self) -> None:
        assert not refused("POST", "/instances", referer=f"https://{DASHBOARD}/instances")
        assert refused("POST", "/instances", referer="https://evil.example.com/page")

    def test_two_origins_are_refused(self) -> None:
        twice = Headers(raw=[(b"origin", f"https://{DASHBOARD}".encode()), (b"origin", b"https://evil.example.com")])
        assert RULE.refusal(method="POST", path="/instances", headers=twice) is not None

    def test_a_form_post_that_names_no_source_is_refused_and_an_api_call_is_not(self) -> None:
        assert refused("POST", "/host-operations")
        assert not refused("POST", "/api/v1/host-operations")

    def test_without_configured_hosts_the_requests_own_host_is_the_dashboards(self) -> None:
        rule = SameOriginRule()
        own = headers(host="127.0.0.1:8080", origin="http://127.0.0.1:8080")
        other = headers(host="127.0.0.1:8080", origin="http://localhost:8080")
        assert rule.refusal(method="POST", path="/instances", headers=own) is None
        assert rule.refusal(method="POST", path="/instances", headers=other) is not None

    def test_the_refusal_is_a_403_that_says_nothing_changed(self) -> None:
        refusal = RULE.refusal(method="POST", path="/host-operations", headers=headers(sec_fetch_site="cross-site"))
        assert refusal is not None
        assert (refusal.status, refusal.reason) == (403, "CrossSiteRequest")
        assert "nothing was changed" in refusal.message


class TestJsonBodies:
    @pytest.mark.parametrize(
        "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"]
    )
    def test_json_is_accepted(self, content_type: str) -> None:
        assert (
            json_body_refusal(method="PUT", path="/api/v1/modules/x", headers=headers(content_type=content_type))
            is None
        )

    @pytest.mark.parametrize(
        "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""]
    )
    def test_anything_else_under_api_is_a_415(self, content_type: str) -> None:
        refusal = json_body_refusal(method="POST", path="/api/v1/instances", headers=headers(content_type=content_type))
        assert refusal is not None and refusal.status == 415 and "Content-Type" in refusal.message

    def test_a_page_form_is_not_held_to_it(self) -> None:
        assert (
            json_body_refusal(
                method="POST", path="/instances", headers=headers(content_type="application/x-www-form-urlencoded")
            )
            is None
        )


class TestFormTokens:
    def test_a_token_is_valid_for_the_sign_in_it_was_issued_to(self) -> None:
        tokens = FormTokens.generated()
        assert tokens.refusal(ALICE, [tokens.issue(ALICE)]) is None

    def test_a_token_of_another_user_or_session_is_refused(self) -> None:
        tokens = FormTokens.generated()
        token = tokens.issue(ALICE)
        mallory = Identity(
            subject="mallory",
            role="admin",
            groups=(),
            kubernetes_user="oidc:mallory",
            kubernetes_groups=(),
            session="s-1",
        )
        other_session = Identity(
            subject="alice", role="admin", groups=(), kubernetes_user="oidc:alice", kubernetes_groups=(), session="s-2"
        )
        assert tokens.refusal(mallory, [token]) is not None
        assert tokens.refusal(other_session, [token]) is not None

    def test_a_token_of_another_dashboard_process_is_refused(self) -> None:
        assert FormTokens.generated().refusal(ALICE, [FormTokens.generated().issue(ALICE)]) is not None

    def test_a_token_expires(self) -> None:
        now = [1_000_000.0]
        tokens = FormTokens(key=b"k" * 32, lifetime_seconds=60, clock=lambda: now[0])
        token = tokens.issue(ALICE)
        now[0] += 61
        refusal = tokens.refusal(ALICE, [token])
        assert refusal is not None and "expired" in refusal.message

    def test_none_or_two_tokens_are_refused(self) -> None:
        tokens = FormTokens.generated()
        token = tokens.issue(ALICE)
        assert tokens.refusal(ALICE, []) is not None
        assert tokens.refusal(ALICE, [token, token]) is not None

    @given(st.text(max_size=200))
    def test_no_forged_token_passes_or_crashes(self, forged: str) -> None:
        refusal = FormTokens(key=b"k" * 32).refusal(ALICE, [forged])
        assert refusal is not None and refusal.status == 403


class Client:
    """The application in process, through httpx's ASGI transport. No state: everything checked
    here is answered before a route needs the cluster."""

    def __init__(self) -> None:
        self.app = create_app(None, hosts=(DASHBOARD,))  # type: ignore[arg-type]

    def request(self, method: str, path: str, **options: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=self.app), base_url=f"http://{DASHBOARD}"
            ) as client:
                return await client.request(method, path, **options)

        return asyncio.run(send())

    def get(self, path: str, **options: Any) -> httpx.Response:
        return self.request("GET", path, **options)

    def post(self, path: str, **options: Any) -> httpx.Response:
        return self.request("POST", path, **options)

    def put(self, path: str, **options: Any) -> httpx.Response:
        return self.request("PUT", path, **options)


@pytest.fixture(scope="module")
def client() -> Client:
    return Client()


class TestTheApplication:
    @pytest.mark.parametrize(
        ("path", "data"),
        [
            ("/host-operations", {"operation": "reboot", "node": "gpu-node-1", "acknowledgeDisruption": "on"}),
            ("/modules/litellm", {"enabled": "on"}),
            ("/instances", {"name": "x", "application": "openclaw"}),
        ],
    )
    def test_a_form_post_from_another_site_gets_the_refusal_page(
        self, client: Client, path: str, data: dict[str, str]
    ) -> None:
        answer = client.post(path, data=data, headers={"Origin": "https://evil.example.com"})
        assert answer.status_code == 403
        assert answer.headers["content-type"].startswith("text/html")
        assert "did not come from one of its own pages" in answer.text

    def test_an_api_write_from_another_site_gets_the_problem_shape(self, client: Client) -> None:
        answer = client.put("/api/v1/modules/litellm", json={"enabled": True}, headers={"Sec-Fetch-Site": "cross-site"})
        assert answer.status_code == 403
        assert answer.json()["error"] == "CrossSiteRequest"

    def test_an_api_write_that_is_not_json_is_a_415(self, client: Client) -> None:
        answer = client.post("/api/v1/instances", content=b'{"name": "x"}', headers={"Content-Type": "text/plain"})
        assert answer.status_code == 415
        assert answer.json()["error"] == "UnsupportedMediaType"

    @pytest.mark.parametrize("path", ["/healthz", "/api/v1/openapi.json", "/no-such-page", "/api/v1/no-such"])
    def test_every_answer_carries_the_protective_headers(self, client: Client, path: str) -> None:
        answer = client.get(path)
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY and "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "same-origin"
        assert answer.headers["cache-control"] == "no-store"

    def test_a_refusal_carries_them_too(self, client: Client) -> None:
        answer = client.post("/host-operations", headers={"Origin": "null"})
        assert answer.headers["x-frame-options"] == "DENY" and answer.headers["cache-control"] == "no-store"

    def test_static_files_may_be_cached_but_not_sniffed(self, client: Client) -> None:
        answer = client.get("/static/live.js")
        assert answer.status_code == 200
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert "no-store" not in answer.headers.get("cache-control", "")
