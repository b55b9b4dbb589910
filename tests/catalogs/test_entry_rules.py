"""Rules that one catalog entry must satisfy on its own."""

from __future__ import annotations

import pytest

from catalogs import load_catalogs
from tests.catalogs.edits import entry_named, variant_of


def test_a_default_artifact_must_be_one_of_the_variants_artifacts(override, load_error):
    directory = override(
        "presets.yaml", lambda d: variant_of(d, "qwen2505bcpu", "OLlama", "cpu").update(defaultArtifact="q2-k")
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("qwen2505bcpu", "variants[4].defaultArtifact")
    assert "'q2-k' is not one of the artifacts ['q4-k-m', 'q8-0', 'fp16']" in error.message


def test_artifact_ids_are_unique_within_a_variant(override, load_error):
    def repeat(document):
        variant = variant_of(document, "qwen3635b", "VLLM", "nvidia-gpu")
        variant["artifacts"].append(variant["artifacts"][0])

    error = load_error(override("presets.yaml", repeat))
    assert (error.entry, error.field, error.message) == ("qwen3635b", "variants[0].artifacts", "'fp8' is listed twice")


def test_a_preset_has_one_variant_per_engine_and_compute_target(override, load_error):
    def repeat(document):
        preset = entry_named(document, "presets", "qwen3635b")
        preset["variants"].append(preset["variants"][0])

    error = load_error(override("presets.yaml", repeat))
    assert (error.entry, error.field, error.message) == ("qwen3635b", "variants", "'VLLM/nvidia-gpu' is listed twice")


@pytest.mark.parametrize(
    "url", ["https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct", "hf://", "Qwen/Qwen2.5-0.5B-Instruct"]
)
def test_an_artifact_url_must_be_an_hf_or_ollama_reference(override, load_error, url):
    directory = override(
        "presets.yaml", lambda d: variant_of(d, "qwen2505bcpu", "VLLM", "cpu")["artifacts"][0].update(url=url)
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("qwen2505bcpu", "variants[0].artifacts[0].url")


def test_an_unknown_model_type_is_rejected(override, load_error):
    error = load_error(
        override("presets.yaml", lambda d: entry_named(d, "presets", "qwen3635b").update(modelType="poetry"))
    )
    assert (error.entry, error.field) == ("qwen3635b", "modelType")


def test_a_positive_cpu_limit_below_the_request_is_rejected(override, load_error):
    directory = override(
        "engines.yaml", lambda d: entry_named(d, "engines", "OLlama")["cpuDefaults"].update(limitMillicores=500)
    )
    error = load_error(directory)
    assert (error.entry, error.field, error.message) == (
        "OLlama",
        "cpuDefaults.limitMillicores",
        "a positive limit (500) must be at least the request (1000)",
    )


def test_a_cpu_request_of_zero_is_rejected(override, load_error):
    error = load_error(
        override("engines.yaml", lambda d: entry_named(d, "engines", "VLLM")["cpuDefaults"].update(requestMillicores=0))
    )
    assert (error.entry, error.field) == ("VLLM", "cpuDefaults.requestMillicores")


def test_kv_cache_types_may_be_listed_only_for_the_engines_own_targets(override, load_error):
    directory = override(
        "engines.yaml", lambda d: entry_named(d, "engines", "OLlama")["kvCacheTypes"].update({"intel-gpu": ["f16"]})
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("OLlama", "kvCacheTypes")
    assert "'intel-gpu' is not one of this engine's computeTargets" in error.message


def test_the_default_kv_cache_type_must_be_allowed_on_every_target(override, load_error):
    directory = override("engines.yaml", lambda d: entry_named(d, "engines", "VLLM").update(defaultKvCacheType="fp8"))
    error = load_error(directory)
    assert (error.entry, error.field, error.message) == (
        "VLLM",
        "defaultKvCacheType",
        "'fp8' is not allowed on compute target 'cpu'",
    )


def test_an_engine_with_kv_cache_types_needs_a_default(override, load_error):
    directory = override("engines.yaml", lambda d: entry_named(d, "engines", "OLlama").pop("defaultKvCacheType"))
    error = load_error(directory)
    assert (error.entry, error.field, error.message) == (
        "OLlama",
        "defaultKvCacheType",
        "an engine with kvCacheTypes needs a default",
    )


def test_an_unknown_url_scheme_for_an_engine_is_rejected(override, load_error):
    error = load_error(override("engines.yaml", lambda d: entry_named(d, "engines", "VLLM")["urlSchemes"].append("s3")))
    assert (error.entry, error.field) == ("VLLM", "urlSchemes[1]")


def test_a_gpu_target_must_list_the_resources_it_publishes(override, load_error):
    directory = override(
        "compute-targets.yaml", lambda d: entry_named(d, "computeTargets", "amd-gpu").update(resourceNames=[])
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("amd-gpu", "resourceNames")


def test_a_target_without_a_module_publishes_no_resources(override, load_error):
    directory = override(
        "compute-targets.yaml",
        lambda d: entry_named(d, "computeTargets", "cpu").update(resourceNames=["nvidia.com/gpu"]),
    )
    error = load_error(directory)
    assert (error.entry, error.field, error.message) == (
        "cpu",
        "resourceNames",
        "a target without a module publishes no resources",
    )


def test_an_engine_specific_resource_profile_must_name_a_published_resource(override, load_error):
    def profile_for_foreign_resource(document):
        entry_named(document, "computeTargets", "nvidia-gpu")["resourceProfiles"]["VLLM:amd.com/gpu"] = (
            "magicstick-amd-gpu"
        )

    error = load_error(override("compute-targets.yaml", profile_for_foreign_resource))
    assert (error.entry, error.field) == ("nvidia-gpu", "resourceProfiles")


def test_the_default_vision_attention_must_be_one_of_the_choices(override, load_error):
    directory = override(
        "compute-targets.yaml",
        lambda d: entry_named(d, "computeTargets", "amd-gpu").update(defaultVisionAttention="sdpa"),
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("amd-gpu", "defaultVisionAttention")


def test_vision_attention_choices_need_a_default(override, load_error):
    directory = override(
        "compute-targets.yaml", lambda d: entry_named(d, "computeTargets", "amd-gpu").pop("defaultVisionAttention")
    )
    error = load_error(directory)
    assert (error.entry, error.field, error.message) == (
        "amd-gpu",
        "defaultVisionAttention",
        "a target with visionAttention values needs a default",
    )


@pytest.mark.parametrize("name", ["Basis", "basis_", "-basis", "ba sis", "b" * 64])
def test_a_module_name_must_be_a_kebab_case_word_list(override, load_error, name):
    error = load_error(override("modules.yaml", lambda d: entry_named(d, "modules", "basis").update(name=name)))
    assert error.field == "name"


@pytest.mark.parametrize(
    "path", ["magic-cluster/platform/basis", "./magic-cluster/../secrets", "./magic-cluster/platform/"]
)
def test_a_module_path_must_stay_inside_the_git_source(override, load_error, path):
    error = load_error(override("modules.yaml", lambda d: entry_named(d, "modules", "basis").update(path=path)))
    assert (error.entry, error.field) == ("basis", "path")


@pytest.mark.parametrize("crd", ["clusterpolicies", "ClusterPolicies.nvidia.com", "clusterpolicies.nvidia.com/v1"])
def test_a_required_crd_must_be_written_as_plural_dot_group(override, load_error, crd):
    error = load_error(override("modules.yaml", lambda d: entry_named(d, "modules", "gpu").update(requiredCrds=[crd])))
    assert (error.entry, error.field) == ("gpu", "requiredCrds[0]")


def test_an_empty_key_is_rejected(override, load_error):
    error = load_error(override("modules.yaml", lambda d: entry_named(d, "modules", "gpu")["keys"].append("__")))
    assert (error.entry, error.field, error.message) == ("gpu", "keys", "'__' normalises to an empty key")


def test_a_callback_path_must_contain_the_instance_placeholder(override, load_error):
    directory = override(
        "applications.yaml",
        lambda d: entry_named(d, "applications", "hermes").update(callbackPath="/oauth2/hermes/callback"),
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("hermes", "callbackPath")


def test_a_backend_service_template_may_use_only_the_release_placeholder(override, load_error):
    directory = override(
        "applications.yaml",
        lambda d: entry_named(d, "applications", "hermes").update(backendService="{namespace}-{release}"),
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("hermes", "backendService")
    assert "unknown placeholder(s) ['namespace']" in error.message


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{name}", "unknown placeholder(s) ['name']"),
        ("hermes", "must contain '{release}'"),
        ("{release}-a-very-long-suffix", "at most 10 characters"),
        ("{release}_web", "lower-case letters, digits and '-'"),
        ("{release}-", "lower-case letters, digits and '-'"),
    ],
    ids=["instance-name-alone", "no-placeholder", "suffix-too-long", "underscore", "trailing-dash"],
)
def test_a_backend_service_template_must_derive_a_service_name_from_the_release_name(
    override, load_error, template, problem
):
    directory = override(
        "applications.yaml", lambda d: entry_named(d, "applications", "hermes").update(backendService=template)
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("hermes", "backendService")
    assert problem in error.message


@pytest.mark.parametrize("port", [0, 65536])
def test_a_backend_port_must_be_a_tcp_port(override, load_error, port):
    error = load_error(
        override("applications.yaml", lambda d: entry_named(d, "applications", "openclaw").update(backendPort=port))
    )
    assert (error.entry, error.field) == ("openclaw", "backendPort")


@pytest.mark.parametrize(
    "image",
    [
        "registry.example.com/magicstick/vllm-rocm-validation",
        "registry.example.com/CHANGEME/vllm-rocm-validation:CHANGEME",
        "vllm-rocm-validation:CHANGEME",
    ],
)
def test_a_validation_image_must_be_a_fixed_registry_reference(override, load_error, image):
    directory = override(
        "gpu-compatibility.yaml",
        lambda d: entry_named(d, "profiles", "strix-halo")["engines"]["VLLM"].update(validationImage=image),
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("strix-halo", "engines.VLLM.validationImage")


@pytest.mark.parametrize(
    "image",
    [
        "registry.example.com/magicstick/vllm-rocm-validation@sha256:" + "0" * 64,
        "registry.example.com/magicstick/vllm-rocm-validation:rocm7.0.0-vllm0.11.2-1@sha256:" + "0" * 64,
    ],
)
def test_a_validation_image_may_be_pinned_by_digest_with_or_without_its_tag(override, image):
    directory = override(
        "gpu-compatibility.yaml",
        lambda d: entry_named(d, "profiles", "strix-halo")["engines"]["VLLM"].update(validationImage=image),
    )
    assert load_catalogs(directory).gpu_compatibility.get("strix-halo").engines["VLLM"].validation_image == image


def test_the_gpu_compatibility_catalog_keeps_its_fixed_name(override, load_error):
    error = load_error(override("gpu-compatibility.yaml", lambda d: d.update(name="my-catalog")))
    assert (error.entry, error.field) == ("(document)", "name")


def test_a_profile_needs_at_least_one_matched_gpu(override, load_error):
    error = load_error(
        override(
            "gpu-compatibility.yaml", lambda d: entry_named(d, "profiles", "strix-halo").update(requiredGpuCount=0)
        )
    )
    assert (error.entry, error.field) == ("strix-halo", "requiredGpuCount")


def test_a_pci_id_is_four_lower_case_hex_digits(override, load_error):
    error = load_error(
        override(
            "gpu-compatibility.yaml",
            lambda d: entry_named(d, "profiles", "strix-halo")["pciDevices"][0].update(deviceId="0x1586"),
        )
    )
    assert (error.entry, error.field) == ("strix-halo", "pciDevices[0].deviceId")


def test_a_hardware_provider_must_name_its_pci_vendor(override, load_error):
    directory = override("modules.yaml", lambda d: entry_named(d, "modules", "gpu").pop("pciVendor"))
    error = load_error(directory)
    assert error.entry == "gpu"
    assert "pciVendor is required for a hardwareProvider module" in error.message


def test_only_a_hardware_provider_may_name_a_pci_vendor(override, load_error):
    directory = override("modules.yaml", lambda d: entry_named(d, "modules", "litellm").update(pciVendor="10de"))
    error = load_error(directory)
    assert error.entry == "litellm"
    assert "pciVendor is only for hardwareProvider modules" in error.message


@pytest.mark.parametrize("fact", ["weightsMi", "kvCacheMiPer1kTokens"])
def test_an_artifact_memory_fact_must_be_positive(override, load_error, fact):
    directory = override(
        "presets.yaml", lambda d: variant_of(d, "qwen2505bcpu", "VLLM", "cpu")["artifacts"][0].update({fact: 0})
    )
    error = load_error(directory)
    assert (error.entry, error.field) == ("qwen2505bcpu", f"variants[0].artifacts[0].{fact}")


def test_an_engine_runtime_memory_must_be_positive(override, load_error):
    error = load_error(override("engines.yaml", lambda d: entry_named(d, "engines", "VLLM").update(runtimeMemoryMi=0)))
    assert (error.entry, error.field) == ("VLLM", "runtimeMemoryMi")


def test_every_shipped_artifact_gives_its_memory_facts():
    catalogs = load_catalogs()
    missing = [
        f"{preset.name}/{variant.engine}/{variant.compute_target}/{artifact.id}"
        for preset in catalogs.presets.entries
        for variant in preset.variants
        for artifact in variant.artifacts
        if artifact.weights_mi is None or artifact.kv_cache_mi_per_1k_tokens is None
    ]
    assert missing == []
