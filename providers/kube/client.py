"""KubeClient: the few REST verbs the program needs, over a configured httpx client.

Bodies stay raw JSON. Every request is retried under the RetryPolicy on 429, 5xx and
connection errors; every failure raises a typed KubeError that keeps the server's Status, or,
when no answer came, a KubeConnectionError naming the server's URL and what failed.
A server whose certificate fails TLS verification is not retried: no wait makes it trusted.
A watch is the exception: it is never retried here, because only its caller knows where to
resume (see watch.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import httpx

from providers.kube.errors import (
    ConnectionFailure,
    Gone,
    NotFound,
    ServerError,
    TooManyRequests,
    connection_error,
    error_for,
)
from providers.kube.retry import RetryPolicy
from providers.kube.watch import TcpKeepalive, WatchStream, set_keepalive

PropagationPolicy = Literal["Background", "Foreground", "Orphan"]
"""DeleteOptions.propagationPolicy: what becomes of an object's dependents when it is deleted."""

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
DEFAULT_PAGE_SIZE = 500
"""Objects per LIST page: one answer holds at most this many, whatever the size of the kind."""
RELISTS = 3
"""How many times a paged LIST starts again after its `continue` token expired (410 Gone)."""
WATCH_READ_MARGIN_SECONDS = 15.0
"""By default, how much longer than the watch's own timeoutSeconds a read may wait before the
connection counts as dead: the server ends an idle watch at timeoutSeconds, so silence beyond is
a fault."""


class ExpiredContinue(Exception):
    """A later page of a LIST answered 410 Gone: its `continue` token expired."""

    def __init__(self, gone: Gone) -> None:
        super().__init__(str(gone))
        self.gone = gone


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
        return f"{self.collection_path(namespace)}/{quote(name, safe='')}"


@dataclass(frozen=True)
class Collection:
    """The objects of one list and the resourceVersion the server read them at."""

    items: list[dict[str, Any]]
    resource_version: str


@dataclass(frozen=True)
class ListPage:
    """One page of a LIST as the server answered it: its objects (each given its apiVersion and
    kind, which a list's items lack), the token of the next page, the list's resourceVersion."""

    items: list[dict[str, Any]]
    continue_token: str | None
    resource_version: str

    @classmethod
    def of(cls, kind: ResourceKind, page: dict[str, Any]) -> ListPage:
        """Pure."""
        metadata = page.get("metadata") or {}
        items = [{"apiVersion": kind.api_version, "kind": kind.kind, **item} for item in page.get("items") or ()]
        return cls(
            items=items,
            continue_token=metadata.get("continue") or None,
            resource_version=str(metadata.get("resourceVersion") or ""),
        )


IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_GROUP = "Impersonate-Group"


