"""Typed catalog entries and the catalogs that hold them.

Every model is immutable, rejects unknown fields and reads camelCase YAML names into
snake_case attributes. Rules that concern one entry live here; rules that compare entries
or files live in :mod:`catalogs.checks`.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from catalogs.keys import normalise_key

_KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_ENGINE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_CRD_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+(-[a-z0-9]+)*)+$")
_API_VERSION = re.compile(r"^([a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+(-[a-z0-9]+)*)*/)?v[0-9]+((alpha|beta)[0-9]+)?$")
_IMAGE = re.compile(
    r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(@sha256:[a-f0-9]{64})?|@sha256:[a-f0-9]{64})$"
)
"""registry/repository, then a tag, a digest, or both (`:tag@sha256:...`)."""
_PCI_ID = re.compile(r"^[0-9a-f]{4}$")
_MODEL_URL = re.compile(r"^(hf|ollama)://\S+$")


def _kebab(value: str) -> str:
    if len(value) > 63 or not _KEBAB.match(value):
        raise ValueError(f"'{value}' must be lower-case words joined by '-', at most 63 characters")
    return value


def _engine_name(value: str) -> str:
    if not _ENGINE_NAME.match(value):
        raise ValueError(f"'{value}' must be a letter followed by letters or digits")
    return value


def _crd_name(value: str) -> str:
    if not _CRD_NAME.match(value):
        raise ValueError(f"'{value}' is not a CRD name of the form <plural>.<group>")
    return value


def _flux_path(value: str) -> str:
    if not value.startswith("./") or value.endswith("/") or ".." in value.split("/"):
        raise ValueError(f"'{value}' must be a path inside the Git source, starting with './'")
    return value


def _image(value: str) -> str:
    if not _IMAGE.match(value):
        raise ValueError(f"'{value}' must be a registry/repository image with a fixed tag, digest or both")
    return value


def _unique(values: tuple[str, ...]) -> tuple[str, ...]:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"'{value}' is listed twice")
        seen.add(value)
    return values


def _template(value: str, *, allowed: frozenset[str]) -> str:
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
    except ValueError as error:
        raise ValueError(f"'{value}' is not a valid template: {error}") from error
    unknown = sorted(names - allowed)
    if unknown:
        raise ValueError(f"'{value}' uses unknown placeholder(s) {unknown}; allowed: {sorted(allowed)}")
    return value


SERVICE_SUFFIX_LIMIT = 10
"""Characters a backendService template may add to a release name (53 + 10 = 63, a DNS label)."""
_SERVICE_AFFIX = re.compile(r"^[a-z0-9-]*$")


def _service_template(value: str) -> str:
    """A backendService template: the release name once, plus a short DNS-label affix. Pure.

    The application's chart names what it renders after the Helm release (`.Release.Name`), and
    the release name is unique per instance, so the Service name is too.
    """
    _template(value, allowed=frozenset({"release"}))
    if value.count("{release}") != 1:
        raise ValueError(
            f"'{value}' must contain '{{release}}' exactly once: the chart names the Service after its release"
        )
    affix = value.replace("{release}", "")
    if not _SERVICE_AFFIX.match(affix) or value.startswith("-") or value.endswith("-"):
        raise ValueError(
            f"'{value}' may add only lower-case letters, digits and '-' to '{{release}}', neither first nor last"
        )
    if len(affix) > SERVICE_SUFFIX_LIMIT:
        raise ValueError(
            f"'{value}' adds {len(affix)} characters to '{{release}}'; at most {SERVICE_SUFFIX_LIMIT} characters keep the Service name within 63"
        )
    return value


KebabName = Annotated[str, AfterValidator(_kebab)]
EngineName = Annotated[str, AfterValidator(_engine_name)]
CrdName = Annotated[str, AfterValidator(_crd_name)]
FluxPath = Annotated[str, AfterValidator(_flux_path)]
Image = Annotated[str, AfterValidator(_image)]
PositiveMi = Annotated[int, Field(gt=0)]


class CatalogModel(BaseModel):
    """Base of every catalog type: camelCase in YAML, immutable, unknown fields rejected."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(alias=to_camel),
        populate_by_name=True,
        frozen=True,
        extra="forbid",
    )


