"""Capture the live view the program reads into a snapshot file (for offline renders and bug reports)."""

from __future__ import annotations

from pathlib import Path

import yaml

from providers.kube import KubeAccess, open_client
from providers.live_reader import read_live_objects

_VOLATILE_METADATA = ("managedFields",)


def capture(access: KubeAccess, *, system_namespace: str, out: Path) -> int:
    """Write every object one observation reads to `out` as a `List`; returns how many.

    The same LISTs as a run, so the file renders what the program would see; what Ollama Pods
    answer through the pod proxy (tags, memory) is not an object and is not captured. Secrets
    are never among them. managedFields are dropped: they are large and the plan reads none.
    """
    with open_client(access) as client:
        objects = read_live_objects(client, system_namespace)
    for obj in objects:
        for key in _VOLATILE_METADATA:
            obj.get("metadata", {}).pop(key, None)
    document = {"apiVersion": "v1", "kind": "List", "items": objects}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(document, sort_keys=True), encoding="utf-8")
    return len(objects)
