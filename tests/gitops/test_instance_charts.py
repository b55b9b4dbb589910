"""The instance charts of catalogs/applications.yaml, rendered with Helm's own engine.

Each chart must accept every values document the program puts into an instance HelmRelease
(its values.schema.json is checked on render, as helm-controller does), render the catalog's
output kind named after the release, and render the backend Service the catalog's
`backendService` rule names, so the program's routes lead somewhere.
"""

from __future__ import annotations

import json

import helm_python
import pytest

from tests.gitops.instance_values import RenderedRelease, program_releases
from tests.gitops.tree import application_entries, in_repository, render_chart
from tests.support.crd_schema import upstream_registry

RELEASES = program_releases()
APPLICATIONS = application_entries()


def _render(release: RenderedRelease) -> list[dict]:
    return render_chart(release.chart, release.values, release=release.release, namespace=release.namespace)


@pytest.mark.parametrize("application", APPLICATIONS, ids=lambda a: a.name)
def test_every_application_has_a_chart_with_a_values_schema_at_its_catalog_path(application):
    chart = in_repository(application.chart)
    assert (chart / "Chart.yaml").is_file()
    json.loads((chart / "values.schema.json").read_text())


@pytest.mark.parametrize("application", APPLICATIONS, ids=lambda a: a.name)
def test_every_chart_lints_clean_under_helm_strict_lint(application):
    report = helm_python.lint(str(in_repository(application.chart)), strict=True)
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.label)
def test_every_chart_renders_the_values_the_program_releases_it_with(release):
    assert _render(release)


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.label)
def test_every_chart_renders_its_catalog_output_kind_named_after_the_release(release):
    application = release.application
    outputs = [
        o
        for o in _render(release)
        if (o["apiVersion"], o["kind"]) == (application.output_api_version, application.output_kind)
    ]
    assert [o["metadata"]["name"] for o in outputs] == [_backend_owner(release)]


def _backend_owner(release: RenderedRelease) -> str:
    """The name of the output object: the release, or for a Deployment the Service it serves."""
    if release.application.output_kind == "Deployment":
        return release.application.backend_service.format(release=release.release)
    return release.release


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.label)
def test_everything_a_chart_renders_is_in_the_release_namespace_and_named_after_the_release(release):
    for obj in _render(release):
        assert obj["metadata"]["namespace"] == release.namespace
        assert obj["metadata"]["name"].startswith(release.release), obj["metadata"]["name"]


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.label)
def test_every_custom_resource_a_chart_renders_validates_against_the_upstream_crd(release):
    registry = upstream_registry()
    for obj in _render(release):
        if "." in obj["apiVersion"].split("/")[0] and not obj["apiVersion"].startswith("rbac.authorization.k8s.io/"):
            assert registry.errors(obj) == [], f"{obj['kind']}/{obj['metadata']['name']}"


@pytest.mark.parametrize("release", [r for r in RELEASES if r.application.name == "odysseus"], ids=lambda r: r.label)
def test_the_odysseus_chart_renders_the_backend_service_on_the_catalog_port(release):
    service_name = release.application.backend_service.format(release=release.release)
    (service,) = [o for o in _render(release) if o["kind"] == "Service"]
    assert service["metadata"]["name"] == service_name
    assert [p["port"] for p in service["spec"]["ports"]] == [release.application.backend_port]


@pytest.mark.parametrize(
    "release", [r for r in RELEASES if r.application.name == "kubeopencode"], ids=lambda r: r.label
)
def test_the_kubeopencode_agent_serves_on_the_catalog_port_behind_its_server_service(release):
    (agent,) = [o for o in _render(release) if o["kind"] == "Agent"]
    assert release.application.backend_service.format(release=release.release) == f"{agent['metadata']['name']}-server"
    assert agent["spec"]["port"] == release.application.backend_port
    assert agent["spec"]["templateRef"]["name"] == release.release


@pytest.mark.parametrize("release", [r for r in RELEASES if r.application.name == "hermes"], ids=lambda r: r.label)
def test_the_hermes_instance_exposes_the_dashboard_port_the_routes_open(release):
    (instance,) = [o for o in _render(release) if o["kind"] == "HermesInstance"]
    ports = [p["port"] for p in instance["spec"]["networking"]["service"]["ports"]]
    assert release.application.backend_port in ports


@pytest.mark.parametrize("release", [r for r in RELEASES if r.application.name == "paperclip"], ids=lambda r: r.label)
def test_the_paperclip_instance_serves_on_the_catalog_port(release):
    (instance,) = [o for o in _render(release) if o["kind"] == "Instance"]
    assert instance["spec"]["networking"]["service"]["port"] == release.application.backend_port


def test_paperclip_agent_execution_reaches_the_instance_settings():
    (release,) = [r for r in RELEASES if r.label == "demo:paperclip-default"]
    (settings,) = [o for o in _render(release) if o["kind"] == "ConfigMap"]
    execution = release.values["agentExecution"]
    assert settings["data"]["PAPERCLIP_AGENT_DEFAULT_MODEL"] == execution["defaultModel"]
    assert settings["data"]["PAPERCLIP_AGENT_MAX_CONCURRENT"] == str(execution["maxConcurrentAgents"])
    assert settings["data"]["PAPERCLIP_ADAPTER_OPENCODE_ENABLED"] == "true"
    assert settings["data"]["PAPERCLIP_ADAPTER_HERMES_ENABLED"] == "false"


@pytest.mark.parametrize("application", APPLICATIONS, ids=lambda a: a.name)
def test_two_instances_of_one_application_never_render_the_same_object(application):
    (first, second) = [r for r in RELEASES if r.label in (f"minimal:{application.name}", f"empty:{application.name}")]
    names = [{(o["kind"], o["metadata"]["name"]) for o in _render(release)} for release in (first, second)]
    assert names[0] & names[1] == set()


@pytest.mark.parametrize("application", APPLICATIONS, ids=lambda a: a.name)
def test_every_chart_refuses_a_value_it_does_not_know(application):
    with pytest.raises(helm_python.HelmValuesError, match="modle"):
        render_chart(in_repository(application.chart), {"name": "typo", "modle": "x"}, release="typo", namespace="ai")


@pytest.mark.parametrize("application", APPLICATIONS, ids=lambda a: a.name)
def test_every_chart_keeps_the_model_key_in_a_secret_reference(application):
    for release in [r for r in RELEASES if r.application.name == application.name]:
        text = json.dumps(_render(release))
        assert "secretKeyRef" in text or "secretRef" in text
        assert "sk-" not in text
