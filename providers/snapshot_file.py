"""Read a snapshot file: Kubernetes objects as `kubectl get -o yaml` prints them.

The file holds one or more YAML documents; each is an object or a `List` of objects. A `List`
written by `magicstick snapshot` records, in annotations of its own metadata (kubectl ignores a
List's metadata), what the objects alone do not hold:
- SYSTEM_NAMESPACE_ANNOTATION: the system namespace it was taken with;
- UNREADABLE_ANNOTATION: the target namespaces the server refused, a JSON array
  (planning/snapshot.py UnreadableNamespace.to_wire);
- HEALTH_ANNOTATION: what the Ready realtime Pods answered on `/health`, a JSON array of
  `{"namespace", "pod", "healthy", "error"}` sorted by namespace and Pod (`health_to_wire`).

An object of appliance.magicstick.dev must be of a kind and version the program serves: any other
would be lost in silence (a misspelled kind), so it is an error naming its line. Objects of other
groups' kinds the program does not read are counted (`SnapshotFile.ignored`), never an error: a
`kubectl get -o yaml` dump holds many.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from api import yamlio
from api.meta import GROUP, VERSION
from planning.snapshot import (
    APPLIANCE_API_VERSION,
    FLUX_KUSTOMIZE_API_VERSION,
    GENERIC_KINDS,
    KUBEAI_API_VERSION,
    NFD_API_VERSION,
    RUNTIME_KINDS,
    UNREADABLE_ANNOTATION,
    HealthObservation,
    Snapshot,
    SnapshotError,
    UnreadableNamespace,
    json_array_annotation,
    unreadable_from_annotation,
)

SYSTEM_NAMESPACE_ANNOTATION = "appliance.magicstick.dev/system-namespace"
HEALTH_ANNOTATION: Final = "appliance.magicstick.dev/health-observations"
SERVED_APIS_ANNOTATION: Final = "appliance.magicstick.dev/served-apis"
"""The optional built-in APIs the cluster served (Snapshot.served_apis), a JSON array of names."""
"""On a snapshot file's List: a JSON array of health observations (`health_to_wire`)."""
HEALTH_FIELDS: Final = ("namespace", "pod", "healthy", "error")
"""The wire form of a HealthObservation, every field always written."""
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


_READ_KINDS: Final = frozenset(
    {
        *((APPLIANCE_API_VERSION, kind) for kind in RUNTIME_KINDS),
        (FLUX_KUSTOMIZE_API_VERSION, "Kustomization"),
        ("v1", "Node"),
        (NFD_API_VERSION, "NodeFeature"),
        (KUBEAI_API_VERSION, "Model"),
        *GENERIC_KINDS,
        ("apps/v1", "Deployment"),
        ("v1", "Pod"),
        ("v1", "ConfigMap"),
    }
)
"""What Snapshot.from_objects keeps, besides CustomResourceDefinitions (tests/cli/test_snapshot_kinds.py
holds the two to one another)."""


def reads_kind(api_version: str, kind: str) -> bool:
    """Pure. Whether the program reads objects of this apiVersion and kind; the others are ignored."""
    if kind == "CustomResourceDefinition" and api_version.startswith("apiextensions.k8s.io/"):
        return True
    return (api_version, kind) in _READ_KINDS


class SnapshotFileError(Exception):
    """The snapshot file cannot be used; the message names the file and the object."""


@dataclass(frozen=True)
class SnapshotFile:
    """A parsed snapshot file: the snapshot, how many objects it holds, the namespace it records."""

    snapshot: Snapshot
    objects: int
    system_namespace: str | None
    ignored: tuple[IgnoredKind, ...] = ()
    """Objects of kinds the program does not read, most frequent first."""


@dataclass(frozen=True)
class IgnoredKind:
    """How many objects of one apiVersion and kind the snapshot holds that the program does not read."""

    api_version: str
    kind: str
    count: int


def read_snapshot_file(path: Path) -> Snapshot:
    return load_snapshot_file(path).snapshot


def load_snapshot_file(path: Path) -> SnapshotFile:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        cause = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise SnapshotFileError(f"{path}: cannot read snapshot file: {cause}") from error
    return parse_snapshot_text(text, source=str(path))