class NamedEntry(CatalogModel):
    """An entry found by its name."""

    name: str


EntryT = TypeVar("EntryT", bound=NamedEntry)


class _NamedCatalog(CatalogModel, Generic[EntryT]):
    """A catalog of entries found by their ``name``; entries are kept sorted by it."""

    entries: tuple[EntryT, ...]

    @field_validator("entries")
    @classmethod
    def _sorted(cls, entries: tuple[EntryT, ...]) -> tuple[EntryT, ...]:
        return tuple(sorted(entries, key=lambda entry: entry.name))

    @cached_property
    def _by_name(self) -> dict[str, EntryT]:
        return {entry.name: entry for entry in self.entries}

    @property
    def names(self) -> tuple[str, ...]:
        """Every entry name, sorted."""
        return tuple(entry.name for entry in self.entries)

    def get(self, name: str) -> EntryT | None:
        """The entry called exactly ``name``, or None."""
        return self._by_name.get(name)

    def require(self, name: str) -> EntryT:
        """The entry called exactly ``name``, for a name already known to be catalogued (the
        loader's cross-references, a dependency of a catalogued entry); KeyError otherwise."""
        return self._by_name[name]


FLUX_VARIABLE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
"""Module parameter variables: upper case, so they never meet the lower-case shared settings."""
_PARAMETER_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")
COMPONENT_PATH = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(/[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
"""A module parameter's Kustomize component: a directory below the module's path, as Flux's
spec.components takes it (relative to spec.path), never above it."""
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?([mkMGTPE]|[KMGTPE]i)?$")

ParameterType = Literal["string", "boolean", "integer", "quantity", "object"]
ParameterValue = StrictStr | StrictBool | StrictInt
_PARAMETER_RULES: dict[str, str] = {
    "string": "must be a string",
    "boolean": "must be true or false",
    "integer": "must be a whole number",
    "quantity": "must be a Kubernetes quantity such as 5Gi, as a string",
    "object": "must be an object, or its JSON text",
}


def _flux_variable(value: str) -> str:
    if not FLUX_VARIABLE.match(value):
        raise ValueError(f"'{value}' must match {FLUX_VARIABLE.pattern}")
    return value


def _parameter_name(value: str) -> str:
    if not _PARAMETER_NAME.match(value):
        raise ValueError(f"'{value}' must be camelCase: a lower-case letter, then letters or digits")
    return value


def _component_path(value: str) -> str:
    if not COMPONENT_PATH.match(value):
        raise ValueError(f"'{value}' must be a directory below the module's path: {COMPONENT_PATH.pattern}")
    return value


class ModuleParameter(CatalogModel):
    """One parameter a ModuleActivation of the module may set.

    With a ``variable``, the generated Kustomization substitutes the value (or the default) for
    ``${variable}`` in the module's base. With a ``component`` (a boolean, false by default), the
    generated Kustomization lists that Kustomize component of the module's path in
    ``spec.components`` while the value is true: an optional part of the module, off unless
    asked for. With neither, the program itself reads the parameter.
    """

    name: Annotated[str, AfterValidator(_parameter_name)]
    type: ParameterType
    description: str = ""
    default: ParameterValue | None = None
    variable: Annotated[str, AfterValidator(_flux_variable)] | None = None
    component: Annotated[str, AfterValidator(_component_path)] | None = None

    @model_validator(mode="after")
    def _default_fits(self) -> ModuleParameter:
        if self.default is not None and self.violation(self.default) is not None:
            raise ValueError(f"default {self.default!r} does not fit type {self.type}")
        if self.variable is not None and self.default is None:
            raise ValueError("a parameter with a variable needs a default, the value its base falls back to")
        if self.variable is not None and self.type == "object":
            raise ValueError("an object parameter cannot be substituted; leave its variable out")
        if self.component is not None and (self.type != "boolean" or self.default is not False):
            raise ValueError("a parameter with a component must be a boolean whose default is false")
        if self.component is not None and self.variable is not None:
            raise ValueError("a parameter with a component has no variable")
        return self

    @property
    def rule(self) -> str:
        """What a value of this parameter must be, in words."""
        return _PARAMETER_RULES[self.type]

    def violation(self, value: object) -> str | None:
        """The rule ``value`` breaks, or None when it fits the type. Pure."""
        fits = {
            "string": isinstance(value, str),
            "boolean": isinstance(value, bool),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "quantity": isinstance(value, str) and bool(_QUANTITY.match(value)),
            "object": isinstance(value, (Mapping, str)),
        }[self.type]
        return None if fits else self.rule

    @staticmethod
    def substitution(value: str | bool | int) -> str:
        """A fitting value as the text Flux substitutes: booleans as ``true``/``false``."""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)


class ModuleEntry(NamedEntry):
    """A platform module: one generated Flux Kustomization of a path in the Git source."""

    name: KebabName
    display_name: str = Field(min_length=1)
    description: str = ""
    keys: tuple[str, ...] = ()
    path: FluxPath
    kustomization: KebabName
    depends_on: tuple[KebabName, ...] = ()
    required_crds: tuple[CrdName, ...] = ()
    hardware_provider: bool = False
    target_namespace: KebabName | None = None
    pci_vendor: str | None = Field(default=None, pattern=r"^[0-9a-f]{4}$")
    """PCI vendor ID (lower-case hex) whose display or 3D controllers this hardware provider serves."""
    operator_version: str | None = None
    """Version of the vendor operator the module's Flux path installs, reported in status."""
    parameters: tuple[ModuleParameter, ...] = ()
    """What ModuleActivation.spec.parameters may hold; anything else is rejected."""

    @model_validator(mode="after")
    def _hardware_providers_name_their_vendor(self) -> ModuleEntry:
        if self.hardware_provider and self.pci_vendor is None:
            raise ValueError("pciVendor is required for a hardwareProvider module")
        if self.pci_vendor is not None and not self.hardware_provider:
            raise ValueError("pciVendor is only for hardwareProvider modules")
        return self

    @field_validator("keys")
    @classmethod
    def _keys_normalise(cls, keys: tuple[str, ...]) -> tuple[str, ...]:
        for key in keys:
            if not normalise_key(key):
                raise ValueError(f"'{key}' normalises to an empty key")
        return keys

    @field_validator("depends_on")
    @classmethod
    def _no_self_dependency(cls, depends_on: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        if info.data.get("name") in depends_on:
            raise ValueError("a module cannot depend on itself")
        return _unique(depends_on)

    @field_validator("required_crds")
    @classmethod
    def _unique_crds(cls, required_crds: tuple[str, ...]) -> tuple[str, ...]:
        return _unique(required_crds)

    @field_validator("parameters")
    @classmethod
    def _unique_parameters(cls, parameters: tuple[ModuleParameter, ...]) -> tuple[ModuleParameter, ...]:
        _unique(tuple(p.name for p in parameters))
        _unique(tuple(p.variable for p in parameters if p.variable))
        _unique(tuple(p.component for p in parameters if p.component))
        return parameters

    def parameter(self, name: str) -> ModuleParameter | None:
        """The declared parameter called ``name``, or None."""
        return next((p for p in self.parameters if p.name == name), None)


class ModuleCatalog(_NamedCatalog[ModuleEntry]):
    """The platform modules, and the user keys that name them."""

    entries: tuple[ModuleEntry, ...] = Field(alias="modules")

    @cached_property
    def _by_key(self) -> dict[str, str]:
        index: dict[str, str] = {}
        for entry in self.entries:
            for key in (*entry.keys, entry.name):
                index[normalise_key(key)] = entry.name
        return index

    def canonical(self, key: str) -> str | None:
        """The canonical module name a user key stands for, or None when unknown. Pure.

        Case is ignored, ``_`` equals ``-`` and camelCase is split, so ``modelCatalog``,
        ``model_catalog`` and ``Model-Catalog`` all give ``model-catalog``; catalogued extra
        keys (``nvidia`` for ``gpu``) are resolved too.
        """
        return self._by_key.get(normalise_key(key))


class ApplicationEntry(NamedEntry):
    """An AI application: one generated HelmRelease per instance, plus its Gateway routes."""

    name: KebabName
    display_name: str = Field(min_length=1)
    required_modules: tuple[KebabName, ...]
    required_crds: tuple[CrdName, ...] = ()
    chart: FluxPath
    output_kind: str = Field(pattern=r"^[A-Z][A-Za-z0-9]*$")
    output_api_version: str = Field(pattern=_API_VERSION.pattern)
    backend_service: str = Field(min_length=1)
    backend_port: int = Field(ge=1, le=65535)
    callback_path: str

    @field_validator("required_modules", "required_crds")
    @classmethod
    def _unique_lists(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return _unique(values)

    @field_validator("backend_service")
    @classmethod
    def _service_template(cls, value: str) -> str:
        return _service_template(value)

    @field_validator("callback_path")
    @classmethod
    def _callback_template(cls, value: str) -> str:
        _template(value, allowed=frozenset({"instance"}))
        if not value.startswith("/") or "{instance}" not in value:
            raise ValueError(f"'{value}' must be an absolute path that contains '{{instance}}'")
        return value

    def backend_service_for(self, release: str) -> str:
        """The backend Service the chart renders for the Helm release ``release``. Pure.

        A release name of at most 53 characters (Helm's limit) gives a Service name of at most
        63: the template adds at most ``SERVICE_SUFFIX_LIMIT`` characters to it.
        """
        return self.backend_service.format(release=release)

    def callback_path_for(self, instance: str) -> str:
        """The exact OIDC callback path of the instance called ``instance``. Pure."""
        return self.callback_path.format(instance=instance)


class ApplicationCatalog(_NamedCatalog[ApplicationEntry]):
    """The AI applications users can instantiate, and the modules every instance needs."""

    entries: tuple[ApplicationEntry, ...] = Field(alias="applications")
    common_modules: tuple[KebabName, ...] = ("litellm", "model-catalog")

    @field_validator("common_modules")
    @classmethod
    def _unique_common(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return _unique(values)

    def modules_for(self, name: str) -> tuple[str, ...] | None:
        """Every module an instance of application ``name`` needs, sorted; None when unknown."""
        entry = self.get(name)
        if entry is None:
            return None
        return tuple(sorted({*entry.required_modules, *self.common_modules}))


class CpuDefaults(CatalogModel):
    """Per-replica CPU request and limit, in millicores; a limit of 0 sets no quota."""

    request_millicores: int = Field(ge=1)
    limit_millicores: int = Field(ge=0)

    @field_validator("limit_millicores")
    @classmethod
    def _limit_covers_request(cls, limit: int, info: ValidationInfo) -> int:
        request = info.data.get("request_millicores")
        if limit and request is not None and limit < request:
            raise ValueError(f"a positive limit ({limit}) must be at least the request ({request})")
        return limit


class EngineEntry(NamedEntry):
    """An inference engine, the targets it runs on and its runtime defaults."""

    name: EngineName
    display_name: str = Field(min_length=1)
    uses_kubeai: bool
    url_schemes: tuple[Literal["hf", "ollama", "pvc"], ...] = Field(min_length=1)
    cached_url_schemes: tuple[Literal["hf"], ...] = ()
    """URL schemes whose weights KubeAI loads once into the model cache (a Model's cacheProfile)."""
    compute_targets: tuple[KebabName, ...] = Field(min_length=1)
    default_memory_mi: PositiveMi
    runtime_memory_mi: PositiveMi = 1024
    """Host RAM of the engine's own process (interpreter, libraries, buffers), in MiB."""
    cpu_defaults: CpuDefaults
    kv_cache_types: dict[KebabName, tuple[str, ...]] = {}
    default_kv_cache_type: str | None = Field(default=None, validate_default=True)

    @field_validator("compute_targets", "url_schemes", "cached_url_schemes")
    @classmethod
    def _unique_lists(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return _unique(values)

    @field_validator("cached_url_schemes")
    @classmethod
    def _cached_schemes_loaded(cls, schemes: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        loaded = info.data.get("url_schemes", ())
        unknown = [s for s in schemes if s not in loaded]
        if unknown:
            raise ValueError(f"cachedUrlSchemes {unknown} are not among the engine's urlSchemes {list(loaded)}")
        return schemes

    @field_validator("kv_cache_types")
    @classmethod
    def _kv_targets_supported(
        cls, kv_cache_types: dict[str, tuple[str, ...]], info: ValidationInfo
    ) -> dict[str, tuple[str, ...]]:
        targets = info.data.get("compute_targets", ())
        for target, types in kv_cache_types.items():
            if target not in targets:
                raise ValueError(f"'{target}' is not one of this engine's computeTargets {list(targets)}")
            if not types:
                raise ValueError(f"'{target}' lists no cache type")
            _unique(types)
        return kv_cache_types

    @field_validator("default_kv_cache_type")
    @classmethod
    def _default_allowed_everywhere(cls, default: str | None, info: ValidationInfo) -> str | None:
        kv_cache_types = info.data.get("kv_cache_types")
        targets = info.data.get("compute_targets")
        if kv_cache_types is None or targets is None:
            return default
        if default is None:
            if kv_cache_types:
                raise ValueError("an engine with kvCacheTypes needs a default")
            return default
        for target in targets:
            if default not in kv_cache_types.get(target, ()):
                raise ValueError(f"'{default}' is not allowed on compute target '{target}'")
        return default

    def supports(self, compute_target: str) -> bool:
        """Whether the engine runs on ``compute_target``."""
        return compute_target in self.compute_targets

    def allowed_kv_cache_types(self, compute_target: str) -> tuple[str, ...]:
        """The kvCacheType values accepted on ``compute_target``; empty when none apply."""
        return self.kv_cache_types.get(compute_target, ())


class EngineCatalog(_NamedCatalog[EngineEntry]):
    """The inference engines."""

    entries: tuple[EngineEntry, ...] = Field(alias="engines")


EngineVersion = Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")]
"""A release number MAJOR.MINOR.PATCH."""


def version_key(version: str) -> tuple[int, ...]:
    """`0.10.2` -> (0, 10, 2), so versions compare as numbers. Pure."""
    return tuple(int(part) for part in version.split("."))


class VisionAttentionMapping(CatalogModel):
    """What one visionAttention value sets on a vLLM container: arguments and environment.

    ``minimum_engine_version``: the first vLLM release that accepts ``args``
    (docs/engine-arguments.md); an older engine on the target refuses the value.
    """

    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    minimum_engine_version: EngineVersion | None = None


class ComputeTargetEntry(NamedEntry):
    """Where a model runs: CPU or one GPU vendor, with its Kubernetes resources.

    ``resource_profiles`` maps to a KubeAI resource profile name from one of three kinds of
    key, the most specific winning: ``<engine>:<resource>``, ``<resource>``, ``<engine>``.
    """

    name: KebabName
    display_name: str = Field(min_length=1)
    module: KebabName | None = None
    resource_names: tuple[str, ...] = ()
    resource_profiles: dict[str, KebabName] = {}
    vision_attention: dict[str, VisionAttentionMapping] | None = None
    default_vision_attention: str | None = Field(default=None, validate_default=True)
    engine_versions: dict[str, EngineVersion] = {}
    """The release of each engine's image on this target (KubeAI's release images; a validated
    image replaces one of the same release), by engine name."""

    @field_validator("resource_names")
    @classmethod
    def _resources_need_module(cls, resource_names: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        has_module = info.data.get("module") is not None
        if has_module and not resource_names:
            raise ValueError("a target provided by a module lists the resources it publishes")
        if resource_names and not has_module:
            raise ValueError("a target without a module publishes no resources")
        return _unique(resource_names)

    @field_validator("resource_profiles")
    @classmethod
    def _profile_resources_published(cls, profiles: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        resources = info.data.get("resource_names", ())
        for key in profiles:
            engine, sep, resource = key.partition(":")
            if sep and (not _ENGINE_NAME.match(engine) or resource not in resources):
                raise ValueError(f"'{key}' must be <engine>:<resource> with a resource of {list(resources)}")
        return profiles

    @field_validator("default_vision_attention")
    @classmethod
    def _default_is_catalogued(cls, default: str | None, info: ValidationInfo) -> str | None:
        values = info.data.get("vision_attention")
        if default is not None and default not in (values or {}):
            raise ValueError(f"'{default}' is not one of the visionAttention values {sorted(values or {})}")
        if default is None and values:
            raise ValueError("a target with visionAttention values needs a default")
        return default

    def engine_lacks(self, mapping: VisionAttentionMapping, *, engine: str) -> str | None:
        """The engine release on this target when it is older than ``mapping`` needs, else None. Pure."""
        version = self.engine_versions.get(engine)
        needed = mapping.minimum_engine_version
        if version is None or needed is None or version_key(version) >= version_key(needed):
            return None
        return version

    @property
    def accelerated(self) -> bool:
        """Whether the target is a GPU provided by a hardware module."""
        return self.module is not None

    def resource_profile(self, *, engine: str, resource: str | None = None) -> str | None:
        """The KubeAI resource profile for ``engine`` on the published ``resource``. Pure."""
        keys = (f"{engine}:{resource}", resource, engine) if resource is not None else (engine,)
        for key in keys:
            if key in self.resource_profiles:
                return self.resource_profiles[key]
        return None


class ComputeTargetCatalog(_NamedCatalog[ComputeTargetEntry]):
    """The compute targets a local model can select."""

    entries: tuple[ComputeTargetEntry, ...] = Field(alias="computeTargets")

    def provided_by(self, module: str) -> tuple[ComputeTargetEntry, ...]:
        """The targets whose resources the hardware module ``module`` publishes."""
        return tuple(entry for entry in self.entries if entry.module == module)


class ArtifactEntry(CatalogModel):
    """One downloadable form of a model: its source URL, precision and memory defaults."""

    id: KebabName
    url: str = Field(pattern=_MODEL_URL.pattern)
    precision: str = Field(min_length=1)
    quantization: str | None = None
    memory_required_mi: PositiveMi | None = None
    vram_mi: PositiveMi | None = None
    weights_mi: PositiveMi | None = None
    """Memory the loaded weights take, in MiB; the memory estimate is unknown without it."""
    kv_cache_mi_per_1k_tokens: PositiveMi | None = Field(default=None, alias="kvCacheMiPer1kTokens")
    """KV cache of one sequence per 1,000 tokens at 16-bit cache precision, in MiB."""

    @property
    def scheme(self) -> str:
        """The URL scheme: ``hf`` or ``ollama``."""
        return self.url.split("://", 1)[0]


class PresetVariant(CatalogModel):
    """The artifacts of a preset for one engine on one compute target."""

    engine: EngineName
    compute_target: KebabName
    artifacts: tuple[ArtifactEntry, ...] = Field(min_length=1)
    default_artifact: KebabName

    @field_validator("artifacts")
    @classmethod
    def _unique_ids(cls, artifacts: tuple[ArtifactEntry, ...]) -> tuple[ArtifactEntry, ...]:
        _unique(tuple(artifact.id for artifact in artifacts))
        return artifacts

    @field_validator("default_artifact")
    @classmethod
    def _default_is_listed(cls, default: str, info: ValidationInfo) -> str:
        artifacts = info.data.get("artifacts")
        if artifacts is not None and default not in {artifact.id for artifact in artifacts}:
            raise ValueError(f"'{default}' is not one of the artifacts {[a.id for a in artifacts]}")
        return default

    def artifact(self, artifact_id: str | None = None) -> ArtifactEntry | None:
        """The artifact called ``artifact_id``, the default one when None; None when unknown."""
        wanted = self.default_artifact if artifact_id is None else artifact_id
        return next((artifact for artifact in self.artifacts if artifact.id == wanted), None)


class PresetEntry(NamedEntry):
    """A portable model preset and its variants per engine and compute target."""

    name: KebabName
    display_name: str = Field(min_length=1)
    model_type: Literal["chat", "completion", "embedding", "rerank", "transcription"]
    variants: tuple[PresetVariant, ...] = Field(min_length=1)
    """In order of preference: among several variants that could run, the first one wins."""
    default_compute_target: KebabName | None = Field(default=None, validate_default=True)
    """Where an activation that omits computeTarget runs when this target is available."""

    @field_validator("variants")
    @classmethod
    def _one_variant_per_pair(cls, variants: tuple[PresetVariant, ...]) -> tuple[PresetVariant, ...]:
        _unique(tuple(f"{variant.engine}/{variant.compute_target}" for variant in variants))
        return variants

    @field_validator("default_compute_target")
    @classmethod
    def _default_target_has_a_variant(cls, default: str | None, info: ValidationInfo) -> str | None:
        variants = info.data.get("variants")
        if default is not None and variants is not None and default not in {v.compute_target for v in variants}:
            raise ValueError(
                f"'{default}' is not the computeTarget of a variant {sorted({v.compute_target for v in variants})}"
            )
        return default

    @property
    def compute_targets(self) -> tuple[str, ...]:
        """The targets of the variants, in the variants' order, each once."""
        return tuple(dict.fromkeys(v.compute_target for v in self.variants))

    def variant(self, engine: str, compute_target: str) -> PresetVariant | None:
        """The variant for ``engine`` on ``compute_target``, or None."""
        return next(
            (v for v in self.variants if v.engine == engine and v.compute_target == compute_target),
            None,
        )


class PresetCatalog(_NamedCatalog[PresetEntry]):
    """The model presets."""

    entries: tuple[PresetEntry, ...] = Field(alias="presets")


class PciDevice(CatalogModel):
    """A PCI vendor and device ID, four lower-case hex digits each."""

    vendor_id: str = Field(pattern=_PCI_ID.pattern)
    device_id: str = Field(pattern=_PCI_ID.pattern)


class ProfileEngine(CatalogModel):
    """How one engine is validated on a compatibility profile: a fixed image in a bounded Job."""

    validation_image: Image
    timeout_seconds: int = Field(default=900, ge=60, le=3600)
    run_as_user: int | None = Field(default=None, ge=1)
    """Non-root user the image runs as; None only for an image that cannot run without root."""
    supplemental_groups: tuple[int, ...] = ()
    """Host groups that own the GPU device nodes (video, render) for a non-root user."""


class GpuCompatibilityProfile(CatalogModel):
    """A Magic Stick compatibility profile for GPUs beyond upstream vendor support."""

    id: KebabName
    display_name: str = Field(min_length=1)
    profile_version: str = Field(min_length=1)
    module: KebabName
    experimental: bool
    required_gpu_count: int = Field(ge=1)
    expected_architecture: str = Field(pattern=r"^gfx[0-9a-f]+$")
    pci_devices: tuple[PciDevice, ...] = Field(min_length=1)
    memory_architecture: Literal["unified", "discrete"]
    engines: dict[EngineName, ProfileEngine] = Field(min_length=1)

    @property
    def name(self) -> str:
        """The profile ID; profiles are named by it."""
        return self.id


class GpuCompatibilityCatalog(CatalogModel):
    """The versioned magicstick-gpu-compatibility-catalog."""

    name: Literal["magicstick-gpu-compatibility-catalog"] = "magicstick-gpu-compatibility-catalog"
    version: str = Field(min_length=1)
    profiles: tuple[GpuCompatibilityProfile, ...] = ()

    @field_validator("profiles")
    @classmethod
    def _sorted(cls, profiles: tuple[GpuCompatibilityProfile, ...]) -> tuple[GpuCompatibilityProfile, ...]:
        return tuple(sorted(profiles, key=lambda profile: profile.id))

    @property
    def entries(self) -> tuple[GpuCompatibilityProfile, ...]:
        """The profiles, sorted by ID."""
        return self.profiles

    def get(self, profile_id: str) -> GpuCompatibilityProfile | None:
        """The profile with ID ``profile_id``, or None."""
        return next((profile for profile in self.profiles if profile.id == profile_id), None)


class FreeTokenRuntime(CatalogModel):
    """How a FreeToken activation becomes a container: image, command line and bounded choices.

    Every flag the program passes comes from here; an activation only chooses among the keys.
    """

    image: Image
    port: int = Field(ge=1, le=65535)
    command: tuple[str, ...] = Field(min_length=1)
    args: tuple[str, ...] = ()
    model_arg: str = Field(min_length=1)
    port_arg: str = Field(min_length=1)
    context_window_arg: str = Field(min_length=1)
    max_num_seqs_arg: str = Field(min_length=1)
    readiness_path: str = Field(pattern=r"^/\S*$")
    memory_strategies: dict[KebabName, tuple[str, ...]] = Field(min_length=1)
    default_memory_strategy: KebabName = "auto"
    advanced_flags: dict[str, str] = {}
    """Keys an activation may set under freetoken.advanced, and the flag each becomes."""

    @field_validator("default_memory_strategy")
    @classmethod
    def _default_strategy_listed(cls, default: str, info: ValidationInfo) -> str:
        strategies = info.data.get("memory_strategies") or {}
        if default not in strategies:
            raise ValueError(f"'{default}' is not one of the memoryStrategies {sorted(strategies)}")
        return default


class RealtimeProfile(NamedEntry):
    """A vLLM-Omni realtime profile: one backend, its default image and GPU plans."""

    name: KebabName
    display_name: str = Field(min_length=1)
    backend: Literal["cuda", "rocm", "xpu", "cpu"]
    compute_target: KebabName
    image: Image | None = None
    """The catalog-default image; None when an activation must give runtimeImage (catalogs.images
    counts a missing image as unset)."""
    runtime_class_name: KebabName | None = None
    gpu_counts: tuple[int, ...] = Field(min_length=1)
    """The exclusive-allocation plans offered: GPUs per runtime (0 only on CPU)."""
    system_memory_mi: PositiveMi

    @model_validator(mode="after")
    def _backend_rules(self) -> RealtimeProfile:
        if self.runtime_class_name is not None and self.backend != "cuda":
            raise ValueError("only a cuda profile takes runtimeClassName (the NVIDIA RuntimeClass)")
        if self.backend == "cpu" and self.gpu_counts != (0,):
            raise ValueError("a cpu profile requests no GPU: gpuCounts must be [0]")
        if self.backend != "cpu" and any(count < 1 for count in self.gpu_counts):
            raise ValueError("a GPU profile's gpuCounts are whole devices, at least 1")
        if (
            self.backend == "cpu"
            and self.compute_target != "cpu"
            or self.backend != "cpu"
            and self.compute_target == "cpu"
        ):
            raise ValueError("computeTarget cpu goes with backend cpu, and only with it")
        return self


class RealtimeRuntime(CatalogModel):
    """The vLLM-Omni version the bootstrap is written for, its port and its profiles."""

    version: str = Field(min_length=1)
    port: int = Field(ge=1, le=65535)
    profiles: tuple[RealtimeProfile, ...] = Field(min_length=1)

    def get(self, name: str) -> RealtimeProfile | None:
        return next((profile for profile in self.profiles if profile.name == name), None)


class RuntimeCatalog(CatalogModel):
    """The direct runtimes (runtimes.yaml): FreeToken and the realtime vLLM-Omni runtime."""

    freetoken: FreeTokenRuntime
    realtime: RealtimeRuntime


class Catalogs(CatalogModel):
    """Every catalog of one load, checked against each other."""

    modules: ModuleCatalog
    applications: ApplicationCatalog
    engines: EngineCatalog
    compute_targets: ComputeTargetCatalog
    presets: PresetCatalog
    gpu_compatibility: GpuCompatibilityCatalog
    runtimes: RuntimeCatalog
