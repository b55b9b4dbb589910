"""KubeClient: the few REST verbs the program needs, over a configured httpx client.

Bodies stay raw JSON. Every request is retried under the RetryPolicy on 429, 5xx and
connection errors; every failure raises a typed KubeError that keeps the server's Status, or,
when no answer came, a KubeConnectionError naming the server's URL and what failed.
A server whose certificate fails TLS verification is not retried: no wait makes it trusted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from providers.kube.errors import ConnectionFailure, NotFound, ServerError, TooManyRequests, connection_error, error_for
from providers.kube.retry import RetryPolicy

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
DEFAULT_PAGE_SIZE = 500


@dataclass(frozen=True)
class ResourceKind:
    """One kind of the API: where its objects live and what they are called."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        if self.namespaced and namespace:
            return f"{self.group_version_path}/namespaces/{quote(namespace)}/{self.plural}"
        return f"{self.group_version_path}/{self.plural}"

    def object_path(self, name: str, namespace: str | None = None) -> str:
        return f"{self.collection_path(namespace)}/{quote(name)}"


class KubeClient:
    def __init__(self, http: httpx.Client, *, retry: RetryPolicy, sleep: Callable[[float], None] = time.sleep) -> None:
        self._http = http
        self._retry = retry
        self._sleep = sleep
        self.requests = 0

    @property
    def server(self) -> str:
        """The server's URL, as the configuration names it (no trailing slash)."""
        return str(self._http.base_url).rstrip("/")

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
    ) -> dict[str, Any]:
        """Send one request (retried as the policy allows) and return the JSON body."""
        headers = {"Accept": "application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        clean_params = {k: v for k, v in (params or {}).items() if v is not None}
        for attempt in range(self._retry.attempts):
            last = attempt == self._retry.attempts - 1
            self.requests += 1
            try:
                response = self._http.request(
                    method,
                    path,
                    params=clean_params,
                    headers=headers,
                    content=None if body is None else _encode(body),
                )
            except httpx.TransportError as error:
                unreachable = connection_error(error, method=method, path=path, url=self.server, timeout=self._http.timeout)
                if last or unreachable.failure is ConnectionFailure.CERTIFICATE_REJECTED:
                    raise unreachable from error
                self._sleep(self._retry.delay(attempt))
                continue
            if response.is_success:
                return response.json() if response.content else {}
            error = error_for(response)
            if last or not isinstance(error, (TooManyRequests, ServerError)):
                raise error
            self._sleep(self._retry.delay(attempt, _retry_after(response)))
        raise AssertionError("unreachable: the loop returns or raises")

    def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self.request("GET", kind.object_path(name, namespace))

    def get_or_none(self, kind: ResourceKind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            return self.get(kind, name, namespace)
        except NotFound:
            return None

    def list(
        self,
        kind: ResourceKind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> list[dict[str, Any]]:
        """Every object of `kind`, following `continue` tokens; items get apiVersion and kind."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = self.request(
                "GET",
                kind.collection_path(namespace),
                params={"limit": page_size, "continue": token, "labelSelector": label_selector},
            )
            for item in page.get("items") or ():
                items.append({"apiVersion": kind.api_version, "kind": kind.kind, **item})
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def served_resources(self, group: str, version: str) -> frozenset[str] | None:
        """Plural names the server serves in group/version, or None when it serves no such version."""
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            body = self.request("GET", path)
        except NotFound:
            return None
        return frozenset(r["name"] for r in body.get("resources") or () if "/" not in r.get("name", ""))

    def apply(
        self,
        kind: ResourceKind,
        body: Mapping[str, Any],
        *,
        field_manager: str,
        force: bool = True,
        dry_run: bool = False,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Server-side apply `body` (whole object, or the status part with subresource='status')."""
        metadata = body["metadata"]
        path = kind.object_path(metadata["name"], metadata.get("namespace"))
        if subresource:
            path = f"{path}/{subresource}"
        return self.request(
            "PATCH",
            path,
            params={"fieldManager": field_manager, "force": "true" if force else None, "dryRun": "All" if dry_run else None},
            body=body,
            content_type=APPLY_PATCH,
        )

    def delete(
        self,
        kind: ResourceKind,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> None:
        """Delete one object, optionally only if it still has this UID and resourceVersion."""
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        body = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if preconditions:
            body["preconditions"] = preconditions
        self.request("DELETE", kind.object_path(name, namespace), body=body, content_type="application/json")


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
