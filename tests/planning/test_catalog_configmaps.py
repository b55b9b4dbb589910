"""The catalog ConfigMaps override the base catalogs when valid, and degrade the appliance when not."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

import catalogs as catalogs_package
from catalogs import load_catalogs
from planning.catalog_overrides import CATALOG_CONFIG_MAPS, catalogs_in_force
from planning.frozen import thaw
from planning.plan import Plan
from planning.snapshot import Snapshot
from tests.planning.builders import (
    CATALOGS,
    NS,
    activation,
    appliance,
    as_stored,
    instance,
    kustomization_names,
    status_of,
    with_flux,
)
from tests.planning.catalog_maps import planned, ready_condition

SHIPPED = Path(catalogs_package.__file__).parent
MODULE_CATALOG = "magicstick-module-catalog"
APP_CATALOG = "magicstick-app-catalog"
NOTES = {
    "name": "notes",
    "displayName": "Notes",
    "description": "A shared notebook service.",
    "path": "./magic-cluster/apps/notes",
    "kustomization": "app-notes",
}
ODYSSEUS_WITH_NOTES = {
    "name": "odysseus",
    "displayName": "Odysseus",
    "requiredModules": ["odysseus", "notes"],
    "chart": "./magic-cluster/apps/instances/odysseus",
    "outputKind": "Deployment",
    "outputApiVersion": "apps/v1",
    "backendService": "{release}-odysseus",
    "backendPort": 8080,
    "callbackPath": "/oauth2/odysseus/{instance}/callback",
}
"""The shipped odysseus entry, also requiring the module `notes`. The AppInstance API accepts the
shipped application names only (api.instances.APPLICATIONS), so a ConfigMap redefines them."""


def shipped(file_name: str) -> dict[str, Any]:
    return yaml.safe_load((SHIPPED / file_name).read_text())


def modules_with(*entries: dict[str, Any], without: str | None = None) -> str:
    document = shipped("modules.yaml")
    document["modules"] = [m for m in document["modules"] if m["name"] != without] + [copy.deepcopy(e) for e in entries]
    return yaml.safe_dump(document, sort_keys=False)


def applications_with(*entries: dict[str, Any]) -> str:
    """The shipped applications, each of `entries` replacing the one of its name."""
    document = shipped("applications.yaml")
    replaced = {e["name"]: copy.deepcopy(e) for e in entries}
    document["applications"] = [replaced.pop(a["name"], a) for a in document["applications"]] + list(replaced.values())
    return yaml.safe_dump(document, sort_keys=False)


def config_map(name: str, data: dict[str, str], *, namespace: str = NS) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def module_catalog(text: str, **kwargs: Any) -> dict[str, Any]:
    return config_map(MODULE_CATALOG, {"modules.yaml": text}, **kwargs)


def app_catalog(text: str) -> dict[str, Any]:
    return config_map(APP_CATALOG, {"applications.yaml": text})


def test_the_catalog_config_maps_are_the_seeds_three_with_their_keys():
    assert [(c.name, c.key, c.catalog) for c in CATALOG_CONFIG_MAPS] == [
        (MODULE_CATALOG, "modules.yaml", "modules"),
        (APP_CATALOG, "applications.yaml", "applications"),
        ("magicstick-model-presets", "presets.yaml", "presets"),
    ]


def test_without_catalog_config_maps_the_base_catalogs_are_in_force():
    in_force = catalogs_in_force(Snapshot.from_objects([appliance()]), CATALOGS, system_namespace=NS)

    assert in_force.catalogs is CATALOGS and in_force.applied == () and in_force.problems == ()


def test_a_valid_module_catalog_config_map_adds_a_module_the_plan_then_installs():
    objects = (appliance(), activation("notes"))

    without = planned(*objects)
    result = planned(*objects, module_catalog(modules_with(NOTES)))

    assert status_of(without, "ModuleActivation", "notes")["reason"] == "UnknownModule"
    assert "app-notes" in kustomization_names(result)
    assert status_of(result, "ModuleActivation", "notes")["reason"] != "UnknownModule"
    assert ready_condition(result)["reason"] != "CatalogInvalid"


def test_a_valid_application_catalog_config_map_naming_a_module_of_the_module_config_map_applies_both():
    objects = (
        appliance(),
        instance("team", "odysseus"),
        module_catalog(modules_with(NOTES)),
        app_catalog(applications_with(ODYSSEUS_WITH_NOTES)),
    )
    snapshot = Snapshot.from_objects(with_flux(objects))

    in_force = catalogs_in_force(snapshot, CATALOGS, system_namespace=NS)
    result = planned(*objects)

    assert in_force.applied == (f"{NS}/{MODULE_CATALOG}", f"{NS}/{APP_CATALOG}")
    assert status_of(result, "Appliance", "local")["modules"]["notes"]["requestedBy"] == ["AppInstance/team"]
    assert "notes" in status_of(result, "AppInstance", "team")["requiredModules"]


BROKEN_MODULE_CATALOGS = {
    "YAML error": (
        "modules:\n  - name: notes\n    path: [unclosed\n",
        "the document",
        "line 4, column 1",
        "invalid YAML",
    ),
    "not a mapping": ("- notes\n", "the document", "(root)", "expected a mapping"),
    "schema error": (modules_with({**NOTES, "colour": "red"}), "entry 'notes'", "colour", "unknown field"),
    "missing field": (
        modules_with({k: v for k, v in NOTES.items() if k != "path"}),
        "entry 'notes'",
        "path",
        "required field is missing",
    ),
    "cross-entry error": (
        modules_with({**NOTES, "dependsOn": ["nowhere"]}),
        "entry 'notes'",
        "dependsOn",
        "'nowhere' is not a catalogued module",
    ),
    "cross-file error": (
        modules_with(NOTES, without="openclaw-operator"),
        "entry 'openclaw'",
        "requiredModules",
        "'openclaw-operator' is not a catalogued module",
    ),
}


@pytest.mark.parametrize("case", BROKEN_MODULE_CATALOGS, ids=str)
def test_an_invalid_module_catalog_config_map_keeps_the_base_and_degrades_the_appliance_naming_the_field(case):
    text, entry, field, problem = BROKEN_MODULE_CATALOGS[case]
    objects = (appliance(), activation("basis"), activation("notes"))

    result = planned(*objects, module_catalog(text))

    assert kustomization_names(result) == kustomization_names(planned(*objects))
    assert status_of(result, "ModuleActivation", "notes")["reason"] == "UnknownModule"
    status = status_of(result, "Appliance", "local")
    condition = status["conditions"][0]
    assert (status["phase"], condition["status"], condition["reason"]) == ("Degraded", "False", "CatalogInvalid")
    assert condition["message"].startswith(f"ConfigMap {NS}/{MODULE_CATALOG} key modules.yaml is not applied")
    assert f"{entry}, field {field}: {problem}" in condition["message"]


def test_a_cross_file_error_names_the_catalog_that_no_longer_agrees():
    result = planned(appliance(), module_catalog(modules_with(without="openclaw-operator")))

    assert (
        "(with it, applications.yaml fails): entry 'openclaw', field requiredModules"
        in ready_condition(result)["message"]
    )


def test_a_config_map_without_its_key_is_invalid_and_names_the_keys_it_has():
    result = planned(appliance(), config_map(MODULE_CATALOG, {"modules.yml": modules_with(NOTES)}))

    message = ready_condition(result)["message"]
    assert ready_condition(result)["reason"] == "CatalogInvalid"
    assert "the document, field (key): the ConfigMap has no key modules.yaml (keys: modules.yml)" in message


def test_an_invalid_application_catalog_config_map_keeps_the_shipped_applications():
    broken = applications_with({**ODYSSEUS_WITH_NOTES, "requiredModules": ["odysseus", "nowhere"]})

    result = planned(appliance(), instance("team", "odysseus"), app_catalog(broken))

    assert status_of(result, "AppInstance", "team")["requiredModules"] == sorted(
        ["odysseus", *CATALOGS.applications.common_modules]
    )
    message = ready_condition(result)["message"]
    assert message.startswith(
        f"ConfigMap {NS}/{APP_CATALOG} key applications.yaml is not applied: entry 'odysseus', field requiredModules"
    )


def test_an_application_catalog_that_needs_a_rejected_module_catalog_is_rejected_too_and_both_are_named():
    broken_modules = modules_with({**NOTES, "colour": "red"})

    result = planned(appliance(), module_catalog(broken_modules), app_catalog(applications_with(ODYSSEUS_WITH_NOTES)))

    message = ready_condition(result)["message"]
    assert f"ConfigMap {NS}/{MODULE_CATALOG} key modules.yaml is not applied: entry 'notes', field colour" in message
    assert (
        f"ConfigMap {NS}/{APP_CATALOG} key applications.yaml is not applied: entry 'odysseus', field requiredModules: 'notes'"
        in message
    )
    assert message.index(MODULE_CATALOG) < message.index(APP_CATALOG)


def test_a_valid_module_catalog_stays_applied_when_the_application_catalog_beside_it_is_invalid():
    objects = (appliance(), activation("notes"), module_catalog(modules_with(NOTES)), app_catalog("applications: {"))
    in_force = catalogs_in_force(Snapshot.from_objects(with_flux(objects)), CATALOGS, system_namespace=NS)

    assert in_force.applied == (f"{NS}/{MODULE_CATALOG}",)
    assert [p.config_map.name for p in in_force.problems] == [APP_CATALOG]
    assert "app-notes" in kustomization_names(planned(*objects))


def test_a_catalog_config_map_of_another_namespace_is_not_read():
    result = planned(appliance(), activation("notes"), module_catalog(modules_with(NOTES), namespace="flux-system"))

    assert status_of(result, "ModuleActivation", "notes")["reason"] == "UnknownModule"
    assert ready_condition(result)["reason"] != "CatalogInvalid"


def test_a_config_map_takes_precedence_over_the_catalog_directory(tmp_path):
    from_directory = shipped("modules.yaml")
    next(m for m in from_directory["modules"] if m["name"] == "basis")["path"] = "./site/basis"
    (tmp_path / "modules.yaml").write_text(yaml.safe_dump(from_directory))
    base = load_catalogs(tmp_path)
    from_config_map = copy.deepcopy(from_directory)
    next(m for m in from_config_map["modules"] if m["name"] == "basis")["path"] = "./cluster/basis"
    objects = (appliance(), activation("basis"))

    def basis_path(result: Plan) -> str:
        (found,) = [k for k in result.modules.kustomizations if k.name == "platform-basis"]
        return found.body["spec"]["path"]

    assert basis_path(planned(*objects, base=base)) == "./site/basis"
    assert (
        basis_path(planned(*objects, module_catalog(yaml.safe_dump(from_config_map)), base=base)) == "./cluster/basis"
    )


def test_an_invalid_edit_of_the_module_catalog_keeps_the_kustomization_of_a_module_only_it_defined():
    valid = planned(appliance(), activation("notes"), module_catalog(modules_with(NOTES)))
    (applied,) = [k for k in valid.modules.kustomizations if k.name == "app-notes"]
    observed = as_stored(applied)
    objects = (appliance(), activation("notes"), observed)

    broken = planned(*objects, module_catalog(modules_with({**NOTES, "colour": "red"})))
    removed = planned(*objects)

    (kept,) = [k for k in broken.modules.kustomizations if k.name == "app-notes"]
    assert thaw(kept.body["spec"]) == observed["spec"]
    assert not [s for s in broken.stale if s.name == "app-notes"]
    assert "app-notes" not in kustomization_names(removed)


def test_a_converged_run_with_an_invalid_config_map_plans_the_identical_appliance_status():
    objects = (appliance(), module_catalog("modules: ["))
    first = status_of(planned(*objects), "Appliance", "local")

    again = planned(appliance(status=first), module_catalog("modules: ["))

    assert status_of(again, "Appliance", "local") == first
