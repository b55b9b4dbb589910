"""Building check requests as Envoy sends them to the guard."""

from __future__ import annotations

import http.client
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from tests.services.access_guard.process import GuardProcess

TOKEN_HEADER = "X-Magicstick-Id-Token"
USER_HEADER = "X-Magicstick-User"
ROLE_HEADER = "X-Magicstick-Role"
GROUPS_HEADER = "X-Magicstick-Groups"
IDENTITY_HEADERS = (USER_HEADER, ROLE_HEADER, GROUPS_HEADER)


def check_path(instance: str, original: str = "/v1/chat/completions") -> str:
    """The guard's path for a request of `ai-system/<instance>` to `original`."""
    return f"/instances/ai-system/{instance}{original}"


def bearer(token: str) -> dict[str, str]:
    return {TOKEN_HEADER: token}


def logged_reasons(guard: GuardProcess, instance: str) -> list[str]:
    """The reasons of the denials the guard logged (at info) for `ai-system/<instance>`, in order."""
    pattern = re.compile(rf"deny status=\d+ reason=(\S+) instance=ai-system/{re.escape(instance)} ")
    return [match.group(1) for match in pattern.finditer(guard.log_text())]


def raw_status(guard: GuardProcess, target: str, headers: Mapping[str, str] | None = None) -> int:
    """The status for a request target sent exactly as written (httpx would normalise it)."""
    address = urlsplit(guard.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=10)
    try:
        connection.request("GET", target, headers=dict(headers or {}))
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()