def parse_snapshot_text(text: str, *, source: str) -> SnapshotFile:
    """Parse snapshot text; `source` names it in errors (a path, or "standard input")."""
    try:
        documents = yamlio.safe_load_all(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = " ".join(str(getattr(error, "problem", None) or error).split())
        raise SnapshotFileError(f"{source}: not valid YAML{where}: {problem}") from error
    try:
        snapshot = Snapshot.from_objects(
            documents,
            unreadable=_recorded_unreadable(documents),
            health=_recorded_health(documents),
            served_apis=_recorded_served_apis(documents),
        )
    except SnapshotError as error:
        raise SnapshotFileError(f"{source}: {error}") from error
    return SnapshotFile(
        snapshot=snapshot,
        objects=_count(documents),
        system_namespace=_recorded_namespace(documents, source=source),
        ignored=_ignored_kinds(documents, text=text, source=source),
    )


def _objects(documents: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
    """Every object of the documents, Lists flattened, as Snapshot.from_objects reads them."""
    for document in documents:
        if _is_list(document):
            yield from _objects(document.get("items") or [])
        elif isinstance(document, Mapping):
            yield document


def _ignored_kinds(documents: Iterable[Any], *, text: str, source: str) -> tuple[IgnoredKind, ...]:
    """The kinds the program does not read, counted; SnapshotFileError naming the line for an
    object of appliance.magicstick.dev that is of no kind or version the program serves."""
    counts: Counter[tuple[str, str]] = Counter()
    for obj in _objects(documents):
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        if reads_kind(api_version, kind):
            continue
        if api_version.rpartition("/")[0] == GROUP:
            raise SnapshotFileError(_not_our_kind(api_version, kind, text=text, source=source))
        counts[(api_version, kind)] += 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0][1], item[0][0]))
    return tuple(IgnoredKind(api_version=a, kind=k, count=n) for (a, k), n in ordered)


def _not_our_kind(api_version: str, kind: str, *, text: str, source: str) -> str:
    if api_version != APPLIANCE_API_VERSION:
        line = _line_of(text, api_version=api_version, kind=kind, field="apiVersion")
        return f"{source}: line {line}: apiVersion {api_version} is not served (the version is {VERSION})"
    close = difflib.get_close_matches(kind, RUNTIME_KINDS, n=1)
    hint = f"did you mean {close[0]}?" if close else f"its kinds: {', '.join(RUNTIME_KINDS)}"
    line = _line_of(text, api_version=api_version, kind=kind, field="kind")
    return f"{source}: line {line}: kind {kind} is not a kind of {GROUP} ({hint})"


def _line_of(text: str, *, api_version: str, kind: str, field: str) -> int:
    """The line of `field` in the first object of `api_version` and `kind` in `text` (1-based)."""
    for document in yaml.compose_all(text, Loader=yamlio.SafeLoader):
        found = _field_line(document, api_version=api_version, kind=kind, field=field)
        if found is not None:
            return found
    raise LookupError(f"no {api_version} {kind} in the text")


def _field_line(node: yaml.Node | None, *, api_version: str, kind: str, field: str) -> int | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    fields: dict[str, yaml.Node] = {key.value: value for key, value in node.value if isinstance(key, yaml.ScalarNode)}
    items = fields.get("items")
    if isinstance(items, yaml.SequenceNode) and str(getattr(fields.get("kind"), "value", "")).endswith("List"):
        for item in items.value:
            found = _field_line(item, api_version=api_version, kind=kind, field=field)
            if found is not None:
                return found
        return None
    if (
        getattr(fields.get("apiVersion"), "value", None) == api_version
        and getattr(fields.get("kind"), "value", None) == kind
    ):
        return fields[field].start_mark.line + 1
    return None


def _is_list(document: Any) -> bool:
    """As Snapshot.from_objects flattens: kind List, or a kind ending in List that has items."""
    if not isinstance(document, Mapping):
        return False
    kind = str(document.get("kind", ""))
    return kind == "List" or (kind.endswith("List") and "items" in document)


def _count(documents: Iterable[Any]) -> int:
    total = 0
    for document in documents:
        if _is_list(document):
            total += _count(document.get("items") or [])
        elif document is not None:
            total += 1
    return total


def _list_annotations(documents: Iterable[Any], key: str) -> Iterator[Any]:
    """The value of annotation `key` on every List document that carries it."""
    for document in documents:
        if not _is_list(document):
            continue
        metadata = document.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
        value = annotations.get(key) if isinstance(annotations, Mapping) else None
        if value is not None:
            yield value


