"""What the shipped catalogs promise to the rest of the program."""

from __future__ import annotations

import pytest

from catalogs import load_catalogs

CATALOGS = load_catalogs()


def test_the_shipped_catalogs_load_without_a_user_directory_with_what_the_product_promises():
    assert {"kubeai", "litellm", "dashboard", "gpu", "amd-gpu", "intel-gpu", "model-catalog"} <= {
        module.name for module in CATALOGS.modules.entries
    }
    assert [app.name for app in CATALOGS.applications.entries] == [
        "hermes",
        "kubeopencode",
        "odysseus",
        "openclaw",
        "paperclip",
    ]
    assert [engine.name for engine in CATALOGS.engines.entries] == ["FreeToken", "OLlama", "VLLM"]
    assert [target.name for target in CATALOGS.compute_targets.entries] == ["amd-gpu", "cpu", "intel-gpu", "nvidia-gpu"]
    assert CATALOGS.presets.require("qwen2505bcpu").variant("VLLM", "cpu") is not None


def test_loading_twice_gives_equal_catalogs():
    assert load_catalogs() == CATALOGS


def test_every_catalog_keeps_its_entries_sorted_by_name():
    for catalog in (
        CATALOGS.modules,
        CATALOGS.applications,
        CATALOGS.engines,
        CATALOGS.compute_targets,
        CATALOGS.presets,
    ):
        names = [entry.name for entry in catalog.entries]
        assert names == sorted(names)


@pytest.mark.parametrize(
    "module",
    [
        "basis",
        "dashboard",
        "litellm",
        "model-catalog",
        "kubeai",
        "gpu",
        "amd-gpu",
        "intel-gpu",
        "openclaw-operator",
        "hermes-operator",
        "paperclip-operator",
        "agent-sandbox",
        "kubeopencode",
        "odysseus",
        "private-mesh",
    ],
)
def test_the_module_catalog_holds_each_module_the_appliance_offers(module):
    assert CATALOGS.modules.get(module) is not None


@pytest.mark.parametrize(
    ("module", "crds"),
    [
        ("kubeai", ("models.kubeai.org",)),
        ("gpu", ("clusterpolicies.nvidia.com",)),
        ("amd-gpu", ("deviceconfigs.amd.com",)),
        ("intel-gpu", ("gpudeviceplugins.deviceplugin.intel.com",)),
        ("openclaw-operator", ("openclawinstances.openclaw.rocks",)),
        ("hermes-operator", ("hermesinstances.hermes.agent",)),
        ("paperclip-operator", ("instances.paperclip.inc",)),
        ("agent-sandbox", ("sandboxes.agents.x-k8s.io",)),
        ("kubeopencode", ("agenttemplates.kubeopencode.io",)),
        ("odysseus", ()),
    ],
)
def test_each_module_waits_for_the_crds_it_installs(module, crds):
    assert CATALOGS.modules.get(module).required_crds == crds


def test_only_the_three_gpu_vendor_modules_are_hardware_providers():
    providers = {entry.name for entry in CATALOGS.modules.entries if entry.hardware_provider}
    assert providers == {"gpu", "amd-gpu", "intel-gpu"}


@pytest.mark.parametrize(
    ("module", "display_name"),
    [("gpu", "NVIDIA GPU Operator"), ("amd-gpu", "AMD GPU Operator"), ("intel-gpu", "Intel GPU Operator")],
)
def test_hardware_modules_carry_the_display_name_hardware_status_reports(module, display_name):
    assert CATALOGS.modules.get(module).display_name == display_name


@pytest.mark.parametrize(
    ("module", "kustomization"), [("litellm", "app-litellm"), ("openclaw-operator", "operator-openclaw")]
)
def test_generated_kustomizations_use_the_names_status_reports(module, kustomization):
    assert CATALOGS.modules.get(module).kustomization == kustomization


def test_every_kustomization_name_says_whether_it_is_platform_app_or_operator():
    prefixes = {entry.kustomization.split("-", 1)[0] for entry in CATALOGS.modules.entries}
    assert prefixes == {"platform", "app", "operator"}


def test_every_module_path_lies_under_magic_cluster():
    assert all(entry.path.startswith("./magic-cluster/") for entry in CATALOGS.modules.entries)


def test_the_model_catalog_module_depends_on_litellm():
    assert CATALOGS.modules.get("model-catalog").depends_on == ("litellm",)


def test_every_application_instance_also_needs_litellm_and_the_model_catalog():
    assert CATALOGS.applications.common_modules == ("litellm", "model-catalog")


