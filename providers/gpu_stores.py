"""The two runtime-owned GPU stores: the validation history and the runtime images.

- `<system namespace>/magicstick-gpu-validation-history`, key `history.json`: every validation
  request and its stages (planning.hardware.validation), recorded before any Job exists;
- `flux-system/magicstick-gpu-runtime-images`, key `values.json`: KubeAI Helm values
  `{"modelServers": {<engine>: {"images": {"amd-gpu": <repository@digest>}}}}` the KubeAI
  HelmRelease reads through an optional `valuesFrom`. The program owns only the
  `modelServers.<engine>.images.amd-gpu` keys it writes; every other key stays as it is.

Both follow the discipline of the profile stores (providers/profile_store.py): read, change,
write back with the resourceVersion read, retry on 409 a bounded number of times, create only
from absence (with the stores' Flux metadata), never overwrite a document that cannot be read,
and write nothing when nothing changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from planning.hardware.validation import (
    HISTORY_CONFIG_MAP,
    HISTORY_KEY,
    MAX_HISTORY_RUNS,
    RUNTIME_IMAGE_NAME,
    RUNTIME_IMAGES_CONFIG_MAP,
    RUNTIME_IMAGES_KEY,
    RUNTIME_IMAGES_NAMESPACE,
    History,
    MalformedHistory,
    RunRecord,
    read_history,
    with_run,
)
from providers.kinds import CONFIG_MAP
from providers.kube import Conflict, KubeClient, NotFound
from providers.kube.client import MERGE_PATCH
from providers.profile_store import DEFAULT_ATTEMPTS, STORE_ANNOTATIONS, STORE_LABELS, serialise

HISTORY_FIELD_MANAGER: Final = "magicstick-gpu-validation-history"
RUNTIME_IMAGES_FIELD_MANAGER: Final = "magicstick-gpu-runtime-images"
HISTORY_ATTEMPTS: Final = MAX_HISTORY_RUNS
"""Each lost attempt means another writer's write landed; the history never has more writers
than runs it keeps, so this many attempts always suffice."""
HISTORY_LABELS: Final = {"app.kubernetes.io/managed-by": "magicstick", "app.kubernetes.io/component": "gpu-validation"}


class StoreContended(Exception):
    """Every compare-and-swap attempt lost to another writer."""


class MalformedStore(Exception):
    """The stored document cannot be read; it is left untouched."""


def compare_and_swap(
    client: KubeClient,
    *,
    namespace: str,
    name: str,
    key: str,
    change: Callable[[str | None], str | None],
    field_manager: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    attempts: int = DEFAULT_ATTEMPTS,
) -> bool:
    """Replace the text under `key` with `change(text)`; None means nothing to write. True when
    something was written. A missing ConfigMap is created from absence only."""
    lost: Exception | None = None
    for _ in range(attempts):
        current = client.get_or_none(CONFIG_MAP, name, namespace)
        text = None if current is None else (current.get("data") or {}).get(key)
        changed = change(text)
        if changed is None:
            return False
        try:
            if current is None:
                metadata = {
                    "name": name,
                    "namespace": namespace,
                    "labels": dict(labels),
                    "annotations": dict(annotations),
                }
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {key: changed}}
                client.request(
                    "POST",
                    CONFIG_MAP.collection_path(namespace),
                    params={"fieldManager": field_manager},
                    body=body,
                    content_type="application/json",
                )
            else:
                patch = {
                    "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                    "data": {key: changed},
                }
                client.request(
                    "PATCH",
                    CONFIG_MAP.object_path(name, namespace),
                    params={"fieldManager": field_manager},
                    body=patch,
                    content_type=MERGE_PATCH,
                )
        except (Conflict, NotFound) as error:
            if isinstance(error, NotFound) and current is None:
                raise
            lost = error
            continue
        return True
    raise StoreContended(
        f"ConfigMap {namespace}/{name} key {key}: another writer changed it before each of {attempts} attempts"
    ) from lost


def _swap_history(
    client: KubeClient, namespace: str, change: Callable[[str | None], str | None], *, attempts: int = DEFAULT_ATTEMPTS
) -> bool:
    """compare_and_swap on the validation history store of `namespace`."""
    return compare_and_swap(
        client,
        namespace=namespace,
        name=HISTORY_CONFIG_MAP,
        key=HISTORY_KEY,
        change=change,
        field_manager=HISTORY_FIELD_MANAGER,
        labels=HISTORY_LABELS,
        annotations={},
        attempts=attempts,
    )


def _history_text(history: History) -> str:
    return serialise(history.to_document())


def read_run(client: KubeClient, namespace: str, run_id: str) -> RunRecord | None:
    """The recorded run, or None. Raises MalformedStore for a history that cannot be read."""
    current = client.get_or_none(CONFIG_MAP, HISTORY_CONFIG_MAP, namespace)
    try:
        history = read_history(None if current is None else (current.get("data") or {}).get(HISTORY_KEY))
    except MalformedHistory as error:
        raise MalformedStore(str(error)) from error
    return history.runs.get(run_id)


def put_run(
    client: KubeClient,
    namespace: str,
    record: RunRecord,
    *,
    only_if_absent: bool = False,
    attempts: int = HISTORY_ATTEMPTS,
) -> RunRecord:
    """Record `record` by compare-and-swap (bounded: planning.hardware.validation.with_run).
    With `only_if_absent`, an already recorded run wins and is returned. Raises MalformedStore,
    HistoryFull, StoreContended or a KubeError."""
    kept: list[RunRecord] = []

    def change(text: str | None) -> str | None:
        try:
            history = read_history(text)
        except MalformedHistory as error:
            raise MalformedStore(str(error)) from error
        existing = history.runs.get(record.run_id)
        kept[:] = [existing] if existing is not None and only_if_absent else [record]
        if existing == kept[0]:
            return None
        return _history_text(with_run(history, kept[0]))

    _swap_history(client, namespace, change, attempts=attempts)
    return kept[0]


def _images_document(text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedStore(
            f"ConfigMap {RUNTIME_IMAGES_NAMESPACE}/{RUNTIME_IMAGES_CONFIG_MAP} key {RUNTIME_IMAGES_KEY} is not JSON"
        ) from error
    if not isinstance(document, dict):
        raise MalformedStore(
            f"ConfigMap {RUNTIME_IMAGES_NAMESPACE}/{RUNTIME_IMAGES_CONFIG_MAP} key {RUNTIME_IMAGES_KEY} is not an object"
        )
    return document


def with_runtime_image(document: Mapping[str, Any], engine: str, image: str) -> dict[str, Any] | None:
    """`document` with `modelServers.<engine>.images.amd-gpu` set; None when it already is. Pure."""
    servers = dict(document.get("modelServers") or {})
    server = dict(servers.get(engine) or {})
    images = dict(server.get("images") or {})
    if images.get(RUNTIME_IMAGE_NAME) == image:
        return None
    images[RUNTIME_IMAGE_NAME] = image
    server["images"] = images
    servers[engine] = server
    return {**document, "modelServers": servers}


def put_runtime_image(
    client: KubeClient, engine: str, image: str, *, namespace: str = RUNTIME_IMAGES_NAMESPACE
) -> bool:
    """Write the validated image of `engine` by compare-and-swap. True when something was written."""

    def change(text: str | None) -> str | None:
        document = with_runtime_image(_images_document(text), engine, image)
        return None if document is None else serialise(document)

    return compare_and_swap(
        client,
        namespace=namespace,
        name=RUNTIME_IMAGES_CONFIG_MAP,
        key=RUNTIME_IMAGES_KEY,
        change=change,
        field_manager=RUNTIME_IMAGES_FIELD_MANAGER,
        labels=STORE_LABELS,
        annotations=STORE_ANNOTATIONS,
    )


def bootstrap_history(client: KubeClient, namespace: str, *, bound: int) -> bool:
    """Create the history empty when absent, and drop the oldest finished runs beyond `bound`
    (by compare-and-swap). An existing history is never reset. True when something was written.
    Raises MalformedStore, StoreContended or a KubeError."""

    def change(text: str | None) -> str | None:
        try:
            history = read_history(text)
        except MalformedHistory as error:
            raise MalformedStore(str(error)) from error
        if text is not None and len(history.runs) <= bound:
            return None
        finished = sorted((r for r in history.runs.values() if r.finished), key=lambda r: (r.requested_at, r.run_id))
        excess = max(0, len(history.runs) - bound)
        dropped = {r.run_id for r in finished[:excess]}
        kept = History(runs={k: v for k, v in history.runs.items() if k not in dropped})
        if text is not None and not dropped:
            return None
        return _history_text(kept)

    return _swap_history(client, namespace, change)
