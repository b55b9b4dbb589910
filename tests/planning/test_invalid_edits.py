"""Invariant 6: an invalid edit does not tear down what runs.

While an object's spec is rejected, everything it caused stays as last applied: its own
generated objects, the modules it requested, the modules that depend on those, its routes. Its
status says why. Each case starts from a converged cluster (every planned object applied,
every status written), makes one object invalid and plans again.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from planning.frozen import thaw
from planning.instances.plan import GATEWAY_CRDS, HELM_RELEASE_CRD
from planning.plan import Plan
from tests.planning.builders import (
    LATER,
    activation,
    appliance,
    cpu_model,
    crd,
    external_model,
    instance,
    plan_of,
    status_of,
)
from tests.planning.worlds import converge

SERVED = tuple(crd(name) for name in (*GATEWAY_CRDS, HELM_RELEASE_CRD))
PUBLIC_SOURCE = {"kind": "GitRepository", "name": "magicstick-public", "namespace": "flux-system"}

WORLDS: dict[str, tuple[dict, ...]] = {
    # Appliance defaults, an OpenClaw instance, a CPU model (the only requester of kubeai) and
    # an external model.
    "appliance": (
        appliance({"basis": True, "dashboard": True, "litellm": True, "model-catalog": True}, source=PUBLIC_SOURCE),
        instance("openclaw-default", "openclaw"),
        cpu_model("qwen2505bcpu"),
        external_model("gpt"),
        *SERVED,
    ),
    # Nothing seeded: litellm and model-catalog (which depends on litellm) exist only because
    # the one external model asks for them.
    "one-external-model": (appliance(), external_model("gpt")),
    # Nothing seeded: operator-openclaw, litellm and model-catalog exist only for the instance.
    "one-instance": (appliance(), instance("openclaw-default", "openclaw"), *SERVED),
    # Nothing seeded: kubeai, litellm and model-catalog exist only for the CPU model.
    "one-cpu-model": (appliance(), cpu_model("qwen2505bcpu")),
}


def _set(path: str, value: object) -> Callable[[dict], None]:
    """An edit that sets spec.<path> (dot-separated) to `value`."""

    def edit(obj: dict) -> None:
        target = obj["spec"]
        *parents, leaf = path.split(".")
        for key in parents:
            target = target[key]
        target[leaf] = value

    return edit


EDITS = {
    # id: (world, kind, name, edit, phase the edited object reports)
    "appliance-profile": ("appliance", "Appliance", "local", _set("profile", 7), "Degraded"),
    "appliance-modules": ("appliance", "Appliance", "local", _set("modules", "x"), "Degraded"),
    "appliance-source": ("appliance", "Appliance", "local", _set("source", "x"), "Degraded"),
    "module-activation-enabled": ("appliance", "ModuleActivation", "litellm", _set("enabled", "x"), "Failed"),
    "module-activation-module": ("appliance", "ModuleActivation", "litellm", _set("module", 5), "Failed"),
    "module-activation-undeclared-parameter": (
        "appliance",
        "ModuleActivation",
        "litellm",
        _set("parameters", {"fooBar": "x"}),
        "Failed",
    ),
    "module-activation-parameter-type": (
        "appliance",
        "ModuleActivation",
        "litellm",
        _set("parameters", {"postgresStorage": "lots"}),
        "Failed",
    ),
    "model-local": ("appliance", "ModelActivation", "qwen2505bcpu", _set("local", "x"), "Failed"),
    "model-engine": ("appliance", "ModelActivation", "qwen2505bcpu", _set("local.engine", "NoSuchEngine"), "Failed"),
    "model-external": ("appliance", "ModelActivation", "gpt", _set("external.modelType", "x"), "Failed"),
    "instance-values": ("appliance", "AppInstance", "openclaw-default", _set("values", "x"), "Failed"),
    "instance-application": (
        "appliance",
        "AppInstance",
        "openclaw-default",
        _set("application", "no-such-app"),
        "Failed",
    ),
    "only-requester-external-model": (
        "one-external-model",
        "ModelActivation",
        "gpt",
        _set("external.modelType", "x"),
        "Failed",
    ),
    "only-requester-instance": ("one-instance", "AppInstance", "openclaw-default", _set("values", "x"), "Failed"),
    "only-requester-instance-application": (
        "one-instance",
        "AppInstance",
        "openclaw-default",
        _set("application", 5),
        "Failed",
    ),
    "only-requester-cpu-model": ("one-cpu-model", "ModelActivation", "qwen2505bcpu", _set("local", "x"), "Failed"),
}


def _converged(world: str) -> tuple[Plan, tuple[dict, ...]]:
    return converge(WORLDS[world])


def _edited(world: tuple[dict, ...], kind: str, name: str, edit: Callable[[dict], None]) -> tuple[dict, ...]:
    edited = []
    for raw in world:
        obj = thaw(raw)
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            edit(obj)
            obj["metadata"]["generation"] += 1
        edited.append(obj)
    return tuple(edited)


def _declared(result: Plan) -> dict[str, object]:
    return {o.identity: o for o in result.objects}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_an_invalid_edit_keeps_every_object_that_runs(case):
    world, kind, name, edit, phase = EDITS[case]
    before, applied = _converged(world)
    after = plan_of(*_edited(applied, kind, name, edit), now=LATER)
    missing = sorted(set(_declared(before)) - set(_declared(after)))
    assert missing == [], f"dropped by an invalid {kind}/{name}: {missing}"
    assert status_of(after, kind, name)["phase"] == phase


@pytest.mark.parametrize("case", sorted(EDITS))
def test_an_invalid_edit_leaves_every_kustomization_running_unsuspended_from_its_source(case):
    world, kind, name, edit, _ = EDITS[case]
    before, applied = _converged(world)
    after = plan_of(*_edited(applied, kind, name, edit), now=LATER)
    declared = _declared(after)
    for identity, obj in _declared(before).items():
        if obj.kind != "Kustomization":
            continue
        spec = declared[identity].body["spec"]
        assert spec["suspend"] is False, identity
        assert dict(spec["sourceRef"]) == dict(obj.body["spec"]["sourceRef"]), identity


@pytest.mark.parametrize(
    "case",
    [
        "module-activation-enabled",
        "only-requester-external-model",
        "only-requester-instance",
        "only-requester-cpu-model",
    ],
)
def test_the_modules_an_invalid_object_requested_stay_requested_and_ready(case):
    world, kind, name, edit, _ = EDITS[case]
    before, applied = _converged(world)
    after = plan_of(*_edited(applied, kind, name, edit), now=LATER)
    for module in before.modules.modules:
        if module.phase == "Ready" and module.activation != name:
            assert after.modules.outcome(module.name).phase == "Ready", module.name


def test_an_invalid_litellm_activation_keeps_the_model_catalog_that_depends_on_it():
    before, applied = _converged("appliance")
    after = plan_of(*_edited(applied, "ModuleActivation", "litellm", _set("enabled", "x")), now=LATER)
    names = {k.name for k in after.modules.kustomizations}
    assert {"app-litellm", "app-model-catalog"} <= names
    assert after.modules.outcome("model-catalog").phase == "Ready"
    status = status_of(after, "ModuleActivation", "litellm")
    assert (status["reason"], status["module"]) == ("InvalidSpec", "litellm")
    assert "spec.enabled" in status["message"]


def test_an_instance_with_invalid_values_keeps_the_operator_its_release_routes_policy_and_grant():
    before, applied = _converged("one-instance")
    after = plan_of(*_edited(applied, "AppInstance", "openclaw-default", _set("values", "x")), now=LATER)
    assert "operator-openclaw" in {k.name for k in after.modules.kustomizations}
    kinds = sorted(o.kind for outcome in after.instances.outcomes for o in outcome.objects)
    assert kinds == sorted(o.kind for outcome in before.instances.outcomes for o in outcome.objects)
    assert {"HelmRelease", "HTTPRoute", "SecurityPolicy", "ReferenceGrant"} <= set(kinds)
    status = status_of(after, "AppInstance", "openclaw-default")
    assert (status["phase"], status["reason"]) == ("Failed", "InvalidSpec")
    assert status["requiredModules"] == ["litellm", "model-catalog", "openclaw-operator"]


def test_an_invalid_object_keeps_reporting_the_modules_it_requested_run_after_run():
    _, applied = _converged("one-instance")
    edited = _edited(applied, "AppInstance", "openclaw-default", _set("values", "x"))
    first = plan_of(*edited, now=LATER)
    for update in first.statuses:
        for obj in edited:
            if (obj["kind"], obj["metadata"]["name"]) == (update.kind, update.name):
                obj["status"] = thaw(update.status)
    second = plan_of(*edited, now=LATER)
    assert second.statuses == first.statuses
    assert second.objects == first.objects


def test_without_its_own_record_an_invalid_instance_keeps_what_the_appliance_status_names_it_requester_of():
    _, applied = _converged("one-instance")
    edited = _edited(applied, "AppInstance", "openclaw-default", _set("values", "x"))
    for obj in edited:
        if obj["kind"] == "AppInstance":
            obj["status"].pop("requiredModules", None)
    after = plan_of(*edited, now=LATER)
    assert "operator-openclaw" in {k.name for k in after.modules.kustomizations}


def test_an_object_created_invalid_requests_nothing():
    result = plan_of(appliance(), _invalid_instance())
    assert result.modules.kustomizations == ()


def _invalid_instance() -> dict:
    obj = instance("openclaw-default", "openclaw")
    obj["spec"]["values"] = "x"
    return obj


def test_an_invalid_cpu_model_keeps_its_runtime_profile():
    before, applied = _converged("one-cpu-model")
    after = plan_of(*_edited(applied, "ModelActivation", "qwen2505bcpu", _set("local", "x")), now=LATER)
    assert after.models.cpu_profiles == before.models.cpu_profiles != ()


def test_an_invalid_external_model_stays_listed_for_the_model_catalog():
    before, applied = _converged("one-external-model")
    after = plan_of(*_edited(applied, "ModelActivation", "gpt", _set("external.modelType", "x")), now=LATER)
    listed = json.loads(after.models.external_models.body["data"]["models.json"])
    assert listed == json.loads(before.models.external_models.body["data"]["models.json"])


def test_an_invalid_appliance_source_keeps_the_source_every_kustomization_reads():
    _, applied = _converged("appliance")
    after = plan_of(*_edited(applied, "Appliance", "local", _set("source", {"kind": "Bucket"})), now=LATER)
    for kustomization in after.modules.kustomizations:
        assert dict(kustomization.body["spec"]["sourceRef"]) == PUBLIC_SOURCE, kustomization.name
    for outcome in after.instances.outcomes:
        for obj in outcome.objects:
            if obj.kind == "HelmRelease":
                assert dict(obj.body["spec"]["chart"]["spec"]["sourceRef"]) == PUBLIC_SOURCE


def test_an_invalid_activation_of_an_auto_enabled_module_keeps_its_kustomization():
    _, applied = _converged("one-instance")
    broken = activation("openclaw-operator")
    broken["spec"]["enabled"] = "x"
    after = plan_of(*applied, broken, now=LATER)
    assert "operator-openclaw" in {k.name for k in after.modules.kustomizations}
    assert status_of(after, "ModuleActivation", "openclaw-operator")["phase"] == "Failed"


def test_an_invalid_edit_of_an_activation_named_past_63_characters_keeps_its_module():
    """With `module` unreadable and no status of its own to recall it, the rejected activation
    finds the module it stood for by the Kustomization it requested: its label holds the fitted
    name, the annotation of the same key the whole one."""
    name = "team-" + "a" * 70
    before, applied = converge((appliance(), activation(name, "litellm")))
    assert "app-litellm" in {k.name for k in before.modules.kustomizations}

    def unreadable_module_and_no_status(obj: dict) -> None:
        obj["spec"]["module"] = 5
        obj.pop("status", None)

    after = plan_of(*_edited(applied, "ModuleActivation", name, unreadable_module_and_no_status), now=LATER)

    assert "app-litellm" in {k.name for k in after.modules.kustomizations}
    assert status_of(after, "ModuleActivation", name)["reason"] == "InvalidSpec"
