"""Loading the catalogs: the shipped files, each optionally replaced by a user's file."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from catalogs.checks import CatalogFiles, check_catalogs
from catalogs.documents import Source, parse_document, read_document
from catalogs.errors import DOCUMENT, CatalogError
from catalogs.parsing import parse_catalog
from catalogs.types import (
    ApplicationCatalog,
    Catalogs,
    ComputeTargetCatalog,
    EngineCatalog,
    GpuCompatibilityCatalog,
    ModuleCatalog,
    PresetCatalog,
    RuntimeCatalog,
)

CATALOG_FILES: Mapping[str, tuple[str, type[BaseModel]]] = MappingProxyType(
    {
        "modules": ("modules.yaml", ModuleCatalog),
        "applications": ("applications.yaml", ApplicationCatalog),
        "engines": ("engines.yaml", EngineCatalog),
        "compute_targets": ("compute-targets.yaml", ComputeTargetCatalog),
        "presets": ("presets.yaml", PresetCatalog),
        "gpu_compatibility": ("gpu-compatibility.yaml", GpuCompatibilityCatalog),
        "runtimes": ("runtimes.yaml", RuntimeCatalog),
    }
)
"""Catalog attribute -> (file name, catalog type), in load order."""

_FILE_NAMES = frozenset(name for name, _ in CATALOG_FILES.values())


def parse_catalog_text(attribute: str, text: str, *, file: str) -> BaseModel:
    """The catalog ``attribute`` (a key of CATALOG_FILES) parsed from YAML ``text``. Pure.

    The same reading as a file's, for text that comes from elsewhere (a ConfigMap): a YAML
    error or a schema error raises :class:`CatalogError` whose ``file`` is ``file``. Rules
    across catalogs are not checked here: see ``check_catalogs``.
    """
    _, model = CATALOG_FILES[attribute]
    return parse_catalog(model, parse_document(text, file=file), file=file)


def shipped_directory() -> Traversable:
    """The directory of the catalogs shipped with the package."""
    return files(__package__)


def _user_files(directory: Path) -> dict[str, Path]:
    if not directory.is_dir():
        raise CatalogError(
            file=str(directory), entry=DOCUMENT, field="(directory)", message="catalog directory does not exist"
        )
    found: dict[str, Path] = {}
    for path in sorted(directory.iterdir()):
        if path.name.startswith(".") or path.suffix not in {".yaml", ".yml"}:
            continue
        if path.name not in _FILE_NAMES:
            raise CatalogError(
                file=str(path),
                entry=DOCUMENT,
                field="(file name)",
                message=f"not a catalog file; expected one of {', '.join(sorted(_FILE_NAMES))}",
            )
        found[path.name] = path
    return found


def catalog_sources(directory: Path | str | None = None) -> dict[str, Source]:
    """The file each catalog is read from: the user's when ``directory`` holds it, else shipped."""
    shipped = shipped_directory()
    user = _user_files(Path(directory)) if directory is not None else {}
    return {
        attribute: user.get(file_name) or shipped.joinpath(file_name)
        for attribute, (file_name, _) in CATALOG_FILES.items()
    }


def load_catalogs(directory: Path | str | None = None) -> Catalogs:
    """Every catalog, parsed, typed and checked against each other.

    Without ``directory`` the shipped files are read. With one, each catalog file present
    there replaces the shipped file of the same name and absent files fall back to the
    shipped ones; a missing directory, or a YAML file in it with an unknown name, is an
    error. Any problem raises :class:`CatalogError` naming file, entry and field.
    """
    sources = catalog_sources(directory)
    parsed: dict[str, Any] = {
        attribute: parse_catalog(model, read_document(sources[attribute]), file=str(sources[attribute]))
        for attribute, (_, model) in CATALOG_FILES.items()
    }
    catalogs = Catalogs(**parsed)
    check_catalogs(catalogs, CatalogFiles(**{attribute: str(source) for attribute, source in sources.items()}))
    return catalogs
