"""What the "add a local model" form may offer: presets, engines, compute targets, artifacts. Pure.

A combination (preset, engine, compute target, artifact) is offered only when all of these hold:

- the preset catalog declares a variant of the preset for that engine on that target, and the
  artifact is one of the variant's (`defaultArtifact` marked as the default);
- the engine catalog has the engine and says it runs on the target, and the compute-target
  catalog has the target;
- the API accepts the engine on the target (`api.models.LocalModelSpec`: OLlama never runs on
  intel-gpu), asked of the API type itself rather than restated, so a replaced catalog cannot
  offer what the API server would refuse;
- the target is available now (`available_compute_targets`).

**Available targets** are the program's own rule, `planning/models/choice.py` `Offered` (built
by `offered_targets`): cpu always; a GPU target when a node publishes its extended resource as
allocatable, or when its vendor's GPU is detected on a node that passes the platform preflight
(the operator is on its way, and a model there waits for it rather than failing). A service
may not import planning, so the rule is read back from what the program writes for it,
`Appliance/local.status.hardwareOperators.<module>` (`planning/hardware/operators.py`
`operator_status`, typed by `api.status.HardwareOperatorStatus`): `allocatableResources` above
0 with one of the target's `resourceNames` (published), or `compatibleNodeCount` /
`compatibleNodes` (detected on a node that passes the preflight). A GPU listed in `devices`
only on a node that fails the preflight offers nothing: the program would not offer it either.
One difference is deliberate and harmless: the status counts allocatable resources on
compatible nodes only, the program on every node; a node that publishes a GPU resource and
fails the preflight is not a node a model should be sent to.

**kvCacheType choices** for an (engine, target) are the engine catalog's `kvCacheTypes` for the
target (`catalogs.EngineEntry.allowed_kv_cache_types`, what the program's resolution accepts,
`planning/models/resolve.py`) that the API type also accepts (`api.models.LocalModelSpec`: vLLM
takes auto, and fp8 only on nvidia-gpu or amd-gpu; Ollama takes f16, q8_0 or q4_0; FreeToken
none). The shipped catalog and the API agree; asking both keeps a replaced catalog honest.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from pydantic import ValidationError

from api.models import LocalModelSpec
from catalogs import ArtifactEntry, Catalogs, EngineEntry, PresetEntry, PresetVariant

CPU = "cpu"
"""The target every node offers: `planning/models/choice.py` `Offered` always contains it."""

HARDWARE_OPERATORS = "hardwareOperators"
ALLOCATABLE_RESOURCES = "allocatableResources"
RESOURCE_NAMES = "resourceNames"
COMPATIBLE_NODES = "compatibleNodes"
COMPATIBLE_NODE_COUNT = "compatibleNodeCount"
"""Wire names of `api.status.ApplianceStatus` / `HardwareOperatorStatus` this module reads."""


@dataclass(frozen=True)
class ArtifactOffer:
    """One artifact of a variant, as the form lists it."""

    id: str
    url: str
    precision: str
    quantization: str | None
    is_default: bool
    """The variant's defaultArtifact: what the program runs when the activation omits artifact."""
    memory_required_mi: int | None
    """The catalog's default RAM reservation on CPU."""
    vram_mi: int | None
    """The catalog's default GPU memory budget on accelerators."""


@dataclass(frozen=True)
class VariantOffer:
    """One (engine, compute target) of a preset, with its artifacts and cache precisions."""

    engine: str
    engine_display_name: str
    compute_target: str
    compute_target_display_name: str
    artifacts: tuple[ArtifactOffer, ...]
    """In the catalog's order; exactly one is the default."""
    kv_cache_types: tuple[str, ...]
    """The kvCacheType values allowed here; empty for an engine without cache choices."""
    default_kv_cache_type: str | None
    """What the program uses when kvCacheType is omitted (None for FreeToken)."""

    @property
    def default_artifact(self) -> ArtifactOffer:
        """The artifact marked as the default."""
        return next(artifact for artifact in self.artifacts if artifact.is_default)

    def artifact(self, artifact_id: str) -> ArtifactOffer | None:
        """The artifact called `artifact_id`, or None when it is not offered here."""
        return next((artifact for artifact in self.artifacts if artifact.id == artifact_id), None)


@dataclass(frozen=True)
class PresetOffer:
    """A preset and the variants of it that can be added now, in the catalog's preference order."""

    name: str
    display_name: str
    model_type: str
    default_compute_target: str | None
    """The preset's defaultComputeTarget when it is offered now, else None."""
    variants: tuple[VariantOffer, ...]
    """Never empty: a preset with nothing offered is not offered at all."""

    @property
    def engines(self) -> tuple[str, ...]:
        """The engines offered, in the variants' order, each once."""
        return tuple(dict.fromkeys(variant.engine for variant in self.variants))

    @property
    def compute_targets(self) -> tuple[str, ...]:
        """The compute targets offered, in the variants' order, each once."""
        return tuple(dict.fromkeys(variant.compute_target for variant in self.variants))

    def engines_on(self, compute_target: str) -> tuple[str, ...]:
        """The engines offered on `compute_target`, in the variants' order."""
        return tuple(variant.engine for variant in self.variants if variant.compute_target == compute_target)

    def variant(self, engine: str, compute_target: str) -> VariantOffer | None:
        """The offered variant for `engine` on `compute_target`, or None."""
        return next(
            (v for v in self.variants if v.engine == engine and v.compute_target == compute_target),
            None,
        )