class KubeClient:
    def __init__(
        self,
        http: httpx.Client,
        *,
        retry: RetryPolicy,
        sleep: Callable[[float], object] = time.sleep,
        impersonation: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self._http = http
        self._retry = retry
        self._sleep = sleep
        self._impersonation = impersonation
        self.requests = 0

    def impersonating(self, user: str, groups: Sequence[str]) -> KubeClient:
        """A client on the same connection whose every request acts as `user` in `groups`
        (Kubernetes impersonation: the server authorizes the request as that identity, and the
        configured credentials need the `impersonate` verb on those users and groups)."""
        headers = ((IMPERSONATE_USER, user), *((IMPERSONATE_GROUP, group) for group in groups))
        return KubeClient(self._http, retry=self._retry, sleep=self._sleep, impersonation=headers)

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
        headers = [("Accept", "application/json"), *self._impersonation]
        if content_type is not None:
            headers.append(("Content-Type", content_type))
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
                unreachable = connection_error(
                    error, method=method, path=path, url=self.server, timeout=self._http.timeout
                )
                if last or unreachable.failure is ConnectionFailure.CERTIFICATE_REJECTED:
                    raise unreachable from error
                self._sleep(self._retry.delay(attempt))
                continue
            if response.is_success:
                return response.json() if response.content else {}
            refusal = error_for(response)
            if last or not isinstance(refusal, (TooManyRequests, ServerError)):
                raise refusal
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
        return self.list_collection(kind, namespace=namespace, label_selector=label_selector, page_size=page_size).items

    def list_collection(
        self,
        kind: ResourceKind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> Collection:
        """`list`, with the resourceVersion of the collection: where a watch of it resumes.

        Every page of one list is read at the first page's resourceVersion (the `continue` token
        pins it), so the last page's is the whole list's. A token the server no longer serves
        (410 Gone: its resourceVersion was compacted while the pages were read) drops the pages
        read so far and lists again from the first page, at most RELISTS times; the Gone of the
        last attempt is raised. A 410 on the first page is not a stale token and is raised.
        """
        for relist in range(RELISTS + 1):
            try:
                return self._pages(kind, namespace=namespace, label_selector=label_selector, page_size=page_size)
            except ExpiredContinue as expired:
                if relist == RELISTS:
                    raise expired.gone from None
        raise AssertionError("unreachable")

    def _pages(
        self, kind: ResourceKind, *, namespace: str | None, label_selector: str | None, page_size: int
    ) -> Collection:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            try:
                page = self.request(
                    "GET",
                    kind.collection_path(namespace),
                    params={"limit": page_size, "continue": token, "labelSelector": label_selector},
                )
            except Gone as gone:
                if token is None:
                    raise
                raise ExpiredContinue(gone) from gone
            listed = ListPage.of(kind, page)
            items.extend(listed.items)
            token = listed.continue_token
            if not token:
                return Collection(items=items, resource_version=listed.resource_version)

    @contextmanager
    def watch(
        self,
        kind: ResourceKind,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        read_deadline_seconds: float | None = None,
        keepalive: TcpKeepalive | None = TcpKeepalive(),
    ) -> Iterator[WatchStream]:
        """One watch of a collection, from `resource_version` (exclusive), with bookmarks.

        The server ends it after `timeout_seconds`. A read that waits longer than
        `read_deadline_seconds` (default: `timeout_seconds` plus WATCH_READ_MARGIN_SECONDS) for
        the next byte (an event, a bookmark, the end) counts the connection as dead and raises
        KubeConnectionError (Timeout). `keepalive` is set on the socket (None: left as it is).
        Not retried: raises the typed KubeError of a refusal (Gone when `resource_version` is too
        old, ResourceVersionTooLarge when it is newer than the server holds; the server may also
        say so later, as an ERROR event the stream raises) and KubeConnectionError when no answer
        came. The connection is closed on exit.
        """
        path = kind.collection_path(namespace)
        params: dict[str, str | int | None] = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
            "labelSelector": label_selector,
        }
        configured = self._http.timeout
        read = (
            read_deadline_seconds if read_deadline_seconds is not None else timeout_seconds + WATCH_READ_MARGIN_SECONDS
        )
        timeout = httpx.Timeout(connect=configured.connect, read=read, write=configured.write, pool=configured.pool)
        request = self._http.build_request(
            "GET",
            path,
            params={k: v for k, v in params.items() if v is not None},
            headers=[("Accept", "application/json"), *self._impersonation],
            timeout=timeout,
        )
        self.requests += 1
        try:
            response = self._http.send(request, stream=True)
        except httpx.TransportError as error:
            raise connection_error(error, method="GET", path=path, url=self.server, timeout=timeout) from error
        try:
            if not response.is_success:
                try:
                    response.read()
                except httpx.TransportError as error:
                    raise connection_error(error, method="GET", path=path, url=self.server, timeout=timeout) from error
                raise error_for(response)
            stream = WatchStream(response, path=path, url=self.server, timeout=timeout)
            sock = stream.raw_socket()
            if keepalive is not None and sock is not None:
                set_keepalive(sock, keepalive)
            yield stream
        finally:
            response.close()

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
            params={
                "fieldManager": field_manager,
                "force": "true" if force else None,
                "dryRun": "All" if dry_run else None,
            },
            body=body,
            content_type=APPLY_PATCH,
        )

    def create(self, kind: ResourceKind, body: Mapping[str, Any], *, field_manager: str) -> dict[str, Any]:
        """Create one object; an object of that name that exists already is a Conflict (409 AlreadyExists)."""
        namespace = body["metadata"].get("namespace")
        return self.request(
            "POST",
            kind.collection_path(namespace),
            params={"fieldManager": field_manager},
            body=body,
            content_type="application/json",
        )

    def delete(
        self,
        kind: ResourceKind,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
    ) -> None:
        """Delete one object, optionally only if it still has this UID and resourceVersion;
        `propagation_policy` (Background, Foreground, Orphan) decides what becomes of its
        dependents (the server's default for the kind when None)."""
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if preconditions:
            body["preconditions"] = preconditions
        if propagation_policy is not None:
            body["propagationPolicy"] = propagation_policy
        self.request("DELETE", kind.object_path(name, namespace), body=body, content_type="application/json")


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
