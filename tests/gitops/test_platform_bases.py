"""What the platform bases promise the program: the GPU operators as it expects them, the shared
Gateway it attaches routes to, and the dashboard on the hosts it derives callback routes for."""

from __future__ import annotations

import pytest
import yaml

from planning.access_settings import AccessSettings
from planning.hardware.amd import DEFAULT_NAMESPACE as AMD_NAMESPACE
from planning.instances.guard import ENVOY_PROXY_API_VERSION, ENVOY_PROXY_NAME
from planning.settings import PlanSettings
from tests.gitops.tree import build, flux_build, in_repository, module_entries, of_kind, render_chart
from tests.support.crd_schema import upstream_registry

DEVICE_PLUGIN_CONFIG = "magicstick-device-plugin-config"
TIME_SLICING_PROFILES = "time-slicing-profiles.yaml"


def base(module: str) -> list[dict]:
    (entry,) = [e for e in module_entries() if e.name == module]
    return build(in_repository(entry.path))


def release(objects: list[dict], name: str) -> dict:
    (found,) = [r for r in of_kind(objects, "HelmRelease") if r["metadata"]["name"] == name]
    return found


def test_the_nvidia_device_plugin_reads_the_shipped_profiles_and_keeps_its_default_on_unlabelled_nodes():
    values = release(base("gpu"), "gpu-operator")["spec"]["values"]
    assert values["devicePlugin"]["config"] == {"name": DEVICE_PLUGIN_CONFIG, "default": ""}


def test_the_nvidia_base_ships_the_time_slicing_profiles_in_the_operator_namespace():
    (entry,) = [e for e in module_entries() if e.name == "gpu"]
    kustomization = yaml.safe_load((in_repository(entry.path) / "kustomization.yaml").read_text())
    assert TIME_SLICING_PROFILES in kustomization["resources"]
    objects = base("gpu")
    (profiles,) = [c for c in of_kind(objects, "ConfigMap") if c["metadata"]["name"] == DEVICE_PLUGIN_CONFIG]
    assert profiles["metadata"]["namespace"] == release(objects, "gpu-operator")["spec"]["targetNamespace"]


def test_the_amd_base_installs_the_controller_only_and_leaves_the_device_config_to_the_program():
    objects = base("amd-gpu")
    values = release(objects, "amd-gpu-operator")["spec"]["values"]
    assert values["crds"]["defaultCR"] == {"install": False, "upgrade": False}
    assert values["kmm"]["enabled"] is False
    assert of_kind(objects, "DeviceConfig") == []


def test_the_amd_operator_runs_where_the_program_declares_its_device_config():
    assert release(base("amd-gpu"), "amd-gpu-operator")["spec"]["targetNamespace"] == AMD_NAMESPACE


def test_the_intel_gpu_plugin_is_installed_only_after_the_operator_that_serves_its_crd():
    plugin = release(base("intel-gpu"), "intel-device-plugins-gpu")
    assert plugin["spec"]["dependsOn"] == [{"name": "intel-device-plugins-operator"}]


@pytest.fixture(scope="module")
def gateway_objects() -> list[dict]:
    gateway_release = release(base("basis"), "magicstick-gateway")
    chart = in_repository(gateway_release["spec"]["chart"]["spec"]["chart"])
    return render_chart(
        chart,
        gateway_release["spec"]["values"],
        release="magicstick-gateway",
        namespace=gateway_release["spec"]["targetNamespace"],
    )


def test_the_shared_gateway_is_where_the_program_attaches_its_routes(gateway_objects):
    settings = AccessSettings()
    (gateway,) = of_kind(gateway_objects, "Gateway")
    assert (gateway["metadata"]["namespace"], gateway["metadata"]["name"]) == (
        settings.gateway_namespace,
        settings.gateway_name,
    )
    if settings.gateway_listener is not None:
        assert settings.gateway_listener in {listener["name"] for listener in gateway["spec"]["listeners"]}


def test_the_shared_gateway_takes_its_parameters_from_the_envoy_proxy_the_program_declares(gateway_objects):
    (gateway,) = of_kind(gateway_objects, "Gateway")
    group = ENVOY_PROXY_API_VERSION.split("/")[0]
    assert gateway["spec"]["infrastructure"]["parametersRef"] == {
        "group": group,
        "kind": "EnvoyProxy",
        "name": ENVOY_PROXY_NAME,
    }


def test_no_base_declares_the_envoy_proxy_the_program_owns(gateway_objects):
    declared = [o for e in module_entries() for o in build(in_repository(e.path)) if o["kind"] == "EnvoyProxy"]
    assert declared + of_kind(gateway_objects, "EnvoyProxy") == []


def test_the_gateway_and_its_class_validate_against_the_upstream_gateway_api_schema(gateway_objects):
    registry = upstream_registry()
    assert {o["kind"] for o in gateway_objects} == {"GatewayClass", "Gateway"}
    for obj in gateway_objects:
        assert registry.errors(obj) == [], obj["kind"]


def test_the_gateway_is_installed_only_after_envoy_gateway_serves_the_gateway_api():
    assert release(base("basis"), "magicstick-gateway")["spec"]["dependsOn"] == [{"name": "envoy-gateway"}]


def test_the_dashboard_answers_on_the_hosts_the_program_puts_callback_routes_on():
    settings = {"domain": "appliance.example.com", "local_domain": "appliance.example.local"}
    (entry,) = [e for e in module_entries() if e.name == "dashboard"]
    (route,) = of_kind(flux_build(in_repository(entry.path), settings), "HTTPRoute")
    expected = AccessSettings().dashboard_hosts_for(domain=settings["domain"], local_domain=settings["local_domain"])
    assert sorted(route["spec"]["hostnames"]) == sorted(expected)


def test_the_dashboard_hosts_default_to_the_program_domains_without_settings():
    (entry,) = [e for e in module_entries() if e.name == "dashboard"]
    (route,) = of_kind(flux_build(in_repository(entry.path)), "HTTPRoute")
    plan = PlanSettings()
    expected = AccessSettings().dashboard_hosts_for(domain=plan.domain, local_domain=plan.local_domain)
    assert sorted(route["spec"]["hostnames"]) == sorted(expected)


def test_the_dashboard_route_and_its_sign_on_validate_against_the_upstream_schemas():
    registry = upstream_registry()
    (entry,) = [e for e in module_entries() if e.name == "dashboard"]
    objects = flux_build(in_repository(entry.path))
    for obj in of_kind(objects, "HTTPRoute") + of_kind(objects, "SecurityPolicy"):
        assert registry.errors(obj) == [], obj["kind"]


def test_the_placeholder_images_of_the_appliance_own_services_are_on_the_public_boundary():
    for entry in [e for e in module_entries() if e.name in ("dashboard", "private-mesh")]:
        for deployment in of_kind(flux_build(in_repository(entry.path)), "Deployment"):
            for container in deployment["spec"]["template"]["spec"]["containers"]:
                assert container["image"].startswith("registry.example.com/"), (entry.name, container["image"])