@dataclass(frozen=True)
class LocalModelOffers:
    """Everything the "add a local model" form may offer, for the hardware available now."""

    available_targets: frozenset[str]
    presets: tuple[PresetOffer, ...]
    """Sorted by preset name, as the catalog keeps them."""

    def preset(self, name: str) -> PresetOffer | None:
        """The offered preset called `name`, or None."""
        return next((preset for preset in self.presets if preset.name == name), None)


def available_compute_targets(appliance_status: Mapping[str, object] | None, catalogs: Catalogs) -> frozenset[str]:
    """The compute targets a model can be sent to now, from `Appliance/local.status` as the API
    returns it (a missing or malformed status offers cpu alone). The module docstring gives the
    rule and where it comes from. Pure."""
    available = {CPU}
    operators = appliance_status.get(HARDWARE_OPERATORS) if appliance_status is not None else None
    if not isinstance(operators, Mapping):
        return frozenset(available)
    for module, entry in operators.items():
        if not isinstance(module, str) or not isinstance(entry, Mapping):
            continue
        detected = _count(entry.get(COMPATIBLE_NODE_COUNT)) > 0 or bool(_strings(entry.get(COMPATIBLE_NODES)))
        published = set(_strings(entry.get(RESOURCE_NAMES))) if _count(entry.get(ALLOCATABLE_RESOURCES)) > 0 else set()
        for target in catalogs.compute_targets.provided_by(module):
            if detected or published & set(target.resource_names):
                available.add(target.name)
    return frozenset(available)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        return ()
    return tuple(item for item in value if isinstance(item, str))


def local_model_offers(catalogs: Catalogs, available: Set[str]) -> LocalModelOffers:
    """The presets, engines, targets and artifacts the form may offer when `available` are the
    compute targets available now (`available_compute_targets`). Pure."""
    presets = []
    for preset in catalogs.presets.entries:
        variants = tuple(
            offer for variant in preset.variants if (offer := _variant_offer(variant, catalogs, available)) is not None
        )
        if variants:
            presets.append(_preset_offer(preset, variants))
    return LocalModelOffers(available_targets=frozenset(available), presets=tuple(presets))


def kv_cache_type_choices(catalogs: Catalogs, engine: str, compute_target: str) -> tuple[str, ...]:
    """The kvCacheType values allowed for `engine` on `compute_target`, in the catalog's order;
    empty when the engine or target is unknown or takes no cache choice (module docstring). Pure."""
    entry = catalogs.engines.get(engine)
    if entry is None:
        return ()
    return tuple(
        kv
        for kv in entry.allowed_kv_cache_types(compute_target)
        if _api_accepts(engine=engine, compute_target=compute_target, kv_cache_type=kv)
    )


def _preset_offer(preset: PresetEntry, variants: tuple[VariantOffer, ...]) -> PresetOffer:
    targets = {variant.compute_target for variant in variants}
    default = preset.default_compute_target if preset.default_compute_target in targets else None
    return PresetOffer(
        name=preset.name,
        display_name=preset.display_name,
        model_type=preset.model_type,
        default_compute_target=default,
        variants=variants,
    )


def _variant_offer(variant: PresetVariant, catalogs: Catalogs, available: Set[str]) -> VariantOffer | None:
    engine = catalogs.engines.get(variant.engine)
    target = catalogs.compute_targets.get(variant.compute_target)
    if engine is None or target is None or variant.compute_target not in available:
        return None
    if not engine.supports(variant.compute_target) or not _api_accepts(engine=engine.name, compute_target=target.name):
        return None
    kv_cache_types = kv_cache_type_choices(catalogs, engine.name, target.name)
    return VariantOffer(
        engine=engine.name,
        engine_display_name=engine.display_name,
        compute_target=target.name,
        compute_target_display_name=target.display_name,
        artifacts=tuple(_artifact_offer(artifact, variant) for artifact in variant.artifacts),
        kv_cache_types=kv_cache_types,
        default_kv_cache_type=_default_kv_cache_type(engine, kv_cache_types),
    )


def _default_kv_cache_type(engine: EngineEntry, allowed: tuple[str, ...]) -> str | None:
    default = engine.default_kv_cache_type
    return default if default in allowed else None


def _artifact_offer(artifact: ArtifactEntry, variant: PresetVariant) -> ArtifactOffer:
    return ArtifactOffer(
        id=artifact.id,
        url=artifact.url,
        precision=artifact.precision,
        quantization=artifact.quantization,
        is_default=artifact.id == variant.default_artifact,
        memory_required_mi=artifact.memory_required_mi,
        vram_mi=artifact.vram_mi,
    )


def _api_accepts(*, engine: str, compute_target: str, kv_cache_type: str | None = None) -> bool:
    """Whether the API type accepts `engine` on `compute_target` (with `kv_cache_type`): its own
    validators decide, so their rules are not restated here. Pure."""
    local: dict[str, object] = {"engine": engine, "computeTarget": compute_target}
    if kv_cache_type is not None:
        local["kvCacheType"] = kv_cache_type
    try:
        LocalModelSpec.model_validate(local)
    except ValidationError:
        return False
    return True