@pytest.mark.parametrize(
    ("application", "modules", "crds", "kind", "api_version"),
    [
        (
            "openclaw",
            ("openclaw-operator",),
            ("openclawinstances.openclaw.rocks",),
            "OpenClawInstance",
            "openclaw.rocks/v1alpha1",
        ),
        ("hermes", ("hermes-operator",), ("hermesinstances.hermes.agent",), "HermesInstance", "hermes.agent/v1"),
        (
            "paperclip",
            ("paperclip-operator", "agent-sandbox"),
            ("instances.paperclip.inc", "sandboxes.agents.x-k8s.io"),
            "Instance",
            "paperclip.inc/v1alpha1",
        ),
        (
            "kubeopencode",
            ("kubeopencode",),
            ("agenttemplates.kubeopencode.io",),
            "AgentTemplate",
            "kubeopencode.io/v1alpha1",
        ),
        ("odysseus", ("odysseus",), (), "Deployment", "apps/v1"),
    ],
)
def test_each_application_maps_to_its_modules_crds_and_chart_output(application, modules, crds, kind, api_version):
    entry = CATALOGS.applications.get(application)
    assert (entry.required_modules, entry.required_crds, entry.output_kind, entry.output_api_version) == (
        modules,
        crds,
        kind,
        api_version,
    )


def test_an_openclaw_instance_needs_its_operator_litellm_and_the_model_catalog():
    assert CATALOGS.applications.modules_for("openclaw") == ("litellm", "model-catalog", "openclaw-operator")


def test_the_hermes_browser_route_targets_the_dashboard_port_not_the_gateway():
    assert CATALOGS.applications.get("hermes").backend_port == 9119


def test_application_charts_live_with_the_instance_charts():
    assert all(entry.chart == f"./magic-cluster/apps/instances/{entry.name}" for entry in CATALOGS.applications.entries)


def test_every_application_has_its_own_callback_path():
    paths = [entry.callback_path_for("default") for entry in CATALOGS.applications.entries]
    assert len(set(paths)) == len(paths)


@pytest.mark.parametrize(("engine", "memory_mi"), [("VLLM", 4096), ("OLlama", 2048)])
def test_cpu_models_without_a_reservation_use_the_engine_default_memory(engine, memory_mi):
    assert CATALOGS.engines.get(engine).default_memory_mi == memory_mi


@pytest.mark.parametrize(("engine", "uses_kubeai"), [("VLLM", True), ("OLlama", True), ("FreeToken", False)])
def test_only_vllm_and_ollama_run_through_kubeai(engine, uses_kubeai):
    assert CATALOGS.engines.get(engine).uses_kubeai is uses_kubeai


@pytest.mark.parametrize(
    ("target", "allowed"),
    [("cpu", ("auto",)), ("nvidia-gpu", ("auto", "fp8")), ("amd-gpu", ("auto", "fp8")), ("intel-gpu", ("auto",))],
)
def test_vllm_accepts_fp8_kv_cache_only_on_nvidia_and_amd(target, allowed):
    assert CATALOGS.engines.get("VLLM").allowed_kv_cache_types(target) == allowed


@pytest.mark.parametrize("target", ["cpu", "nvidia-gpu", "amd-gpu"])
def test_ollama_accepts_f16_q8_0_and_q4_0_kv_cache_on_each_of_its_targets(target):
    assert CATALOGS.engines.get("OLlama").allowed_kv_cache_types(target) == ("f16", "q8_0", "q4_0")


@pytest.mark.parametrize(("engine", "default"), [("VLLM", "auto"), ("OLlama", "f16"), ("FreeToken", None)])
def test_each_engine_has_its_default_kv_cache_type(engine, default):
    assert CATALOGS.engines.get(engine).default_kv_cache_type == default


def test_ollama_does_not_run_on_intel_gpus():
    assert not CATALOGS.engines.get("OLlama").supports("intel-gpu")


def test_cpu_limits_default_to_no_quota():
    assert {entry.cpu_defaults.limit_millicores for entry in CATALOGS.engines.entries} == {0}


@pytest.mark.parametrize(
    ("target", "module", "resources"),
    [
        ("cpu", None, ()),
        ("nvidia-gpu", "gpu", ("nvidia.com/gpu",)),
        ("amd-gpu", "amd-gpu", ("amd.com/gpu",)),
        ("intel-gpu", "intel-gpu", ("gpu.intel.com/xe", "gpu.intel.com/i915")),
    ],
)
def test_each_compute_target_names_its_module_and_published_resources(target, module, resources):
    entry = CATALOGS.compute_targets.get(target)
    assert (entry.module, entry.resource_names) == (module, resources)


@pytest.mark.parametrize(
    ("resource", "profile"),
    [("gpu.intel.com/xe", "magicstick-intel-gpu-xe"), ("gpu.intel.com/i915", "magicstick-intel-gpu-i915")],
)
def test_intel_models_get_the_kubeai_profile_of_the_resource_actually_published(resource, profile):
    assert CATALOGS.compute_targets.get("intel-gpu").resource_profile(engine="VLLM", resource=resource) == profile


