"""`magicstick render`: run the real program offline and write what it would declare.

Layout of a render (file names are deterministic, see cli.files; cli.output writes them):
- resources/<kind>.<namespace>.<name>.yaml  every Kubernetes object, as declared;
- status/<kind>.<namespace>.<name>.yaml     the status each status write declares;
- dynamic/<type>.<name>.yaml                every other dynamic resource: type and inputs.
A name longer than 255 bytes is shortened with a stable hash suffix.
Secret values never reach a file: Secret data and Pulumi secrets are masked.
"""

from __future__ import annotations

import json
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from api import yamlio
from catalogs import CatalogError, load_catalogs
from cli.errors import RenderInputError, filesystem_error
from cli.files import DYNAMIC, RESOURCES, STATUS, RenderedFile, file_order, fit_file_name, safe_part
from cli.offline import DuplicateUrnError, OfflineRun, Registration, run_offline
from cli.output import FileWriter, check_output_directory, replace_directory, write_text_file
from cli.progress import QUIET, Progress
from cli.summary import counted, describe, listed, not_read, summarize
from components.status import StatusBatchWrite
from planning.frozen import thaw
from planning.objects import decode_status
from planning.plan import Plan
from planning.provider_wire import MEMBERS_INPUT
from planning.summary import RunSummary
from program import main as program
from program.access_config import ACCESS_KEYS, access_settings
from program.settings import RunSettingsError, parse_now
from providers.snapshot_file import (
    IgnoredKind,
    SnapshotFile,
    SnapshotFileError,
    load_snapshot_file,
    parse_snapshot_text,
)

__all__ = ["MASK", "RenderInputError", "RenderOptions", "RenderResult", "render", "render_files", "summary"]

MASK = "[secret]"
STATUS_TYPE = f"pulumi-python:{StatusBatchWrite._resource_type_name}"
STDIN = "-"
STDIN_NAME = "standard input"
_KUBERNETES_PREFIX = "kubernetes:"
_SECRET_SIG = "4dabf18193072939515e22adb298388d"
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*")
_ACCESS_FLAGS = {entry.key: entry.flag for entry in ACCESS_KEYS}


