"""Waiting on a real API server for an object to reach a state: by watching, never by sleeping."""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from providers.kube import EventType, KubeClient, ResourceKind

T = TypeVar("T")


def watch_until(
    client: KubeClient,
    kind: ResourceKind,
    namespace: str | None,
    name: str,
    done: Callable[[dict[str, Any]], bool],
    seconds: float,
    *,
    explain: Callable[[], str] = lambda: "",
) -> dict[str, Any]:
    """The object once `done` holds for it, watched from a first read (it may not exist yet);
    after `seconds` the test fails with the object's last status and what `explain` says (why
    it may still wait)."""
    deadline = time.monotonic() + seconds
    collection = client.list_collection(kind, namespace=namespace)
    version = collection.resource_version
    found = next((item for item in collection.items if item["metadata"]["name"] == name), None)
    current: dict[str, Any] = found if found is not None else {"metadata": {"name": name}, "status": "not created yet"}
    while found is None or not done(current):
        remaining = deadline - time.monotonic()
        where = f"{namespace}/{name}" if namespace else name
        assert remaining > 0, f"{kind.kind} {where} not done within {seconds} s: {current.get('status')}\n{explain()}"
        with client.watch(
            kind, namespace=namespace, resource_version=version, timeout_seconds=max(1, int(remaining))
        ) as stream:
            for event in stream:
                version = event.resource_version or version
                if (event.object.get("metadata") or {}).get("name") == name and event.object.get("kind") == kind.kind:
                    current = found = event.object
                    if done(current):
                        break
    return current


def watch_until_gone(client: KubeClient, kind: ResourceKind, namespace: str | None, name: str, seconds: float) -> None:
    """Return once the object no longer exists (its DELETED event, or absent from the first
    read); after `seconds` the test fails with its last state (a finalizer that stayed)."""
    deadline = time.monotonic() + seconds
    collection = client.list_collection(kind, namespace=namespace)
    version = collection.resource_version
    current = next((item for item in collection.items if item["metadata"]["name"] == name), None)
    while current is not None:
        remaining = deadline - time.monotonic()
        where = f"{namespace}/{name}" if namespace else name
        assert remaining > 0, (
            f"{kind.kind} {where} still exists after {seconds} s: finalizers {current['metadata'].get('finalizers')}"
        )
        with client.watch(
            kind, namespace=namespace, resource_version=version, timeout_seconds=max(1, int(remaining))
        ) as stream:
            for event in stream:
                version = event.resource_version or version
                if (event.object.get("metadata") or {}).get("name") == name and event.object.get("kind") == kind.kind:
                    if event.type is EventType.DELETED:
                        return
                    current = event.object


def watch_collection_until(
    client: KubeClient,
    kind: ResourceKind,
    namespace: str | None,
    found: Callable[[list[dict[str, Any]]], T | None],
    seconds: float,
    *,
    label_selector: str | None = None,
    explain: Callable[[], str] = lambda: "",
) -> T:
    """What `found` returns, once it returns something, for the objects of `kind` that
    `label_selector` selects as they stand (a first read, then each watch event); after
    `seconds` the test fails with what `explain` says."""
    deadline = time.monotonic() + seconds
    collection = client.list_collection(kind, namespace=namespace, label_selector=label_selector)
    version = collection.resource_version
    objects = {item["metadata"]["name"]: item for item in collection.items}
    result = found(list(objects.values()))
    while result is None:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {kind.kind} as awaited within {seconds} s\n{explain()}"
        with client.watch(
            kind,
            namespace=namespace,
            label_selector=label_selector,
            resource_version=version,
            timeout_seconds=max(1, int(remaining)),
        ) as stream:
            for event in stream:
                version = event.resource_version or version
                name = (event.object.get("metadata") or {}).get("name")
                if event.object.get("kind") != kind.kind or name is None:
                    continue
                if event.type is EventType.DELETED:
                    objects.pop(name, None)
                else:
                    objects[name] = event.object
                result = found(list(objects.values()))
                if result is not None:
                    break
    return result


def follow_log_until(log: Path, text: str, seconds: float, *, explain: Callable[[], str] = lambda: "") -> None:
    """Return once `text` is in the log file `log`, read from its start and then followed as it
    grows (`tail -F`: each write wakes the reader); after `seconds` the test fails."""
    deadline = time.monotonic() + seconds
    wanted = text.encode()
    seen = b""
    with subprocess.Popen(["tail", "-c", "+1", "-F", str(log)], stdout=subprocess.PIPE) as follower:
        assert follower.stdout is not None
        try:
            while wanted not in seen:
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"{text!r} not in {log} within {seconds} s\n{explain()}"
                readable, _, _ = select.select([follower.stdout], [], [], remaining)
                if readable:
                    seen = seen[-len(wanted) :] + os.read(follower.stdout.fileno(), 65536)
        finally:
            follower.kill()