@pytest.mark.parametrize(("engine", "profile"), [("VLLM", "magicstick-cpu-vllm"), ("OLlama", "magicstick-cpu-ollama")])
def test_cpu_models_get_an_engine_specific_kubeai_profile(engine, profile):
    assert CATALOGS.compute_targets.get("cpu").resource_profile(engine=engine) == profile


def test_only_amd_gpus_offer_vision_attention_choices():
    offering = {entry.name for entry in CATALOGS.compute_targets.entries if entry.vision_attention is not None}
    assert offering == {"amd-gpu"}


def test_amd_vision_attention_offers_auto_aotriton_triton_and_flash_attn_triton():
    assert set(CATALOGS.compute_targets.get("amd-gpu").vision_attention) == {
        "auto",
        "aotriton",
        "triton",
        "flash-attn-triton",
    }


def test_vision_attention_auto_sets_no_argument_and_no_environment():
    auto = CATALOGS.compute_targets.get("amd-gpu").vision_attention["auto"]
    assert (auto.args, auto.env) == ((), {})


def test_a_vision_attention_object_without_a_value_means_triton():
    assert CATALOGS.compute_targets.get("amd-gpu").default_vision_attention == "triton"


@pytest.mark.parametrize(
    ("engine", "target", "default", "artifacts"),
    [
        ("VLLM", "cpu", "bf16", {"bf16"}),
        ("VLLM", "amd-gpu", "bf16", {"bf16"}),
        ("VLLM", "intel-gpu", "bf16", {"bf16"}),
        ("VLLM", "nvidia-gpu", "bf16", {"bf16", "awq-int4", "gptq-int4"}),
        ("OLlama", "cpu", "q4-k-m", {"q4-k-m", "q8-0", "fp16"}),
        ("OLlama", "nvidia-gpu", "q4-k-m", {"q4-k-m", "q8-0", "fp16"}),
        ("OLlama", "amd-gpu", "q4-k-m", {"q4-k-m", "q8-0", "fp16"}),
    ],
)
def test_the_portable_qwen_preset_offers_each_engine_and_target_pair(engine, target, default, artifacts):
    variant = CATALOGS.presets.get("qwen2505bcpu").variant(engine, target)
    assert (variant.default_artifact, {a.id for a in variant.artifacts}) == (default, artifacts)


def test_the_portable_qwen_preset_has_no_ollama_variant_on_intel():
    assert CATALOGS.presets.get("qwen2505bcpu").variant("OLlama", "intel-gpu") is None


def test_ollama_artifacts_use_ollama_urls():
    variant = CATALOGS.presets.get("qwen2505bcpu").variant("OLlama", "cpu")
    assert all(artifact.url.startswith("ollama://") for artifact in variant.artifacts)


def test_the_embedding_preset_serves_awq_int4_with_vllm_on_nvidia_gpus():
    preset = CATALOGS.presets.get("qwen352bvlembedding")
    variant = preset.variant("VLLM", "nvidia-gpu")
    assert (preset.model_type, variant.artifact("awq-int4").quantization) == ("embedding", "awq")


@pytest.mark.parametrize("target", ["nvidia-gpu", "amd-gpu"])
def test_the_large_qwen_preset_runs_with_vllm_on_nvidia_and_amd(target):
    assert CATALOGS.presets.get("qwen3635b").variant("VLLM", target) is not None


def test_the_gpu_compatibility_catalog_is_versioned_and_named():
    catalog = CATALOGS.gpu_compatibility
    assert (catalog.name, catalog.version) == ("magicstick-gpu-compatibility-catalog", "1")


def test_strix_halo_is_an_experimental_amd_profile_for_exactly_one_gfx1151_gpu():
    profile = CATALOGS.gpu_compatibility.get("strix-halo")
    assert (profile.module, profile.experimental, profile.required_gpu_count, profile.expected_architecture) == (
        "amd-gpu",
        True,
        1,
        "gfx1151",
    )


def test_strix_halo_catalogues_ollama_and_vllm_with_fixed_validation_images():
    engines = CATALOGS.gpu_compatibility.get("strix-halo").engines
    assert sorted(engines) == ["OLlama", "VLLM"]
    assert all(":" in engine.validation_image.rsplit("/", 1)[1] for engine in engines.values())


def test_validation_images_use_the_example_registry():
    images = [engine.validation_image for engine in CATALOGS.gpu_compatibility.get("strix-halo").engines.values()]
    assert all(image.startswith("registry.example.com/") for image in images)
