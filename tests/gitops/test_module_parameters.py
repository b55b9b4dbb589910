"""Module parameters in the bases: each declared variable is read by its module's base as a quoted,
defaulted substitution whose default is the catalog's, and a value Flux substitutes lands where the
parameter says. A component parameter adds its part of the module only while it is true:
LiteLLM's database exists with `postgres: true`, sized by `postgresStorage`, and not otherwise
(built from the Kustomization the program plans, as Flux builds it)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from catalogs import ModuleEntry
from planning.frozen import thaw
from planning.models.catalog_format import LITELLM_NAMESPACE
from tests.gitops.tree import REPOSITORY, flux_build_kustomization, in_repository, module_entries, of_kind, variables
from tests.planning.builders import appliance, kustomization_of, plan_of, runtime

EXAMPLE = REPOSITORY / "examples" / "litellm-database" / "moduleactivation.yaml"
PINNED_IMAGE = re.compile(r"^docker\.io/library/postgres:[0-9]+\.[0-9]+$")
SUBSTITUTED = [(entry, parameter) for entry in module_entries() for parameter in entry.parameters if parameter.variable]


def _id(case: tuple[ModuleEntry, object]) -> str:
    entry, parameter = case
    return f"{entry.name}.{parameter.name}"


def _source_text(entry: ModuleEntry) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(in_repository(entry.path).rglob("*.yaml")))


@pytest.mark.parametrize("case", SUBSTITUTED, ids=_id)
def test_a_declared_variable_is_read_by_its_base_quoted_with_the_catalog_default(case):
    entry, parameter = case
    assert f'"${{{parameter.variable}:={parameter.default}}}"' in _source_text(entry), (
        f"{entry.path} does not read {parameter.variable}"
    )


@pytest.mark.parametrize("entry", module_entries(), ids=lambda e: e.name)
def test_every_upper_case_variable_of_a_base_is_a_parameter_of_its_module(entry):
    declared = {p.variable for p in entry.parameters if p.variable}
    used = {m["name"] for m in variables(_source_text(entry)) if m["name"].isupper()}
    assert used <= declared, f"{entry.name}: {sorted(used - declared)} not declared in catalogs/modules.yaml"


def _litellm_build(parameters: dict[str, Any] | None) -> list[dict[str, Any]]:
    """What Flux applies for the Kustomization the program plans for a litellm activation with
    `parameters`: its path with the components it lists, substituted."""
    spec: dict[str, Any] = {"module": "litellm", "enabled": True}
    if parameters is not None:
        spec["parameters"] = parameters
    planned = kustomization_of(plan_of(appliance(), runtime("ModuleActivation", "litellm", spec)), "litellm")
    assert planned is not None
    return flux_build_kustomization(thaw(planned.body))


def _release_values(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (release,) = of_kind(objects, "HelmRelease")
    return dict(release["spec"]["values"])


@pytest.mark.parametrize("parameters", [None, {"postgresStorage": "7Gi"}, {"postgres": False}], ids=str)
def test_litellm_starts_no_database_unless_postgres_is_true(parameters):
    objects = _litellm_build(parameters)
    assert of_kind(objects, "StatefulSet") == [] and of_kind(objects, "Service") == []
    db = _release_values(objects)["db"]
    assert (db["useExisting"], db["deployStandalone"]) == (False, False)


@pytest.mark.parametrize(
    ("parameters", "size"),
    [({"postgres": True, "postgresStorage": "7Gi"}, "7Gi"), ({"postgres": True}, "5Gi")],
    ids=["given", "default"],
)
def test_litellm_postgres_storage_sizes_the_volume_of_the_database_postgres_starts(parameters, size):
    objects = _litellm_build(parameters)
    (database,) = of_kind(objects, "StatefulSet")
    (claim,) = database["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == size
    assert of_kind(objects, "PersistentVolumeClaim") == []


def test_the_shipped_example_starts_the_database_with_the_size_it_asks_for():
    example = yaml.safe_load(EXAMPLE.read_text())
    parameters = example["spec"]["parameters"]
    planned = kustomization_of(plan_of(appliance(), example), "litellm")
    assert planned is not None
    (database,) = of_kind(flux_build_kustomization(thaw(planned.body)), "StatefulSet")
    (claim,) = database["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == parameters["postgresStorage"]


def test_the_proxy_connects_to_the_database_postgres_starts_with_the_same_secret_and_no_password_in_git():
    objects = _litellm_build({"postgres": True})
    (database,) = of_kind(objects, "StatefulSet")
    (service,) = of_kind(objects, "Service")
    values = _release_values(objects)
    db = values["db"]
    assert (db["useExisting"], db["deployStandalone"]) == (True, False)
    namespace = database["metadata"]["namespace"]
    assert namespace == service["metadata"]["namespace"] == LITELLM_NAMESPACE
    assert db["endpoint"] == f"{service['metadata']['name']}.{namespace}.svc"
    assert service["spec"]["selector"].items() <= database["spec"]["template"]["metadata"]["labels"].items()
    (container,) = database["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["POSTGRES_DB"]["value"] == db["database"]
    secret = db["secret"]
    assert env["POSTGRES_USER"]["valueFrom"]["secretKeyRef"] == {"name": secret["name"], "key": secret["usernameKey"]}
    assert env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": secret["name"],
        "key": secret["passwordKey"],
    }
    assert [e for e in container["env"] if "PASSWORD" in e["name"] and "value" in e] == []
    assert PINNED_IMAGE.match(container["image"]), container["image"]
    assert of_kind(objects, "Secret") == []
