"""The catalogs in force: the base catalogs, overridden by the catalog ConfigMaps. Pure.

A run reads ConfigMap/magicstick-module-catalog and ConfigMap/magicstick-app-catalog. In the
system namespace, the data key `modules.yaml` of the first and `applications.yaml` of the second
hold the same YAML as catalogs/modules.yaml and catalogs/applications.yaml. Precedence, per
catalog: the ConfigMap, else the file of `magicstick:catalogDir`, else the shipped file. The base
(`catalogDir` over shipped) is what catalogs.load_catalogs reads; this module only reads the
snapshot's ConfigMaps, so a run, `render` of a snapshot holding them and a test all choose alike.

Model presets are overridden entry by entry instead: ConfigMap/magicstick-model-presets, key
`presets.yaml`, holds a document of the same format as catalogs/presets.yaml whose presets replace
the base presets of their names and add the others; the base presets it does not name stay.

A ConfigMap is applied only whole and only valid: its YAML parses, its entries follow their
schema, and the catalogs it forms with the others pass every cross-file rule
(catalogs.check_catalogs). An invalid one is not applied: the base catalog it would have replaced
stays in force, and a CatalogProblem names the ConfigMap, the key, the entry and the field;
Appliance/local is then Degraded with reason CatalogInvalid (planning.status). When both are
present and cannot be applied together, each is tried alone, the module catalog first.

Invariant 6, as far as a pure plan can keep it: while the module catalog's ConfigMap is rejected,
the generated Kustomization of a module that no catalog in force knows (one that only the
ConfigMap defined) is kept exactly as observed rather than removed (`keep_unknown_modules`). A
module both define is planned from the base definition until the ConfigMap is fixed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from pydantic import BaseModel

from catalogs import CatalogError, CatalogFiles, Catalogs, check_catalogs, parse_catalog_text
from catalogs.errors import DOCUMENT
from planning.frozen import thaw
from planning.kustomizations import KUSTOMIZATION_API_VERSION
from planning.labels import MODULE, is_generated
from planning.modules import ModulePlan
from planning.objects import DesiredObject
from planning.settings import FLUX_NAMESPACE
from planning.snapshot import Snapshot


@dataclass(frozen=True)
class CatalogConfigMap:
    """Where one catalog may be overridden: a ConfigMap of the system namespace and its data key."""

    catalog: str
    """The attribute of catalogs.Catalogs it replaces (a key of catalogs.CATALOG_FILES)."""
    name: str
    key: str
    by_entry: bool = False
    """Its entries replace the base entries of their names and add the others, instead of the
    whole catalog being replaced."""


CATALOG_CONFIG_MAPS: Final = (
    CatalogConfigMap(catalog="modules", name="magicstick-module-catalog", key="modules.yaml"),
    CatalogConfigMap(catalog="applications", name="magicstick-app-catalog", key="applications.yaml"),
    CatalogConfigMap(catalog="presets", name="magicstick-model-presets", key="presets.yaml", by_entry=True),
)
"""The catalog ConfigMaps, in the order they are tried (modules first: applications name modules)."""


@dataclass(frozen=True)
class CatalogProblem:
    """A catalog ConfigMap that is not applied, and the first reason (catalogs.CatalogError's parts)."""

    namespace: str
    config_map: CatalogConfigMap
    file: str
    """The catalog at fault as errors name it: this ConfigMap's key, or (for a rule across
    catalogs) another catalog that no longer agrees with it."""
    entry: str
    field: str
    message: str

    @property
    def source(self) -> str:
        """`ConfigMap ai-system/magicstick-module-catalog key modules.yaml`."""
        return source_label(self.namespace, self.config_map)

    def describe(self) -> str:
        """One line naming the ConfigMap, the key, the entry and the field. Pure."""
        where = "" if self.file == self.source else f" (with it, {self.file} fails)"
        entry = "the document" if self.entry == DOCUMENT else f"entry '{self.entry}'"
        return (
            f"{self.source} is not applied{where}: {entry}, field {self.field}: {self.message}. "
            f"The {self.config_map.catalog} catalog in force is magicstick:catalogDir's, else the shipped one."
        )


@dataclass(frozen=True)
class CatalogsInForce:
    """The catalogs a run plans with, the ConfigMaps applied, and the ones rejected."""

    catalogs: Catalogs
    applied: tuple[str, ...] = ()
    """`<namespace>/<name>` of each catalog ConfigMap in force, in CATALOG_CONFIG_MAPS order."""
    problems: tuple[CatalogProblem, ...] = ()


def source_label(namespace: str, config_map: CatalogConfigMap) -> str:
    """How errors name a catalog ConfigMap's key, in place of a file. Pure."""
    return f"ConfigMap {namespace}/{config_map.name} key {config_map.key}"


def _problem(namespace: str, config_map: CatalogConfigMap, error: CatalogError) -> CatalogProblem:
    return CatalogProblem(
        namespace=namespace,
        config_map=config_map,
        file=error.file,
        entry=error.entry,
        field=error.field,
        message=error.message,
    )


def _parsed(namespace: str, config_map: CatalogConfigMap, data: Mapping[str, Any]) -> BaseModel:
    """The catalog the ConfigMap's key holds; CatalogError naming the ConfigMap otherwise. Pure."""
    label = source_label(namespace, config_map)
    text = data.get(config_map.key)
    if not isinstance(text, str):
        keys = ", ".join(sorted(str(key) for key in data)) or "none"
        raise CatalogError(
            file=label,
            entry=DOCUMENT,
            field="(key)",
            message=f"the ConfigMap has no key {config_map.key} (keys: {keys})",
        )
    return parse_catalog_text(config_map.catalog, text, file=label)


def _over_base(base: Catalogs, config_map: CatalogConfigMap, parsed: BaseModel) -> BaseModel:
    """The catalog a ConfigMap puts in force: `parsed` itself, or for a by-entry ConfigMap the base
    entries it does not name followed by all of its own (a name repeated inside it stays repeated,
    for the catalog checks to report). Pure."""
    if not config_map.by_entry:
        return parsed
    own = getattr(parsed, "entries")
    names = {entry.name for entry in own}
    kept = tuple(entry for entry in getattr(base, config_map.catalog).entries if entry.name not in names)
    return type(parsed)(entries=(*kept, *own))


def _combined(base: Catalogs, replacements: Mapping[str, BaseModel]) -> Catalogs:
    fields = {name: getattr(base, name) for name in Catalogs.model_fields}
    return Catalogs(**(fields | dict(replacements)))


def _checked(base: Catalogs, replacements: Mapping[str, BaseModel], labels: Mapping[str, str]) -> Catalogs:
    """`base` with `replacements`, checked across catalogs; CatalogError otherwise. Pure."""
    catalogs = _combined(base, replacements)
    check_catalogs(catalogs, CatalogFiles(**labels))
    return catalogs


def catalogs_in_force(snapshot: Snapshot, base: Catalogs, *, system_namespace: str) -> CatalogsInForce:
    """`base` with every valid catalog ConfigMap of `system_namespace` applied. Pure."""
    problems: list[CatalogProblem] = []
    candidates: dict[str, tuple[CatalogConfigMap, BaseModel]] = {}
    for config_map in CATALOG_CONFIG_MAPS:
        found = snapshot.config_map(system_namespace, config_map.name)
        if found is None:
            continue
        try:
            parsed = _parsed(system_namespace, config_map, found.data)
            candidates[config_map.catalog] = (config_map, _over_base(base, config_map, parsed))
        except CatalogError as error:
            problems.append(_problem(system_namespace, config_map, error))
    if not candidates:
        return CatalogsInForce(catalogs=base, problems=_ordered(problems))
    labels = {catalog: source_label(system_namespace, config_map) for catalog, (config_map, _) in candidates.items()}
    try:
        together = _checked(base, {catalog: parsed for catalog, (_, parsed) in candidates.items()}, labels)
    except CatalogError:
        return _one_at_a_time(base, candidates, labels, system_namespace, problems)
    return CatalogsInForce(
        catalogs=together, applied=_applied(system_namespace, candidates), problems=_ordered(problems)
    )


def _one_at_a_time(
    base: Catalogs,
    candidates: Mapping[str, tuple[CatalogConfigMap, BaseModel]],
    labels: Mapping[str, str],
    namespace: str,
    problems: list[CatalogProblem],
) -> CatalogsInForce:
    """Each candidate added alone, in CATALOG_CONFIG_MAPS order, over those already accepted. Pure."""
    accepted: dict[str, tuple[CatalogConfigMap, BaseModel]] = {}
    catalogs = base
    for catalog, (config_map, parsed) in candidates.items():
        trial = {name: model for name, (_, model) in accepted.items()} | {catalog: parsed}
        try:
            catalogs = _checked(base, trial, {name: labels[name] for name in trial})
        except CatalogError as error:
            problems.append(_problem(namespace, config_map, error))
            continue
        accepted[catalog] = (config_map, parsed)
    return CatalogsInForce(catalogs=catalogs, applied=_applied(namespace, accepted), problems=_ordered(problems))


def _applied(namespace: str, accepted: Mapping[str, tuple[CatalogConfigMap, BaseModel]]) -> tuple[str, ...]:
    return tuple(f"{namespace}/{c.name}" for c in CATALOG_CONFIG_MAPS if c.catalog in accepted)


def _ordered(problems: Iterable[CatalogProblem]) -> tuple[CatalogProblem, ...]:
    order = {c.name: index for index, c in enumerate(CATALOG_CONFIG_MAPS)}
    return tuple(sorted(problems, key=lambda p: order[p.config_map.name]))


def catalog_message(problems: Sequence[CatalogProblem]) -> str:
    """The Appliance's CatalogInvalid message: every rejected ConfigMap, one after the other. Pure."""
    return " ".join(problem.describe() for problem in problems)


def keep_unknown_modules(
    modules: ModulePlan, snapshot: Snapshot, catalogs: Catalogs, problems: Iterable[CatalogProblem]
) -> ModulePlan:
    """`modules` with, while the module catalog's ConfigMap is rejected (`problems`), every generated
    Kustomization of a module `catalogs` (those in force) do not know kept exactly as observed. Pure."""
    if not any(problem.config_map.catalog == "modules" for problem in problems):
        return modules
    declared = {(k.namespace, k.name) for k in modules.kustomizations}
    kept = []
    for observed in snapshot.kustomizations:
        meta = observed.meta
        module = meta.labels.get(MODULE)
        if meta.namespace != FLUX_NAMESPACE or not module or not is_generated(meta.labels):
            continue
        if catalogs.modules.get(module) is not None or (meta.namespace, meta.name) in declared:
            continue
        metadata: dict[str, Any] = {"name": meta.name, "namespace": meta.namespace, "labels": thaw(meta.labels)}
        if meta.annotations:
            metadata["annotations"] = thaw(meta.annotations)
        body = {
            "apiVersion": KUSTOMIZATION_API_VERSION,
            "kind": "Kustomization",
            "metadata": metadata,
            "spec": thaw(observed.spec),
        }
        kept.append(DesiredObject.of(body))
    if not kept:
        return modules
    return replace(
        modules, kustomizations=tuple(sorted((*modules.kustomizations, *kept), key=lambda d: d.logical_name))
    )