@dataclass(frozen=True)
class RenderOptions:
    """The flags of a run, as `pulumi up` reads them from the `magicstick:` config."""

    catalog_dir: Path | None = None
    now: str | None = None
    namespace: str | None = None
    """systemNamespace; None: the one the snapshot records, else the default."""
    domain: str | None = None
    local_domain: str | None = None
    access: Mapping[str, Any] = field(default_factory=dict)
    """The access keys (program.access_config.ACCESS_KEYS) that are set: a string, or a list."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """How an error names a value that no flag gave (a settings file's `<file>: <key>`), by key."""


@dataclass(frozen=True)
class RenderResult:
    files: tuple[RenderedFile, ...]
    """Every file of the render, in render order."""
    resources: int
    statuses: int
    dynamic: int
    status_summary: RunSummary
    ignored: tuple[IgnoredKind, ...] = ()
    """Objects of the snapshot of kinds the program does not read."""
    warnings: tuple[str, ...] = ()
    """What the user should know though the render went through: one line each, without the command's name."""

    @property
    def declared(self) -> str:
        """`37 resources, 13 statuses and 4 dynamic resources`: what the run declared, as every count line says it."""
        return listed(
            [
                counted(self.resources, "resource"),
                counted(self.statuses, "status", "statuses"),
                counted(self.dynamic, "dynamic resource"),
            ]
        )


def render(
    *,
    snapshot: Path | str,
    out: Path,
    catalog_dir: Path | None = None,
    now: str | None = None,
    namespace: str | None = None,
    domain: str | None = None,
    local_domain: str | None = None,
    access: Mapping[str, Any] | None = None,
    progress: Progress = QUIET,
    write_file: FileWriter = write_text_file,
) -> RenderResult:
    """Render `snapshot` into the directory `out`, replacing a previous render there atomically.

    `write_file` writes each file (tests pass one that fails). Raises RenderInputError.
    """
    check_output_directory(out)
    options = RenderOptions(
        catalog_dir=catalog_dir,
        now=now,
        namespace=namespace,
        domain=domain,
        local_domain=local_domain,
        access=access or {},
    )
    result = render_files(snapshot=snapshot, options=options, progress=progress)
    progress.stage(f"writing: {len(result.files)} files")
    replace_directory(out=out, files=result.files, write_file=write_file)
    return result


def render_files(
    *,
    snapshot: Path | str,
    options: RenderOptions,
    progress: Progress = QUIET,
    stdin: TextIO | None = None,
    pulumi_program: Callable[[], object] = program.run,
) -> RenderResult:
    """Run the program on `snapshot` (a path, or "-" for `stdin`) and return every file it renders.

    `pulumi_program` is the program to run: the real one, except in tests of the engine's rules.
    """
    with _snapshot_on_disk(snapshot, stdin=stdin) as (path, loaded):
        progress.stage(f"reading the snapshot: {counted(loaded.objects, 'object')}")
        config = _config(path, options, recorded_namespace=loaded.system_namespace)
        progress.stage("planning")
        try:
            planned, run = run_offline(pulumi_program, config)
        except DuplicateUrnError as error:
            raise RenderInputError(f"{_source_name(snapshot)}: {error}") from error
    result = _result(run, loaded, warnings=_warnings(_source_name(snapshot), loaded, planned))
    progress.stage(f"declaring: {result.declared}")
    return result


def _warnings(source: str, loaded: SnapshotFile, planned: object) -> tuple[str, ...]:
    """An empty snapshot, then each image slot the run found unset (the warnings its log gives)."""
    empty = (f"{source} holds no objects; the render is what an empty cluster gives",) if loaded.objects == 0 else ()
    images = planned.unset_images if isinstance(planned, Plan) else ()
    return (*empty, *(image.describe() for image in images))


def _source_name(snapshot: Path | str) -> str:
    return STDIN_NAME if str(snapshot) == STDIN else str(snapshot)


@contextmanager
def _snapshot_on_disk(snapshot: Path | str, *, stdin: TextIO | None) -> Iterator[tuple[Path, SnapshotFile]]:
    """The snapshot as a file the program can read, and its parsed content (checked first)."""
    if str(snapshot) != STDIN:
        yield Path(snapshot), _checked(lambda: load_snapshot_file(Path(snapshot)))
        return
    text = _read_all(stdin or sys.stdin)
    loaded = _checked(lambda: parse_snapshot_text(text, source=STDIN_NAME))
    try:
        directory = tempfile.TemporaryDirectory(prefix="magicstick-stdin-")
    except OSError as error:
        raise filesystem_error(tempfile.gettempdir(), error) from error
    with directory:
        path = Path(directory.name) / "snapshot.yaml"
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as error:
            raise filesystem_error(path, error) from error
        yield path, loaded


def _read_all(stream: TextIO) -> str:
    """All of `stream` as UTF-8 text, decoded strictly (a text stream's own decoding may not be)."""
    raw = getattr(stream, "buffer", None)
    try:
        return raw.read().decode("utf-8") if raw is not None else stream.read()
    except UnicodeDecodeError as error:
        raise RenderInputError(f"{STDIN_NAME}: not UTF-8 text (byte {error.start})") from error
    except OSError as error:
        raise filesystem_error(STDIN_NAME, error) from error


def _checked(load: Callable[[], SnapshotFile]) -> SnapshotFile:
    try:
        return load()
    except SnapshotFileError as error:
        raise RenderInputError(str(error)) from error


def _config(snapshot: Path, options: RenderOptions, *, recorded_namespace: str | None) -> dict[str, str]:
    """The `magicstick:` config of the run, after checking every value a flag gives."""
    if options.catalog_dir is not None:
        _check_catalog_directory(options.catalog_dir)
    try:
        load_catalogs(options.catalog_dir)
        parse_now(options.now)
    except (CatalogError, RunSettingsError) as error:
        raise RenderInputError(str(error)) from error
    _check_name(options.sources.get("systemNamespace", "--namespace"), options.namespace, _DNS_LABEL)
    _check_name(options.sources.get("domain", "--domain"), options.domain, _DNS_SUBDOMAIN)
    _check_name(options.sources.get("localDomain", "--local-domain"), options.local_domain, _DNS_SUBDOMAIN)
    unknown = sorted(set(options.access) - set(_ACCESS_FLAGS))
    if unknown:
        raise RenderInputError(f"{unknown[0]}: not an access setting")
    try:
        access_settings(options.access, name=lambda key: options.sources.get(key, _ACCESS_FLAGS[key]))
    except RunSettingsError as error:
        raise RenderInputError(str(error)) from error
    values = {
        "snapshotFile": str(snapshot),
        "catalogDir": str(options.catalog_dir) if options.catalog_dir is not None else None,
        "now": options.now,
        "systemNamespace": options.namespace if options.namespace is not None else recorded_namespace,
        "domain": options.domain,
        "localDomain": options.local_domain,
        **{key: _config_text(value) for key, value in options.access.items()},
    }
    return {key: value for key, value in values.items() if value is not None}


def _check_catalog_directory(path: Path) -> None:
    """--catalogs names a directory that exists (what is inside is the catalogs' to judge)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as error:
        raise RenderInputError(f"--catalogs {path}: no such directory") from error
    except OSError as error:
        raise filesystem_error(f"--catalogs {path}", error) from error
    if not stat.S_ISDIR(mode):
        what = "is a file" if stat.S_ISREG(mode) else "is not a directory"
        raise RenderInputError(f"--catalogs {path}: {what}; give the directory that holds the catalog files")


def _config_text(value: Any) -> str | None:
    """A value as Pulumi passes config to the program: a string; a list as a JSON array."""
    return json.dumps(list(value)) if isinstance(value, (list, tuple)) else value


def _check_name(flag: str, value: str | None, pattern: re.Pattern[str]) -> None:
    if value is not None and (len(value) > 253 or not pattern.fullmatch(value)):
        raise RenderInputError(f"{flag}: '{value}' is not a valid DNS name (lower case letters, digits, '-' and '.')")


def _result(run: OfflineRun, loaded: SnapshotFile, *, warnings: tuple[str, ...]) -> RenderResult:
    """What the run declared, as files. Components and the Kubernetes provider declare nothing a
    cluster holds: they are in no file and in no count."""
    resources = _kubernetes_objects(run)
    statuses = [document for r in run.of_type(STATUS_TYPE) for document in _status_documents(r)]
    dynamic = [r for r in _dynamic_resources(run) if r.type != STATUS_TYPE]
    files = [_file(RESOURCES, _object_stem(obj), obj) for obj in resources]
    files += [_file(STATUS, _object_stem(status), status) for status in statuses]
    files += [
        _file(
            DYNAMIC,
            f"{safe_part(r.type)}.{safe_part(r.name)}",
            {"type": r.type, "name": r.name, "inputs": _mask(thaw(r.inputs))},
        )
        for r in dynamic
    ]
    return RenderResult(
        files=_in_order(files),
        resources=len(resources),
        statuses=len(statuses),
        dynamic=len(dynamic),
        status_summary=summarize(statuses),
        ignored=loaded.ignored,
        warnings=warnings,
    )


def _in_order(files: list[RenderedFile]) -> tuple[RenderedFile, ...]:
    paths = [file.path for file in files]
    duplicates = sorted({path for path in paths if paths.count(path) > 1})
    if duplicates:
        raise RuntimeError(f"two declared objects map to one file: {duplicates[0]}")
    return tuple(sorted(files, key=lambda file: file_order(file.path)))


def _file(folder: str, stem: str, document: Mapping[str, Any]) -> RenderedFile:
    text = yamlio.safe_dump(dict(document), sort_keys=True, default_flow_style=False)
    return RenderedFile(path=f"{folder}/{fit_file_name(stem)}", text=text)


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
    return {key: _mask(value) for key, value in obj.items()}


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


def _status_documents(registration: Registration) -> list[dict[str, Any]]:
    """Each object of a status batch as its write would leave it: identity and status, nothing else."""
    inputs = thaw(registration.inputs)
    return [
        {
            "apiVersion": inputs["apiVersion"],
            "kind": inputs["kind"],
            "metadata": {"name": member["name"], "namespace": member["namespace"]},
            "status": _mask(decode_status(member["status"])),
        }
        for _, member in sorted(inputs[MEMBERS_INPUT].items())
    ]


def _object_stem(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata", {})
    parts = [obj.get("kind", "object").lower(), metadata.get("namespace"), metadata.get("name", "unnamed")]
    return ".".join(safe_part(p) for p in parts if p)


def summary(result: RenderResult, out: Path | str, *, resources_only: bool = False) -> str:
    """Pure. The one summary line: what was written where, objects per phase, the first unhealthy
    ones, the objects of the snapshot the program does not read.

    `resources_only`: the stream held the resources only; the rest is counted as not streamed.
    """
    if str(out) != STDIN:
        wrote = f"{result.declared} under {out}"
    elif resources_only:
        rest = listed([counted(result.statuses, "status", "statuses"), counted(result.dynamic, "dynamic resource")])
        wrote = f"{counted(result.resources, 'resource')} to standard output ({rest} not streamed, see --all)"
    else:
        wrote = f"{result.declared} to standard output"
    ignored = not_read(result.ignored)
    return f"wrote {wrote}; {describe(result.status_summary)}" + (f"; {ignored}" if ignored else "")
