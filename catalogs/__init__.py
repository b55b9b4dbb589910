"""The shipped catalogs and their typed loaders.

``load_catalogs()`` reads the YAML files shipped beside this module (or a user's
replacements), validates each entry and checks the catalogs against each other. Pure: it
reads files and nothing else. ``parse_catalog_text()`` reads one catalog from text (a
ConfigMap's), as a file would be read.
"""

from catalogs.checks import CatalogFiles, check_catalogs
from catalogs.errors import CatalogError
from catalogs.keys import normalise_key
from catalogs.loader import CATALOG_FILES, load_catalogs, parse_catalog_text
from catalogs.types import (
    ApplicationCatalog,
    ApplicationEntry,
    ArtifactEntry,
    Catalogs,
    ComputeTargetCatalog,
    ComputeTargetEntry,
    CpuDefaults,
    EngineCatalog,
    EngineEntry,
    FreeTokenRuntime,
    GpuCompatibilityCatalog,
    GpuCompatibilityProfile,
    ModuleCatalog,
    ModuleEntry,
    PciDevice,
    PresetCatalog,
    PresetEntry,
    PresetVariant,
    ProfileEngine,
    RealtimeProfile,
    RealtimeRuntime,
    RuntimeCatalog,
    VisionAttentionMapping,
)

__all__ = [
    "CATALOG_FILES",
    "FreeTokenRuntime",
    "RealtimeProfile",
    "RealtimeRuntime",
    "RuntimeCatalog",
    "ApplicationCatalog",
    "ApplicationEntry",
    "ArtifactEntry",
    "CatalogError",
    "CatalogFiles",
    "Catalogs",
    "ComputeTargetCatalog",
    "ComputeTargetEntry",
    "CpuDefaults",
    "EngineCatalog",
    "EngineEntry",
    "GpuCompatibilityCatalog",
    "GpuCompatibilityProfile",
    "ModuleCatalog",
    "ModuleEntry",
    "PciDevice",
    "PresetCatalog",
    "PresetEntry",
    "PresetVariant",
    "ProfileEngine",
    "VisionAttentionMapping",
    "check_catalogs",
    "load_catalogs",
    "normalise_key",
    "parse_catalog_text",
]
