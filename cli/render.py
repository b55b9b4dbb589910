"""`magicstick render`: run the real program offline and write what it would declare.

Layout of DIR (file names are deterministic; the three folders are replaced on each run):
- resources/<kind>.<namespace>.<name>.yaml  every Kubernetes object, as declared;
- status/<kind>.<namespace>.<name>.yaml     the status each status write declares;
- dynamic/<type>.<name>.yaml                every other dynamic resource: type and inputs.
Secret values never reach a file: Secret data and Pulumi secrets are masked.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from catalogs import CatalogError, load_catalogs
from cli.offline import OfflineRun, Registration, run_offline
from components.status import StatusWrite
from planning.frozen import thaw
from program import main as program
from program.settings import SettingsError, parse_now
from providers.snapshot_file import SnapshotFileError, read_snapshot_file

MASK = "[secret]"
STATUS_TYPE = f"pulumi-python:{StatusWrite._resource_type_name}"
_KUBERNETES_PREFIX = "kubernetes:"
_SECRET_SIG = "4dabf18193072939515e22adb298388d"


class RenderInputError(Exception):
    """The snapshot, the catalogs or a flag is unusable; one line names the file and the object."""


@dataclass(frozen=True)
class RenderResult:
    resources: int
    statuses: int
    dynamic: int


def render(*, snapshot: Path, out: Path, catalog_dir: Path | None = None, now: str | None = None) -> RenderResult:
    _preflight(snapshot=snapshot, catalog_dir=catalog_dir, now=now)
    config = {"snapshotFile": str(snapshot)}
    if catalog_dir is not None:
        config["catalogDir"] = str(catalog_dir)
    if now is not None:
        config["now"] = now
    _, run = run_offline(program.run, config)
    resources = _kubernetes_objects(run)
    statuses = [_status_document(r) for r in run.of_type(STATUS_TYPE)]
    dynamic = [r for r in _dynamic_resources(run) if r.type != STATUS_TYPE]
    for folder in ("resources", "status", "dynamic"):
        shutil.rmtree(out / folder, ignore_errors=True)
        (out / folder).mkdir(parents=True)
    for obj in resources:
        _write(out / "resources" / _object_file_name(obj), obj)
    for status in statuses:
        _write(out / "status" / _object_file_name(status), status)
    for registration in dynamic:
        _write(
            out / "dynamic" / f"{_safe(registration.type)}.{_safe(registration.name)}.yaml",
            {"type": registration.type, "name": registration.name, "inputs": _mask(thaw(registration.inputs))},
        )
    return RenderResult(resources=len(resources), statuses=len(statuses), dynamic=len(dynamic))


def _preflight(*, snapshot: Path, catalog_dir: Path | None, now: str | None) -> None:
    try:
        read_snapshot_file(snapshot)
        load_catalogs(catalog_dir)
        parse_now(now)
    except (SnapshotFileError, CatalogError, SettingsError) as error:
        raise RenderInputError(str(error)) from error


def _kubernetes_objects(run: OfflineRun) -> list[dict[str, Any]]:
    objects = []
    for registration in run.registrations:
        if not registration.custom or not registration.type.startswith(_KUBERNETES_PREFIX):
            continue
        if registration.type.startswith("pulumi:providers:"):
            continue
        objects.append(_as_object(registration))
    return objects


def _as_object(registration: Registration) -> dict[str, Any]:
    inputs = thaw(registration.inputs)
    obj = {key: inputs[key] for key in ("apiVersion", "kind", "metadata") if key in inputs}
    for key in sorted(inputs):
        if key not in obj:
            obj[key] = inputs[key]
    if obj.get("kind") == "Secret":
        for key in ("data", "stringData"):
            if isinstance(obj.get(key), dict):
                obj[key] = {name: MASK for name in obj[key]}
    return _mask(obj)


def _dynamic_resources(run: OfflineRun) -> list[Registration]:
    return [
        r
        for r in run.registrations
        if r.custom and not r.type.startswith(_KUBERNETES_PREFIX) and not r.type.startswith("pulumi:providers:")
    ]


def _mask(value: Any) -> Any:
    if isinstance(value, Mapping):
        if value.get(_SECRET_SIG) is not None and "value" in value:
            return MASK
        return {key: _mask(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_mask(item) for item in value]
    return value


def _status_document(registration: Registration) -> dict[str, Any]:
    """The object as its status write would leave it: identity and status, nothing else."""
    inputs = thaw(registration.inputs)
    return {
        "apiVersion": inputs["apiVersion"],
        "kind": inputs["kind"],
        "metadata": {"name": inputs["name"], "namespace": inputs["namespace"]},
        "status": _mask(inputs["status"]),
    }


def _object_file_name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata", {})
    parts = [obj.get("kind", "object").lower(), metadata.get("namespace"), metadata.get("name", "unnamed")]
    return ".".join(_safe(p) for p in parts if p) + ".yaml"


def _safe(part: str) -> str:
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in part)


def _write(path: Path, document: Mapping[str, Any]) -> None:
    path.write_text(yaml.safe_dump(dict(document), sort_keys=True, default_flow_style=False), encoding="utf-8")


def summary(result: RenderResult, out: Path) -> Iterable[str]:
    yield f"wrote {result.resources} resources, {result.statuses} statuses and {result.dynamic} dynamic resources under {out}"
