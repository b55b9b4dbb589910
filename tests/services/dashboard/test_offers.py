"""The add-a-local-model form offers only what the catalogs declare and the hardware allows."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from api.models import LocalModelSpec
from api.status import HardwareOperatorStatus
from catalogs import Catalogs, EngineCatalog, PresetCatalog
from planning.hardware.operators import observe_hardware
from planning.models.choice import offered_targets
from planning.models.resolve import resolve_local
from planning.snapshot import Snapshot
from services.dashboard import offers
from services.dashboard.offers import available_compute_targets, kv_cache_type_choices, local_model_offers
from tests.planning.builders import CATALOGS, plan_of, status_of, with_flux
from tests.planning.hardware.nodes import node, node_feature
from tests.planning.models.world import gpu_node, platform

NVIDIA_GPU = ("0300", "10de", "2684")
WORLDS: dict[str, Callable[[], list[dict]]] = {
    "cpu only": lambda: [*platform(), node("cpu-1")],
    "nvidia publishing": lambda: [*platform("gpu"), gpu_node("nvidia.com/gpu")],
    "amd publishing": lambda: [*platform("amd-gpu"), gpu_node("amd.com/gpu")],
    "intel publishing xe": lambda: [*platform("intel-gpu"), gpu_node("gpu.intel.com/xe")],
    "nvidia detected, not yet publishing": lambda: [*platform("gpu"), node("gpu-1", "nvidia")],
    "nvidia on a node that fails the preflight": lambda: [
        *platform(),
        node("gpu-1", "nvidia", os="windows"),
        node_feature("gpu-1", NVIDIA_GPU),
    ],
}


def _status(world: str) -> dict:
    return status_of(plan_of(*WORLDS[world]()), "Appliance", "local")


def _available(world: str) -> frozenset[str]:
    return available_compute_targets(_status(world), CATALOGS)


@pytest.mark.parametrize(
    ("world", "targets"),
    [
        ("cpu only", {"cpu"}),
        ("nvidia publishing", {"cpu", "nvidia-gpu"}),
        ("amd publishing", {"cpu", "amd-gpu"}),
        ("intel publishing xe", {"cpu", "intel-gpu"}),
        ("nvidia detected, not yet publishing", {"cpu", "nvidia-gpu"}),
        ("nvidia on a node that fails the preflight", {"cpu"}),
    ],
)
def test_the_available_targets_are_read_from_the_hardware_operators_of_the_appliance_status(
    world: str, targets: set[str]
) -> None:
    assert _available(world) == targets


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_the_available_targets_are_those_the_program_itself_offers_a_model(world: str) -> None:
    hardware = observe_hardware(Snapshot.from_objects(with_flux(WORLDS[world]())), CATALOGS)
    program = offered_targets(hardware, CATALOGS)
    assert _available(world) == {"cpu"} | program.published | program.detected


@pytest.mark.parametrize(
    "status",
    [
        None,
        {},
        {"hardwareOperators": None},
        {"hardwareOperators": {"gpu": "broken"}},
        {"hardwareOperators": {"gpu": {"allocatableResources": "1", "resourceNames": "nvidia.com/gpu"}}},
    ],
    ids=["no-status", "empty-status", "null-operators", "malformed-entry", "malformed-fields"],
)
def test_a_missing_or_malformed_status_leaves_cpu_alone_available(status: dict | None) -> None:
    assert available_compute_targets(status, CATALOGS) == {"cpu"}


def test_a_gpu_the_status_lists_on_a_node_that_fails_the_preflight_offers_nothing() -> None:
    status = _status("nvidia on a node that fails the preflight")
    assert status["hardwareOperators"]["gpu"]["deviceCount"] == 1
    assert available_compute_targets(status, CATALOGS) == {"cpu"}


def test_a_published_resource_makes_only_its_own_target_available() -> None:
    status = {"hardwareOperators": {"intel-gpu": {"allocatableResources": 1, "resourceNames": ["gpu.intel.com/i915"]}}}
    assert available_compute_targets(status, CATALOGS) == {"cpu", "intel-gpu"}


def test_allocatable_resources_of_zero_do_not_make_a_target_available() -> None:
    status = {"hardwareOperators": {"gpu": {"allocatableResources": 0, "resourceNames": ["nvidia.com/gpu"]}}}
    assert available_compute_targets(status, CATALOGS) == {"cpu"}


@pytest.mark.parametrize(
    "field",
    [offers.ALLOCATABLE_RESOURCES, offers.RESOURCE_NAMES, offers.COMPATIBLE_NODES, offers.COMPATIBLE_NODE_COUNT],
)
def test_the_status_fields_read_are_spelled_as_the_api_spells_them(field: str) -> None:
    assert field in {info.alias for info in HardwareOperatorStatus.model_fields.values()}


def test_offers_on_a_cpu_only_cluster_hide_every_gpu_target_and_the_presets_that_need_one() -> None:
    offered = local_model_offers(CATALOGS, _available("cpu only"))
    assert {v.compute_target for p in offered.presets for v in p.variants} == {"cpu"}
    assert offered.preset("qwen3635b") is None
    assert offered.preset("qwen352bvlembedding") is None
    assert offered.preset("qwen306b") is not None


def test_offers_with_an_amd_gpu_hide_the_nvidia_and_intel_variants_of_a_preset() -> None:
    preset = local_model_offers(CATALOGS, _available("amd publishing")).preset("qwen306b")
    assert preset is not None
    assert preset.compute_targets == ("amd-gpu", "cpu")
    assert preset.engines_on("amd-gpu") == ("VLLM", "OLlama")


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_every_offered_combination_is_a_variant_the_preset_catalog_declares(world: str) -> None:
    for preset in local_model_offers(CATALOGS, _available(world)).presets:
        entry = CATALOGS.presets.require(preset.name)
        for variant in preset.variants:
            declared = entry.variant(variant.engine, variant.compute_target)
            assert declared is not None
            assert tuple(a.id for a in variant.artifacts) == tuple(a.id for a in declared.artifacts)


def test_every_catalogued_variant_is_offered_when_every_target_is_available() -> None:
    offered = local_model_offers(CATALOGS, {"cpu", "nvidia-gpu", "amd-gpu", "intel-gpu"})
    declared = {(p.name, v.engine, v.compute_target) for p in CATALOGS.presets.entries for v in p.variants}
    assert {(p.name, v.engine, v.compute_target) for p in offered.presets for v in p.variants} == declared


def test_each_offered_variant_marks_the_catalogs_default_artifact_and_only_it() -> None:
    for preset in local_model_offers(CATALOGS, {"cpu", "nvidia-gpu", "amd-gpu", "intel-gpu"}).presets:
        for variant in preset.variants:
            declared = CATALOGS.presets.require(preset.name).variant(variant.engine, variant.compute_target)
            assert declared is not None
            assert [a.id for a in variant.artifacts if a.is_default] == [declared.default_artifact]
            assert variant.default_artifact.id == declared.default_artifact


@pytest.mark.parametrize(
    ("world", "preset", "default"),
    [
        ("nvidia publishing", "qwen3635b", "nvidia-gpu"),
        ("amd publishing", "qwen3635b", None),
        ("cpu only", "qwen2505bcpu", "cpu"),
    ],
)
def test_a_presets_default_target_is_preselected_only_when_it_is_offered(
    world: str, preset: str, default: str | None
) -> None:
    offered = local_model_offers(CATALOGS, _available(world)).preset(preset)
    assert offered is not None
    assert offered.default_compute_target == default


@pytest.mark.parametrize(
    ("engine", "target", "choices"),
    [
        ("VLLM", "cpu", ("auto",)),
        ("VLLM", "nvidia-gpu", ("auto", "fp8")),
        ("VLLM", "amd-gpu", ("auto", "fp8")),
        ("VLLM", "intel-gpu", ("auto",)),
        ("OLlama", "cpu", ("f16", "q8_0", "q4_0")),
        ("OLlama", "nvidia-gpu", ("f16", "q8_0", "q4_0")),
        ("OLlama", "amd-gpu", ("f16", "q8_0", "q4_0")),
        ("OLlama", "intel-gpu", ()),
        ("FreeToken", "nvidia-gpu", ()),
        ("Unknown", "cpu", ()),
    ],
)
def test_the_kv_cache_type_choices_of_an_engine_on_a_target_are_those_of_the_seeds(
    engine: str, target: str, choices: tuple[str, ...]
) -> None:
    assert kv_cache_type_choices(CATALOGS, engine, target) == choices


def test_an_offered_variant_carries_its_kv_cache_choices_and_the_engines_default() -> None:
    preset = local_model_offers(CATALOGS, {"cpu"}).preset("qwen2505bcpu")
    assert preset is not None
    ollama = preset.variant("OLlama", "cpu")
    assert ollama is not None
    assert (ollama.kv_cache_types, ollama.default_kv_cache_type) == (("f16", "q8_0", "q4_0"), "f16")


def _with_engine(catalogs: Catalogs, name: str, **update: object) -> Catalogs:
    """`catalogs` with one engine changed, in a new engine catalog (a copy would keep the old
    one's index by name)."""
    engines = tuple(e.model_copy(update=update) if e.name == name else e for e in catalogs.engines.entries)
    return catalogs.model_copy(update={"engines": EngineCatalog(entries=engines)})


def test_a_kv_cache_type_a_replaced_catalog_lists_but_the_api_refuses_is_not_offered() -> None:
    vllm = CATALOGS.engines.require("VLLM")
    catalogs = _with_engine(CATALOGS, "VLLM", kv_cache_types={**vllm.kv_cache_types, "cpu": ("auto", "fp8")})
    assert catalogs.engines.require("VLLM").allowed_kv_cache_types("cpu") == ("auto", "fp8")
    assert kv_cache_type_choices(catalogs, "VLLM", "cpu") == ("auto",)


def test_a_variant_a_replaced_catalog_declares_but_the_api_refuses_is_not_offered() -> None:
    ollama = CATALOGS.engines.require("OLlama")
    catalogs = _with_engine(CATALOGS, "OLlama", compute_targets=(*ollama.compute_targets, "intel-gpu"))
    preset = CATALOGS.presets.require("qwen2505bcpu")
    intel = preset.variants[0].model_copy(update={"engine": "OLlama", "compute_target": "intel-gpu"})
    presets = tuple(
        p.model_copy(update={"variants": (*p.variants, intel)}) if p.name == preset.name else p
        for p in catalogs.presets.entries
    )
    catalogs = catalogs.model_copy(update={"presets": PresetCatalog(entries=presets)})
    assert catalogs.engines.require("OLlama").supports("intel-gpu")
    assert catalogs.presets.require("qwen2505bcpu").variant("OLlama", "intel-gpu") is not None
    offered = local_model_offers(catalogs, {"cpu", "intel-gpu"}).preset("qwen2505bcpu")
    assert offered is not None
    assert offered.variant("OLlama", "intel-gpu") is None
    assert offered.variant("VLLM", "intel-gpu") is not None


def test_every_offered_choice_is_one_the_programs_resolution_accepts() -> None:
    for preset in local_model_offers(CATALOGS, {"cpu", "nvidia-gpu", "amd-gpu", "intel-gpu"}).presets:
        for variant in preset.variants:
            for artifact in variant.artifacts:
                for kv in variant.kv_cache_types or (None,):
                    local = {
                        "preset": preset.name,
                        "engine": variant.engine,
                        "computeTarget": variant.compute_target,
                        "artifact": artifact.id,
                    }
                    if kv is not None:
                        local["kvCacheType"] = kv
                    resolved = resolve_local(LocalModelSpec.model_validate(local), CATALOGS)
                    assert (resolved.artifact, resolved.kv_cache_type) == (
                        artifact.id,
                        kv or variant.default_kv_cache_type,
                    )