def _recorded_namespace(documents: Iterable[Any], *, source: str) -> str | None:
    recorded = set()
    for value in _list_annotations(documents, SYSTEM_NAMESPACE_ANNOTATION):
        if not isinstance(value, str) or not _NAMESPACE.fullmatch(value):
            raise SnapshotFileError(
                f"{source}: List annotation {SYSTEM_NAMESPACE_ANNOTATION}: {value!r} is not a namespace name"
            )
        recorded.add(value)
    if len(recorded) > 1:
        raise SnapshotFileError(f"{source}: Lists record different system namespaces: {', '.join(sorted(recorded))}")
    return next(iter(recorded), None)


def _recorded_unreadable(documents: Iterable[Any]) -> tuple[UnreadableNamespace, ...]:
    """The unreadable namespaces the Lists record (UNREADABLE_ANNOTATION); SnapshotError when malformed."""
    found: list[UnreadableNamespace] = []
    for value in _list_annotations(documents, UNREADABLE_ANNOTATION):
        found += unreadable_from_annotation(value, f"List annotation {UNREADABLE_ANNOTATION}")
    return tuple(found)


def _recorded_served_apis(documents: Iterable[Any]) -> tuple[str, ...]:
    """The served optional APIs the Lists record (SERVED_APIS_ANNOTATION); SnapshotError when malformed."""
    found: list[str] = []
    for value in _list_annotations(documents, SERVED_APIS_ANNOTATION):
        names = json_array_annotation(value, SERVED_APIS_ANNOTATION, f"List annotation {SERVED_APIS_ANNOTATION}")
        if not all(isinstance(name, str) for name in names):
            raise SnapshotError(f"List annotation {SERVED_APIS_ANNOTATION}", "must be a JSON array of strings")
        found += names
    return tuple(found)


def _recorded_health(documents: Iterable[Any]) -> tuple[HealthObservation, ...]:
    """The health observations the Lists record (HEALTH_ANNOTATION); SnapshotError when malformed."""
    found: list[HealthObservation] = []
    for value in _list_annotations(documents, HEALTH_ANNOTATION):
        found += health_from_annotation(value, f"List annotation {HEALTH_ANNOTATION}")
    seen: set[tuple[str, str]] = set()
    for observation in found:
        key = (observation.namespace, observation.pod)
        if key in seen:
            raise SnapshotError(f"List annotation {HEALTH_ANNOTATION}", f"Pod {key[0]}/{key[1]} is recorded twice")
        seen.add(key)
    return tuple(found)


def health_to_wire(observation: HealthObservation) -> dict[str, Any]:
    """Pure."""
    values = (observation.namespace, observation.pod, observation.healthy, observation.error)
    return dict(zip(HEALTH_FIELDS, values, strict=True))


def health_annotation(observations: Iterable[HealthObservation]) -> str:
    """Pure. The HEALTH_ANNOTATION value: sorted by namespace and Pod, keys sorted, so one state gives one text."""
    ordered = sorted(observations, key=lambda h: (h.namespace, h.pod))
    return json.dumps([health_to_wire(h) for h in ordered], sort_keys=True)


def health_from_wire(raw: Any, identity: str, index: int) -> HealthObservation:
    """Pure. Raises SnapshotError naming `identity`, the record's index and the field that is wrong."""
    where = f"health observation {index}"
    if not isinstance(raw, Mapping):
        raise SnapshotError(identity, f"{where} must be a mapping")
    for key in ("namespace", "pod"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise SnapshotError(identity, f"{where}: {key} must be a non-empty string")
    if not isinstance(raw.get("healthy"), bool):
        raise SnapshotError(identity, f"{where}: healthy must be true or false")
    error = raw.get("error", "")
    if not isinstance(error, str):
        raise SnapshotError(identity, f"{where}: error must be a string")
    return HealthObservation(namespace=raw["namespace"], pod=raw["pod"], healthy=raw["healthy"], error=error)


def health_from_annotation(value: Any, identity: str) -> tuple[HealthObservation, ...]:
    """Pure. The records a HEALTH_ANNOTATION value holds; SnapshotError naming `identity` otherwise."""
    listed = json_array_annotation(value, HEALTH_ANNOTATION, identity)
    return tuple(health_from_wire(raw, identity, index) for index, raw in enumerate(listed))
