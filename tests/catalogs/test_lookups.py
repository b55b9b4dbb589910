"""Finding entries and resolving what they describe."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from catalogs import (
    CatalogError,
    ComputeTargetEntry,
    CpuDefaults,
    ModuleCatalog,
    ModuleEntry,
    check_catalogs,
    load_catalogs,
)

CATALOGS = load_catalogs()


def target(**profiles: str) -> ComputeTargetEntry:
    return ComputeTargetEntry(
        name="example-gpu",
        display_name="Example GPU",
        module="gpu",
        resource_names=("example.com/gpu",),
        resource_profiles=profiles,
    )


def test_an_engine_and_resource_profile_wins_over_a_resource_profile():
    entry = target(**{"example.com/gpu": "shared", "VLLM:example.com/gpu": "vllm-only"})
    assert entry.resource_profile(engine="VLLM", resource="example.com/gpu") == "vllm-only"


def test_a_resource_profile_wins_over_an_engine_profile():
    entry = target(**{"example.com/gpu": "by-resource", "VLLM": "by-engine"})
    assert entry.resource_profile(engine="VLLM", resource="example.com/gpu") == "by-resource"


def test_an_engine_profile_applies_when_no_resource_is_given():
    assert target(VLLM="by-engine").resource_profile(engine="VLLM") == "by-engine"


def test_an_engine_without_a_profile_resolves_to_none():
    assert CATALOGS.compute_targets.get("cpu").resource_profile(engine="FreeToken") is None


def test_the_nvidia_target_resolves_the_profile_status_reports():
    nvidia = CATALOGS.compute_targets.get("nvidia-gpu")
    assert nvidia.resource_profile(engine="VLLM", resource="nvidia.com/gpu") == "magicstick-nvidia-gpu"


def test_only_gpu_targets_are_accelerated():
    assert {entry.name for entry in CATALOGS.compute_targets.entries if entry.accelerated} == {
        "nvidia-gpu",
        "amd-gpu",
        "intel-gpu",
    }


def test_a_hardware_module_provides_the_targets_that_name_it():
    assert [entry.name for entry in CATALOGS.compute_targets.provided_by("intel-gpu")] == ["intel-gpu"]


def test_a_variant_without_an_artifact_id_gives_its_default_artifact():
    variant = CATALOGS.presets.get("qwen2505bcpu").variant("OLlama", "cpu")
    assert variant.artifact().url == "ollama://qwen2.5:0.5b-instruct-q4_K_M"


def test_an_unknown_artifact_id_gives_none():
    assert CATALOGS.presets.get("qwen2505bcpu").variant("VLLM", "cpu").artifact("q8-0") is None


def test_an_artifact_knows_its_url_scheme():
    assert CATALOGS.presets.get("qwen3635b").variant("VLLM", "amd-gpu").artifact().scheme == "hf"


def test_an_application_resolves_its_backend_service_per_release_and_its_callback_path_per_instance():
    paperclip = CATALOGS.applications.get("paperclip")
    assert (paperclip.backend_service_for("paperclip-default"), paperclip.callback_path_for("default")) == (
        "paperclip-default",
        "/oauth2/paperclip/default/callback",
    )
    assert (
        CATALOGS.applications.get("kubeopencode").backend_service_for("kubeopencode-team") == "kubeopencode-team-server"
    )


def test_an_unknown_application_has_no_modules():
    assert CATALOGS.applications.modules_for("wordpress") is None


@pytest.mark.parametrize(
    "catalog",
    [
        CATALOGS.modules,
        CATALOGS.applications,
        CATALOGS.engines,
        CATALOGS.compute_targets,
        CATALOGS.presets,
        CATALOGS.gpu_compatibility,
    ],
)
def test_every_catalog_answers_none_for_an_unknown_name(catalog):
    assert catalog.get("no-such-entry") is None


def test_the_gpu_compatibility_catalog_finds_a_profile_by_id():
    assert CATALOGS.gpu_compatibility.get("strix-halo").id == "strix-halo"


def test_catalog_entries_cannot_be_changed_after_loading():
    with pytest.raises(ValidationError):
        CATALOGS.modules.get("gpu").hardware_provider = False


def test_catalogs_built_in_code_are_checked_like_loaded_ones():
    broken = CATALOGS.model_copy(
        update={
            "modules": ModuleCatalog(
                entries=(
                    *CATALOGS.modules.entries,
                    ModuleEntry(
                        name="extra",
                        display_name="Extra",
                        path="./magic-cluster/apps/ai/extra",
                        kustomization="app-extra",
                        depends_on=("ghost",),
                    ),
                )
            )
        }
    )
    with pytest.raises(CatalogError, match=r"^modules\.yaml: extra: dependsOn: 'ghost' is not a catalogued module"):
        check_catalogs(broken)


def test_the_shipped_catalogs_pass_every_check():
    check_catalogs(CATALOGS)


@given(request=st.integers(min_value=1, max_value=64_000), limit=st.integers(min_value=0, max_value=64_000))
def test_cpu_defaults_accept_exactly_no_quota_or_a_limit_covering_the_request(request, limit):
    valid = limit == 0 or limit >= request
    try:
        CpuDefaults(request_millicores=request, limit_millicores=limit)
    except ValidationError:
        assert not valid
    else:
        assert valid
